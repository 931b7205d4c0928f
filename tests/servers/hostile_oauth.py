"""notebooks/servers/protected.py (an OAuth-protected MCP server that is its own authorization server)
with one of its OAuth endpoints answering as a broken or hostile peer does:

    python tests/servers/hostile_oauth.py --at token --answer html-400

`--at`: token, register, authorize (the redirect back to the client carries the error), the
authorization server's metadata or the protected resource's. `--answer`: one of ANSWERS. The rest of
the flow is the real one. Like protected.py, it writes `hostile OAuth server at URL` to stderr once
it listens, and stops with status 0 on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks" / "servers"))
from protected import HOST, build  # noqa: E402 - the real server, from its own file

FAKE_TRACEBACK = "Traceback (most recent call last):\n  File \"/srv/auth/views.py\", line 12, in token\nKeyError: 'user'"
PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>400 Bad Request</title></head>\n<body>\n<h1>Bad Request</h1>\n"
    f"<pre>\n{FAKE_TRACEBACK}\n</pre>\n</body>\n</html>\n"
)
LOGIN = (
    "<!DOCTYPE html>\n<html><head><title>Sign in to Example</title></head>\n"
    '<body><form method="post"><input name="user"><input name="password" type="password"></form></body></html>\n'
)
# status, content type, body
ANSWERS = {
    "html-400": (400, "text/html", PAGE),
    "login-200": (200, "text/html", LOGIN),
    "huge-400": (400, "text/plain", "E" * (8 * 1024 * 1024)),
    "huge-line-400": (
        400,
        "application/json",
        json.dumps({"error": "invalid_grant", "error_description": "x" * (8 * 1024 * 1024)}),
    ),
    "newlines-400": (
        400,
        "application/json",
        json.dumps({"error": "invalid_grant", "error_description": "the code expired\n" + FAKE_TRACEBACK}),
    ),
    "controls-400": (
        400,
        "application/json",
        json.dumps({"error": "invalid_client", "error_description": "\x1b[2J\x1b[31mred\x1b[0m \u202eevil\x07 \x00"}),
    ),
    "wrong-shape-200": (200, "application/json", json.dumps({"access_token": ["not", "text"], "token_type": 7})),
}
PATHS = {
    "token": "/token",
    "register": "/register",
    "authorize": "/authorize",
    "metadata": "/.well-known/oauth-authorization-server",
    "resource": "/.well-known/oauth-protected-resource/mcp",
}


def hostile(app, path: str, answer: str):
    """`app`, but `path` answers `answer` (at /authorize: a redirect back with the error in it)."""
    status, kind, body = ANSWERS[answer]

    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or scope["path"] != path:
            return await app(scope, receive, send)
        more = True
        while more:  # the request's body, read and dropped
            message = await receive()
            more = message.get("more_body", False)
        if path == "/authorize":
            asked = {key: values[0] for key, values in parse_qs(scope["query_string"].decode()).items()}
            description = json.loads(body).get("error_description", body) if kind == "application/json" else body
            back = urlencode({"error": "access_denied", "error_description": description, "state": asked.get("state", "")})
            headers = [(b"location", f"{asked['redirect_uri']}?{back}".encode()), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 302, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        data = body.encode()
        headers = [(b"content-type", kind.encode()), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return wrapped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", choices=sorted(PATHS), required=True)
    parser.add_argument("--answer", choices=sorted(ANSWERS), required=True)
    args = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((HOST, 0))
    base_url = f"http://{HOST}:{listener.getsockname()[1]}"
    server = build(base_url, scopes=["notes:read"], token_seconds=3600)
    app = hostile(server.streamable_http_app(host=HOST), PATHS[args.at], args.answer)
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2))

    def stop(signum: int, frame: object) -> None:
        web.should_exit = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    async def serve() -> None:
        serving = asyncio.create_task(web.serve(sockets=[listener]))
        while not web.started and not serving.done():
            await asyncio.sleep(0.01)
        if web.started:
            print(f"hostile OAuth server at {base_url}/mcp", file=sys.stderr, flush=True)
        await serving

    asyncio.run(serve())
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
