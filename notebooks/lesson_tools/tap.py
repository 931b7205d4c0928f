"""The JSON-RPC messages between the SDK's client and a server in the same process, noted as they pass (the primer).

    wire = Wire()                      # every message, in order: (direction, message as JSON)
    async with Client(wire.tap(shop)) as client:
        ...
    wire.show()                        # one line per message: direction, id, method or kind of answer

`Client(server)` in its default mode hands the server Python objects, with no JSON-RPC in between.
`wire.tap(server)` connects through the SDK's in-memory transport instead (`InMemoryTransport`, from
the SDK's internal module `mcp.client._memory`), which carries every message as a JSON-RPC message,
as the stdio and HTTP transports do, and notes each one as the JSON those transports would send for
it (they write each message with `by_alias=True, exclude_unset=True`, as `Wire` does).
"""

from __future__ import annotations

import json

from mcp.client._memory import InMemoryTransport


class Wire(list):
    """(direction, message) for every JSON-RPC message of the connections made with `tap`, in order."""

    def tap(self, server) -> _Tapped:
        """A transport to `server` for `Client(...)`, both of whose directions note their messages here."""
        return _Tapped(server, self)

    def show(self) -> None:
        """One line per message: its direction, its id, and its method or what kind of answer it is."""
        for direction, message in self:
            kind = message.get("method") or ("result" if "result" in message else "error")
            print(f"{direction}  id={message.get('id', '-')}  {kind}")


class _Tap:
    """One direction of a transport: passes every message on, and notes it as JSON."""

    def __init__(self, stream, direction: str, wire: Wire) -> None:
        self.stream, self.direction, self.wire = stream, direction, wire

    def note(self, item):
        if hasattr(item, "message"):  # a SessionMessage (a transport may also pass an exception)
            text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
            self.wire.append((self.direction, json.loads(text)))
        return item

    async def send(self, item):
        await self.stream.send(self.note(item))

    async def receive(self):
        return self.note(await self.stream.receive())

    def __aiter__(self):
        return self

    async def __anext__(self):
        return self.note(await self.stream.__anext__())

    async def aclose(self):
        await self.stream.aclose()

    async def __aenter__(self):
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self.stream.__aexit__(*exc)

    def __getattr__(self, name):
        return getattr(self.stream, name)


class _Tapped:
    """The SDK's in-memory transport to `server`, with both directions tapped."""

    def __init__(self, server, wire: Wire) -> None:
        self.transport, self.wire = InMemoryTransport(server), wire

    async def __aenter__(self):
        read, write = await self.transport.__aenter__()
        return _Tap(read, "server → client", self.wire), _Tap(write, "client → server", self.wire)

    async def __aexit__(self, *exc):
        return await self.transport.__aexit__(*exc)
