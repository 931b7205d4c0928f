"""What came back from the workers of one cluster sweep, merged into the kernel's one history.

A worker's records arrive twice (ahead, in events, as its calls end; then all of them in
the partition's result) and each is merged once: into the history in the order they
arrive, with the `call_id` of the Call prepared in the kernel (the attempts of a call share
it) and the `worker` that made it. A call a tool made on a worker is numbered here, as every
call this kernel records is. A grid call the kernel never heard of, because its worker died
or its partition failed, is recorded here, by the kernel, as a call of its own.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

from mcp_nb.calling.call import CallRecord
from mcp_nb.records.outcome import Outcome


class Ledger:
    """The records of one cluster sweep: merged, and each grid position's latest."""

    def __init__(self, history: Any, calls: list[Any]) -> None:
        self.history = history
        self.calls = calls  # the grid's Calls, prepared in the kernel
        self.final: dict[int, Outcome] = {}  # grid position -> its latest recorded Outcome
        self.finished: set[int] = set()  # grid positions whose call ended on a worker
        self.runners: dict[int, str] = {}  # partition -> the worker that claimed it
        self.draws: dict[str, dict[str, int]] = {}  # worker -> the seeded fault draws made there
        self._merged: dict[int, set[int]] = collections.defaultdict(set)  # partition -> record indexes merged
        self._nested: dict[tuple[int, int], NestedCall] = {}  # (partition, worker's call id) -> its record here

    def outcomes(self) -> list[Outcome | None]:
        return [self.final.get(position) for position in range(len(self.calls))]

    def merge(self, k: int, address: str, records: list) -> None:
        """Partition k's records, (index, grid position or None for a nested call, Outcome), from `address`."""
        merged = self._merged[k]
        for index, position, outcome in records:
            if index in merged:
                continue
            merged.add(index)
            if position is None:
                nested = self._nested.get((k, outcome.call_id))
                if nested is None:
                    nested = self._nested[(k, outcome.call_id)] = NestedCall(outcome)
                outcome = nested.made_on(address, outcome)
            else:
                outcome = dataclasses.replace(outcome, call_id=self.calls[position].id, worker=address)
            self.history.record(outcome)
            if position is not None:
                latest = self.final.get(position)
                if latest is None or outcome.attempt >= latest.attempt:
                    self.final[position] = outcome

    def kernel_id(self, k: int, call_id: int) -> int | None:
        """The id this kernel gave a call that partition k's worker made and numbered `call_id`
        (None until its record was merged)."""
        nested = self._nested.get((k, call_id))
        return None if nested is None else nested.id

    def drew(self, address: str, seen: dict[str, int]) -> None:
        """A partition's count of seeded fault draws in its worker process so far (they only grow)."""
        draws = self.draws.setdefault(address, {})
        for digest, n in seen.items():
            draws[digest] = max(draws.get(digest, 0), n)

    def lose(self, k: int, positions: list[int], address: str | None, what: str, cause: str = "worker_lost") -> None:
        """Record the calls of partition k that never came back."""
        where = f"the dask worker {address}" if address else "a dask worker"
        message = (
            f"{where} {what} before it sent this call's record: whether the call ran there is unknown"
            if cause == "worker_lost"
            else f"{where}: {what}"
        )
        for position in positions:
            if position in self.finished:
                continue
            latest = self.final.get(position)
            unheard = Unheard(self.calls[position], latest.attempt + 1 if latest is not None else 1)
            outcome = unheard.lost(cause, message, address, {"worker": address, "partition": k})
            self.history.record(outcome)
            self.final[position] = outcome


class NestedCall(CallRecord):
    """A call a tool made on a worker, as this kernel records it: under an id of this kernel's
    (the worker's own ids would collide with the kernel's)."""

    __slots__ = ()

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.target, outcome.name, outcome.arguments, outcome.timeout_s)

    def made_on(self, address: str, outcome: Outcome) -> Outcome:
        return dataclasses.replace(outcome, call_id=self.id, worker=address)


class Unheard(CallRecord):
    """An attempt of a grid call whose record never came back from its worker."""

    __slots__ = ("_server",)

    def __init__(self, call: Any, attempt: int) -> None:
        # It stands for the grid call, whose attempts share its id.
        super().__init__(call.target, call.name, call.arguments, call.timeout, call_id=call.id)
        self.attempt = attempt
        self._server = call.server_name()

    def server_name(self) -> str:
        return self._server

    def lost(self, cause: str, message: str, address: str | None, data: dict[str, Any]) -> Outcome:
        outcome = self._outcome("protocol_error", cause, 0.0, message=message, data=data, observed=False)
        return dataclasses.replace(outcome, worker=address)
