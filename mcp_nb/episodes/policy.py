"""What the host tells the model after each tool call: a choice, made explicit, and recorded.

The guides read the error model from the model's side: it reads a result, and a tool error's text
(the `isError` content a `ToolError` carries); of a protocol error or a timeout it is told nothing,
those being the host's to handle. A chat API wants an answer for every tool call the model asked
for, though, so a real host always says something, and what it says is its policy:

| after | default (the guides' reading) | a host may instead |
|---|---|---|
| a result | its text (the structured content as JSON when there is no text) | - |
| a tool error | `content`: its text, as the server wrote it | `generic` |
| a protocol error | `generic`: that the call failed, no more | `message`: its code and message; `stop`: end the episode |
| a timeout | `generic` | `message`: that it timed out, and after how long; `stop` |
| a tool that is not offered | `call`: sent like any other call, its answer told as above | `refuse`: not sent; the model is told the tools offered |
| arguments that are not a JSON object | `refuse`: not sent; the model is told why they could not be read | `generic`; `stop` |

Each step of an episode records the text the model was told, whether it was marked as an error
(Anthropic's `tool_result.is_error`; chat completions have no place for it) and the rule that
chose it (`protocol_error: generic`), so an episode says exactly what the model saw.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from mcp_nb.mistakes import BadType, BadValue, one_line

GENERIC = "The tool call failed; there is no result."
CHOICES = {
    "tool_error": ("content", "generic"),
    "protocol_error": ("generic", "message", "stop"),
    "timeout": ("generic", "message", "stop"),
    "unknown_tool": ("call", "refuse"),
    "bad_arguments": ("refuse", "generic", "stop"),
}
PRESETS = ("guides", "transparent")


class Told(NamedTuple):
    """What the model is told of one tool call: the text, whether as an error, and the rule that chose it."""

    text: str
    is_error: bool
    rule: str


@dataclass(frozen=True)
class HostPolicy:
    """What the host tells the model after each kind of call (see the module's table). `generic`
    is the text of every `generic` answer."""

    tool_error: str = "content"
    protocol_error: str = "generic"
    timeout: str = "generic"
    unknown_tool: str = "call"
    bad_arguments: str = "refuse"
    generic: str = GENERIC

    def __post_init__(self) -> None:
        for situation, choices in CHOICES.items():
            chosen = getattr(self, situation)
            if chosen not in choices:
                raise BadValue(f"the host's policy for {situation} is one of {', '.join(map(repr, choices))}, not {chosen!r}")
        if not isinstance(self.generic, str) or not self.generic.strip():
            raise BadValue("the generic answer is a text the model can read")

    @classmethod
    def guides(cls) -> HostPolicy:
        """The guides' reading (the default): the model sees tool errors' text, nothing of the rest."""
        return cls()

    @classmethod
    def transparent(cls) -> HostPolicy:
        """A host that tells all it knows: protocol errors' and timeouts' messages, the tools offered."""
        return cls(protocol_error="message", timeout="message", unknown_tool="refuse")

    @classmethod
    def of(cls, value: Any) -> HostPolicy:
        """`policy=` as given: None (the guides'), a HostPolicy, a preset's name, or a dict of choices."""
        if value is None:
            return cls()
        if isinstance(value, HostPolicy):
            return value
        if isinstance(value, str):
            if value not in PRESETS:
                raise BadValue(f"a host policy's preset is one of {', '.join(map(repr, PRESETS))}, not {value!r}")
            return getattr(cls, value)()
        if isinstance(value, dict):
            unknown = sorted(set(value) - {*CHOICES, "generic"})
            if unknown:
                raise BadValue(
                    f"a host policy chooses for {', '.join(CHOICES)} (and the generic text); not {', '.join(map(str, unknown))}"
                )
            return cls(**value)
        raise BadType(f"policy= is a mcp_nb.HostPolicy, 'guides', 'transparent' or a dict of choices, not {type(value).__name__}")

    def as_dict(self) -> dict[str, str]:
        """The choices as plain values: one dict per policy, shared by the episodes it rules (never changed)."""
        kept = self.__dict__.get("_as_dict")
        if kept is None:
            kept = asdict(self)
            object.__setattr__(self, "_as_dict", kept)
        return kept

    # -- what the model is told --------------------------------------------------------------------

    def after(self, outcome: Any) -> Told | None:
        """What the model is told of a call that was made (None: the host ends the episode instead)."""
        kind = outcome.outcome
        if kind == "result":
            return Told(_result_text(outcome), False, "result")
        if kind == "tool_error":
            if self.tool_error == "content":
                return Told(outcome.content or "", True, "tool_error: content")
            return Told(self.generic, True, "tool_error: generic")
        chosen = self.protocol_error if kind == "protocol_error" else self.timeout
        if chosen == "stop":
            return None
        if chosen == "generic":
            return Told(self.generic, True, f"{kind}: generic")
        if kind == "timeout":
            return Told(f"The tool did not answer within {outcome.timeout_s:g} s; there is no result.", True, "timeout: message")
        code = f"{outcome.code} " if outcome.code is not None else ""
        return Told(f"The tool call failed: {code}{one_line(outcome.message or '', 500)}", True, "protocol_error: message")

    def not_offered(self, name: str, offered: list[str]) -> Told | None:
        """What the model is told of a tool that was not offered, when it is not sent (None: it is sent)."""
        if self.unknown_tool == "call":
            return None
        tools = ", ".join(offered) if offered else "none"
        return Told(f"There is no tool named {one_line(name, 80)!r}; the tools are: {tools}.", True, "unknown_tool: refuse")

    def unreadable(self, why: str) -> Told | None:
        """What the model is told of arguments that are not a JSON object (None: the episode ends)."""
        if self.bad_arguments == "stop":
            return None
        if self.bad_arguments == "generic":
            return Told(self.generic, True, "bad_arguments: generic")
        return Told(f"The arguments could not be read, so the tool was not called: {why}.", True, "bad_arguments: refuse")


_texts: dict[int, tuple[dict, str]] = {}


def policy_text(policy: dict[str, str]) -> str:
    """A policy's choices as JSON text (keys sorted), made once per policy dict (`as_dict` shares one)."""
    kept = _texts.get(id(policy))
    if kept is None or kept[0] is not policy:
        kept = _texts[id(policy)] = (policy, json.dumps(policy, sort_keys=True))
        while len(_texts) > 64:  # a few policies live at once; the oldest are forgotten
            del _texts[next(iter(_texts))]
    return kept[1]


def _result_text(outcome: Any) -> str:
    if outcome.content:
        return outcome.content
    if outcome.structured_content is not None:
        return json.dumps(outcome.structured_content, ensure_ascii=False, default=str)
    return outcome.content or ""
