"""The recent messages of each SSE stream, so a client whose stream dropped can resume it.

Streamable HTTP lets a server end a response stream early and the client reconnect
with `Last-Event-ID` (the SDK's `EventStore` interface; the SDK ships no store). A
notebook is one process, so the store is memory, bounded: the oldest events are
forgotten first, and a client that comes back after them gets nothing replayed (it
then re-sends, as after any lost stream).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

KEPT_EVENTS = 2048  # across every stream of one served kernel


class RecentEvents(EventStore):
    """The last `kept` events of every stream, in the order they were sent."""

    def __init__(self, kept: int = KEPT_EVENTS) -> None:
        self._kept = kept
        self._ids = itertools.count(1)
        self._events: OrderedDict[int, tuple[str, object]] = OrderedDict()  # event id -> (stream id, message)

    async def store_event(self, stream_id: str, message) -> str:
        event_id = next(self._ids)
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self._kept:
            self._events.popitem(last=False)
        return str(event_id)

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        try:
            after = int(last_event_id)
        except ValueError:
            return None
        known = self._events.get(after)
        if known is None:
            return None
        stream_id = known[0]
        for event_id, (stream, message) in list(self._events.items()):
            # A stream's priming event holds no message: it is only a place to resume from.
            if event_id > after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, str(event_id)))
        return stream_id
