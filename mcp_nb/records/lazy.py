"""The frame's nested columns (arguments, results, logs...) as JSON text, decoded when a value is looked at.

A history file holds these values as JSON text already. Decoding ten million of them into
dicts up front was most of `to_frame()`'s time and of its memory (a dict of arguments and one
of result, 184 bytes each, for every call), while most uses of a big frame (counts, durations,
outcomes per tool) never look at them. So a nested column of the frame is a `JsonArray`: the
texts as Arrow keeps them (plain, or dictionary-encoded for a column whose rows share a few
values), and the rows still in the kernel's memory held as the Python objects they are, not
encoded (their values are what the history recorded, tuples and all, not a JSON round trip of
them). A row's value is decoded when it is looked at (`iloc`, iteration, `tolist()`, `map`,
`astype(object)`, equality, display), and is the same value the in-memory history gives.

`pandas` is imported with this module: it is imported only where a frame is built.
"""

from __future__ import annotations

import builtins
import json
import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.extensions import ExtensionArray, ExtensionDtype, register_extension_dtype

from mcp_nb.records.json_text import ENCODE, events_of, logs_of, plain
from mcp_nb.records.surrogates import escape_surrogates

# What a decoded text becomes, by the kind of column: the values the in-memory history holds.
WRAPS: dict[str, Callable[[Any], Any] | None] = {"json": None, "tuple": tuple, "logs": logs_of, "events": events_of}


# Registered, as pandas' extension types are, so that its name reads back: a frame written with
# `to_parquet` or `to_feather` names `json` in its metadata, and pandas finds the type by that name
# when the file is read (then `__from_arrow__` makes the column from the JSON text written).
@register_extension_dtype
class JsonDtype(ExtensionDtype):
    """A nested column kept as JSON text until looked at; `kind` says what a value is made into
    (`json`: as decoded; `tuple`: a list decoded as a tuple; `logs`: the server's log records)."""

    type = object
    kind = "O"
    na_value = None
    _metadata = ("wrap",)

    def __init__(self, wrap: str = "json") -> None:
        if wrap not in WRAPS:
            raise ValueError(f"no JSON column of kind {wrap!r}")
        self.wrap = wrap

    @property
    def name(self) -> str:  # type: ignore[override]  # pandas-stubs: a class attribute; pandas reads it off the dtype, as a property
        return "json" if self.wrap == "json" else f"json[{self.wrap}]"

    @classmethod
    def construct_array_type(cls) -> builtins.type[JsonArray]:
        return JsonArray

    @classmethod
    def construct_from_string(cls, string: str) -> JsonDtype:
        for wrap in WRAPS:
            if string == cls(wrap).name:
                return cls(wrap)
        raise TypeError(f"Cannot construct a 'JsonDtype' from '{string}'")

    def __from_arrow__(self, array: pa.Array | pa.ChunkedArray) -> JsonArray:
        return JsonArray.from_texts(array, self.wrap)

    @property
    def _is_numeric(self) -> bool:
        return False

    @property
    def _is_boolean(self) -> bool:
        return False


def _objects(values: list[Any]) -> np.ndarray:
    # not `array[:] = values`: numpy would read a list of equal-length lists as a 2-D array
    return np.fromiter(values, dtype=object, count=len(values))


def _is_null_text(texts: pa.Array) -> bool:
    nulls: int = texts.null_count
    return nulls == len(texts)


class JsonArray(ExtensionArray):
    """Rows of a nested column: `texts` (Arrow string or dictionary chunks, null where a row is None
    or held), and the rows `rows` (sorted positions) held as the Python objects `values`. The texts
    stay in the chunks they were read in: making them one array would copy every text once more."""

    def __init__(self, texts: pa.ChunkedArray, rows: np.ndarray, values: np.ndarray, dtype: JsonDtype) -> None:
        self._texts = texts
        self._rows = rows
        self._values = values
        self._dtype = dtype

    # -- made from ------------------------------------------------------------------------------

    @classmethod
    def from_texts(cls, texts: pa.Array | pa.ChunkedArray, wrap: str = "json") -> JsonArray:
        """A column read from a history file, in the chunks it was read in."""
        if not isinstance(texts, pa.ChunkedArray):
            texts = pa.chunked_array([texts])
        return cls(texts, np.empty(0, dtype=np.int64), np.empty(0, dtype=object), JsonDtype(wrap))

    @classmethod
    def held(cls, values: Iterable[Any], wrap: str = "json") -> JsonArray:
        """A column of Python objects (the rows in memory), kept as they are."""
        if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
            objects = values
        else:
            objects = _objects(list(values))
        n = len(objects)
        return cls(pa.chunked_array([pa.nulls(n, pa.string())]), np.arange(n, dtype=np.int64), objects, JsonDtype(wrap))

    @classmethod
    def _from_sequence(cls, scalars: Iterable[Any], *, dtype: object = None, copy: bool = False) -> JsonArray:
        wrap = dtype.wrap if isinstance(dtype, JsonDtype) else "json"
        if isinstance(scalars, JsonArray):
            return scalars.copy() if copy else scalars
        return cls.held(scalars, wrap)

    @classmethod
    def _from_factorized(cls, values: np.ndarray, original: JsonArray) -> JsonArray:
        return cls.held(values, original.dtype.wrap)

    @classmethod
    def _concat_same_type(cls, to_concat: Sequence[JsonArray]) -> JsonArray:
        arrays = list(to_concat)
        if len(arrays) == 1:
            return arrays[0]
        dtype = arrays[0].dtype
        types = {a._texts.type for a in arrays if not _is_null_text(a._texts)}
        if len(types) > 1:  # plain text beside a dictionary: all plain
            target = pa.string()
        else:
            target = types.pop() if types else arrays[0]._texts.type
        chunks = []
        for a in arrays:
            if _is_null_text(a._texts):  # rows held (or all None): nulls of the type the others have
                chunks.append(pa.nulls(len(a), target))
            elif a._texts.type != target:
                chunks.extend(a._texts.cast(pa.string()).chunks)
            else:
                chunks.extend(a._texts.chunks)
        joined = pa.chunked_array(chunks, type=target)
        offsets = np.cumsum([0] + [len(a) for a in arrays[:-1]])
        rows = np.concatenate([a._rows + offset for a, offset in zip(arrays, offsets)])
        values = np.concatenate([a._values for a in arrays]) if rows.size else np.empty(0, dtype=object)
        return cls(joined, rows.astype(np.int64, copy=False), values, dtype)

    # -- the values -----------------------------------------------------------------------------

    @property
    def dtype(self) -> JsonDtype:
        return self._dtype

    def __len__(self) -> int:
        return len(self._texts)

    @property
    def nbytes(self) -> int:
        texts: int = self._texts.nbytes
        return texts + self._rows.nbytes + self._values.nbytes

    def _decode(self, text: str) -> Any:
        value = json.loads(text)
        wrap = WRAPS[self._dtype.wrap]
        return value if wrap is None or value is None else wrap(value)

    def _decoded_many(self, texts: pa.Array) -> list[Any]:
        """Many texts (no nulls) decoded in one `json.loads`, joined by Arrow: no Python string per text."""
        if not len(texts):
            return []
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(texts)], type=pa.int32()), texts), ",")
        values: list[Any] = json.loads("[" + joined[0].as_py() + "]")
        wrap = WRAPS[self._dtype.wrap]
        return values if wrap is None else [None if v is None else wrap(v) for v in values]

    def _text_value(self, i: int) -> Any:
        text = self._texts[i].as_py()  # a dictionary's entry, for a dictionary column
        return None if text is None else self._decode(text)

    def _held_at(self, i: int) -> tuple[bool, Any]:
        rows = self._rows
        if not rows.size:
            return False, None
        at = int(np.searchsorted(rows, i))
        if at < rows.size and rows[at] == i:
            return True, self._values[at]
        return False, None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (numbers.Integral, np.integer)):
            n = len(self)
            i = int(key)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {key} is out of bounds for a column of {n} rows")
            found, value = self._held_at(i)
            return value if found else self._text_value(i)
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step == 1:
                stop = max(start, stop)
                lo, hi = np.searchsorted(self._rows, [start, stop])
                return JsonArray(
                    self._texts.slice(start, stop - start), self._rows[lo:hi] - start, self._values[lo:hi], self._dtype
                )
            return self.take(np.arange(start, stop, step))
        key = pd.api.indexers.check_array_indexer(self, key)
        if key.dtype == bool:
            key = np.flatnonzero(key)
        return self.take(key)

    def materialize(self) -> np.ndarray:
        """Every row's value, as an object array (decoded once per distinct text of a dictionary column)."""
        n = len(self)
        out = np.empty(n, dtype=object)
        at = 0
        for chunk in self._texts.chunks:
            size = len(chunk)
            if chunk.null_count == size:
                pass
            elif pa.types.is_dictionary(chunk.type):  # each distinct text decoded once
                distinct = _objects([*self._decoded_many(chunk.dictionary), None])
                indices = chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False)
                np.take(distinct, indices, out=out[at : at + size], mode="wrap")  # -1 picks the None at the end
            elif chunk.null_count == 0:
                out[at : at + size] = _objects(self._decoded_many(chunk))
            else:
                present = chunk.is_valid()
                part = out[at : at + size]
                part[present.to_numpy(zero_copy_only=False)] = _objects(self._decoded_many(chunk.filter(present)))
            at += size
        if self._rows.size:
            out[self._rows] = self._values
        return out

    def __iter__(self) -> Iterator[Any]:
        return iter(self.materialize())

    def tolist(self) -> list[Any]:
        values: list[Any] = self.materialize().tolist()
        return values

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        values = self.materialize()
        return values if dtype is None or np.dtype(dtype) == object else values.astype(dtype)

    def astype(self, dtype: Any, copy: bool = True) -> Any:  # pandas' overloads: a JsonArray, an array of objects, or pandas' own
        dtype = pd.api.types.pandas_dtype(dtype)
        if isinstance(dtype, JsonDtype):
            if dtype == self._dtype:
                return self.copy() if copy else self
            return JsonArray.held(self.materialize(), dtype.wrap)
        if isinstance(dtype, np.dtype) and dtype.kind == "O":
            return self.materialize()
        return super().astype(dtype, copy=copy)

    def isna(self) -> np.ndarray:
        missing: np.ndarray = self._texts.is_null().to_numpy(zero_copy_only=False).copy()
        if self._rows.size:
            missing[self._rows] = np.fromiter((v is None for v in self._values), dtype=bool, count=len(self._values))
        return missing

    def __eq__(self, other: object) -> np.ndarray:  # type: ignore[override]  # row by row, as numpy's and pandas' arrays
        # as an object column compares: row by row with a sequence of the same length, else with the one value
        mine = self.materialize()
        if isinstance(other, (pd.Series, pd.Index, pd.DataFrame)):
            return NotImplemented
        if isinstance(other, (JsonArray, np.ndarray, list, ExtensionArray)):
            theirs = other.materialize() if isinstance(other, JsonArray) else np.asarray(other, dtype=object)
            if len(theirs) != len(mine):
                raise ValueError("Lengths must match to compare")
            return np.fromiter((a == b for a, b in zip(mine, theirs)), dtype=bool, count=len(mine))
        return np.fromiter((a == other for a in mine), dtype=bool, count=len(mine))

    def __ne__(self, other: object) -> np.ndarray:  # type: ignore[override]  # row by row, as numpy's and pandas' arrays
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else ~equal

    # -- what pandas asks of an array -----------------------------------------------------------

    def take(self, indices: Any, allow_fill: bool = False, fill_value: Any = None) -> JsonArray:
        indices = np.asarray(indices, dtype=np.int64)
        n = len(self)
        if allow_fill:
            if (indices < -1).any():
                raise ValueError("indices below -1 with allow_fill")
            fill = indices == -1
        else:
            indices = np.where(indices < 0, indices + n, indices)
            fill = np.zeros(len(indices), dtype=bool)
        rest = indices[~fill]
        if rest.size and ((rest >= n) | (rest < 0)).any():
            raise IndexError("indices out of bounds for the column")
        taken = self._texts.take(pa.array(indices, mask=fill))
        rows, values = self._rows, self._values
        if rows.size and len(indices):
            at = np.searchsorted(rows, indices)
            safe = np.minimum(at, rows.size - 1)
            hit = (rows[safe] == indices) & ~fill
            new_rows = np.flatnonzero(hit)
            new_values = values[safe[hit]]
        else:
            new_rows, new_values = np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
        if fill_value is not None and fill.any():  # a value to fill with, held like the others
            filled = np.flatnonzero(fill)
            order = np.argsort(np.concatenate([new_rows, filled]), kind="stable")
            extra = _objects([fill_value] * len(filled))
            new_rows = np.concatenate([new_rows, filled])[order]
            new_values = np.concatenate([new_values, extra])[order]
        return JsonArray(taken, new_rows.astype(np.int64, copy=False), new_values, self._dtype)

    def copy(self) -> JsonArray:
        return JsonArray(self._texts, self._rows.copy(), self._values.copy(), self._dtype)

    def __setitem__(self, key: Any, value: Any) -> None:
        # a value set is held as the object it is; its row's text no longer counts
        key = pd.api.indexers.check_array_indexer(self, key)
        if isinstance(key, (numbers.Integral, np.integer)):
            where, new = np.array([int(key) % len(self)]), [value]
        else:
            where = np.arange(len(self))[key]
            if pd.api.types.is_list_like(value) and not isinstance(value, (dict, tuple)) and len(value) == len(where):
                new = list(value)
            else:
                new = [value] * len(where)
        held = dict(zip(self._rows.tolist(), self._values))
        held.update(zip(where.tolist(), new))
        rows = np.array(sorted(held), dtype=np.int64)
        values = _objects([held[row] for row in rows.tolist()])
        mask = np.zeros(len(self), dtype=bool)
        mask[where] = True
        texts = self._texts.combine_chunks()
        self._texts = pa.chunked_array([pc.if_else(pa.array(mask), pa.nulls(len(self), texts.type), texts)])
        self._rows, self._values = rows, values

    def map(self, mapper: Any, na_action: Literal["ignore"] | None = None) -> Any:
        # as an object column maps (an empty one included): the values decoded, then pandas' own map
        return pd.Series(self.materialize(), dtype=object, copy=False).map(mapper, na_action=na_action).array

    def _values_for_factorize(self) -> tuple[np.ndarray, None]:
        return self.materialize(), None

    def lengths(self) -> np.ndarray:
        """`len()` of every row's value (0 for None), a dictionary column's without decoding each row."""
        texts = self._texts
        if pa.types.is_dictionary(texts.type) and not self._rows.size:
            out: list[np.ndarray] = []
            for chunk in texts.chunks:
                distinct = np.array(
                    [0 if v is None else len(v) for v in self._decoded_many(chunk.dictionary)] + [0], dtype=np.int64
                )
                out.append(distinct[chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False)])
            return np.concatenate(out) if out else np.empty(0, dtype=np.int64)
        return np.fromiter((0 if v is None else len(v) for v in self.materialize()), dtype=np.int64, count=len(self))

    def texts(self) -> pa.Array:
        """Every row as JSON text (null for None): the rows held encoded as the history file writes them."""
        texts = self._texts.cast(pa.string()).combine_chunks()
        if not self._rows.size:
            return texts
        out = _objects(texts.to_pylist())
        out[self._rows] = _objects([None if v is None else escape_surrogates(ENCODE(plain(v))) for v in self._values])
        return pa.array(out.tolist(), type=pa.string())

    def __arrow_array__(self, type: Any = None) -> pa.Array:
        # written (to_parquet, to_feather) as the JSON text a history file holds
        return self.texts()

    def _formatter(self, boxed: bool = False) -> Callable[[Any], str]:
        return repr if not boxed else str

    def __repr__(self) -> str:
        shown = self[:5].tolist() if len(self) > 5 else self.tolist()
        return f"<JsonArray>\n{shown}{' ...' if len(self) > 5 else ''}\nLength: {len(self)}, dtype: {self.dtype}"
