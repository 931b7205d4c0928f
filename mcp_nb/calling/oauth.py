"""OAuth for a notebook: the SDK's authorization-code flow, with the person's step where
notebooks really run.

`mcp_nb.connect(name, url, auth=mcp_nb.OAuth())` authorizes with the SDK's own
`OAuthClientProvider` (discovery, dynamic registration or a client ID metadata document,
PKCE, scopes and step-up, refresh, all as the SDK does them). What a notebook adds is the
one step a person takes, approving in a browser, and where the tokens live:

- `callback="loopback"`: the kernel's machine has the browser. A listener on 127.0.0.1
  takes the redirect (it answers only a request whose `state` is the flow's waiting one; it
  lives as long as the connection, as a later step-up asks the person again), the link is
  opened and shown, and `connect` returns once the person has approved.
- `callback="paste"`: the kernel is remote (Binder, JupyterHub, a cloud notebook) and the
  browser's redirect cannot reach it. The link is shown; after approving, the browser lands
  on a page that does not load, and the person gives its address to
  `mcp_nb.complete_auth(url)` (or the panel's box). `connect` returns at once, the
  connection "authorizing" until then.
- `"auto"` (the default): paste where a remote notebook service says so in the environment
  (JupyterHub, Binder, Colab, a cloud workbench), loopback elsewhere.

With no person at all (CI), give `connect` one of the SDK's client-credentials providers
instead, or a token from the environment in `headers=`.

Tokens and the registered client are kept per server and per user in a file under the
user's configuration directory (mode 0600; `TokenFile`), never in the notebook, the history,
a case file or a log line; `OAuth(storage=...)` takes any of the SDK's `TokenStorage`s.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
import webbrowser
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcp_nb.mistakes import BadType, BadValue

log = logging.getLogger("mcp_nb")

CALLBACKS = ("auto", "loopback", "paste")
# The redirect a pasted flow registers: nothing listens there; the browser shows an error page
# whose address (with the code) the person copies back.
PASTE_REDIRECT = "http://127.0.0.1:8976/mcp_nb/callback"
# A remote notebook service, as its environment says (where a loopback redirect cannot land).
_REMOTE = ("JUPYTERHUB_API_URL", "BINDER_SERVICE_HOST", "BINDER_LAUNCH_HOST", "COLAB_RELEASE_TAG", "SAGEMAKER_APP_TYPE",
           "AWS_SAGEMAKER_JUPYTERSERVER_IMAGE", "VERTEX_PRODUCT", "DATABRICKS_RUNTIME_VERSION", "CODESPACES")  # fmt: skip
PERSON_S = 300.0  # how long a flow waits for the person's approval


class AuthorizationPending(RuntimeError):
    """Nobody approved the authorization in time."""


def config_dir() -> Path:
    """mcp_nb's folder under the user's configuration directory (`MCP_NB_CONFIG_DIR` overrides)."""
    given = os.environ.get("MCP_NB_CONFIG_DIR")
    if given:
        return Path(given)
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "mcp_nb"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "mcp_nb"


class TokenFile:
    """The SDK's `TokenStorage`, in one file per server under `config_dir()/oauth/`, readable
    by the user alone (0600). Holds the tokens and the client the server registered."""

    def __init__(self, server_url: str, folder: Path | None = None) -> None:
        key = hashlib.sha256(server_url.encode("utf-8")).hexdigest()[:24]
        self.path = (folder or config_dir() / "oauth") / f"{key}.json"
        self.server_url = server_url

    def _read(self) -> dict[str, Any]:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            log.debug("the token file %s could not be read; starting afresh", self.path, exc_info=True)
            return {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = self.path.with_suffix(".tmp")
        # Created 0600 whatever the umask, then moved over the old one: never readable by others,
        # never half written.
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(partial, 0o600)
        os.replace(partial, self.path)

    async def get_tokens(self) -> Any:
        saved = self._read().get("tokens")
        return OAuthToken.model_validate(saved) if saved else None

    async def set_tokens(self, tokens: Any) -> None:
        data = self._read()
        data.update(server=self.server_url, tokens=tokens.model_dump(mode="json", exclude_none=True), saved_at=time.time())
        self._write(data)

    async def get_client_info(self) -> Any:
        saved = self._read().get("client_info")
        return OAuthClientInformationFull.model_validate(saved) if saved else None

    async def set_client_info(self, client_info: Any) -> None:
        data = self._read()
        data.update(server=self.server_url, client_info=client_info.model_dump(mode="json", exclude_none=True))
        self._write(data)

    def forget(self) -> bool:
        """Delete what is kept for this server (the next connect authorizes afresh)."""
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return False


class OAuth:
    """How to authorize with an OAuth-protected server: `connect(name, url, auth=mcp_nb.OAuth())`.

    `scopes`: the scopes to ask for (text or a list; by default the server's own choice).
    `callback`: "auto", "loopback" or "paste" (see the module's doc). `client_id`,
    `client_secret`: a client registered beforehand (else the server's dynamic registration,
    or `client_metadata_url`, a client ID metadata document). `storage`: where tokens are
    kept, per server (default: `TokenFile`). `open_browser`: open the link in the loopback
    flow (it is shown either way); a function `(link) -> None` opens it some other way. `timeout`: seconds to wait for the person's approval.
    """

    def __init__(
        self, *, scopes: str | list[str] | None = None, callback: str = "auto", client_id: str | None = None,
        client_secret: str | None = None, client_metadata_url: str | None = None, client_name: str = "mcp_nb",
        storage: Callable[[str], Any] | Any | None = None, open_browser: bool | Callable[[str], Any] = True,
        timeout: float = PERSON_S,
    ) -> None:  # fmt: skip
        if callback not in CALLBACKS:
            raise BadValue(f"callback must be one of {', '.join(map(repr, CALLBACKS))}, got {callback!r}")
        if isinstance(scopes, (list, tuple)):
            if not all(isinstance(s, str) and s and " " not in s for s in scopes):
                raise BadValue(f"scopes are words without spaces, got {scopes!r}")
            scopes = " ".join(scopes)
        elif scopes is not None and not isinstance(scopes, str):
            raise BadType(f"scopes is text or a list of words, got {type(scopes).__name__}")
        if client_secret is not None and client_id is None:
            raise BadValue("client_secret goes with the client_id it was issued for")
        if not isinstance(timeout, (int, float)) or not timeout > 0:
            raise BadValue(f"timeout is a positive number of seconds, got {timeout!r}")
        self.scopes, self.client_id, self.client_name = scopes, client_id, client_name
        self._client_secret = client_secret
        self.client_metadata_url, self.storage, self.open_browser = client_metadata_url, storage, open_browser
        self.timeout = float(timeout)
        self.callback = callback if callback != "auto" else ("paste" if any(os.environ.get(v) for v in _REMOTE) else "loopback")

    def __repr__(self) -> str:  # never the secret
        shown = ", ".join(f"{k}={v!r}" for k, v in (("scopes", self.scopes), ("callback", self.callback), ("client_id", self.client_id)) if v)
        return f"OAuth({shown})"

    def flow(self, server_url: str, said: Callable[[str], None]) -> Flow:
        """The flow for one connection to `server_url`; `said(line)` files a step in its log."""
        return Flow(self, server_url, said)

    def storage_for(self, server_url: str) -> Any:
        if self.storage is None:
            return TokenFile(server_url)
        return self.storage(server_url) if callable(self.storage) and not hasattr(self.storage, "get_tokens") else self.storage


class Flow:
    """One connection's OAuth: the SDK's provider, and the person's step as this notebook takes it."""

    def __init__(self, oauth: OAuth, server_url: str, said: Callable[[str], None]) -> None:
        self.oauth, self.server_url, self.said = oauth, server_url, said
        self.link: str | None = None  # the authorization link, once the SDK made it
        self.state: str | None = None
        self.shown = asyncio.Event()  # the link is there for the person
        self._answer: asyncio.Future | None = None
        self._listener: Any = None
        self.redirect_uri = PASTE_REDIRECT
        self.storage = oauth.storage_for(server_url)

    @property
    def pasted(self) -> bool:
        return self.oauth.callback == "paste"

    async def provider(self) -> Any:
        """The SDK's OAuthClientProvider for this flow (the loopback listener started first)."""
        if not self.pasted:
            self._listener = await asyncio.start_server(self._redirected, "127.0.0.1", 0)
            port = self._listener.sockets[0].getsockname()[1]
            self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        oauth = self.oauth
        if oauth.client_id is not None:
            await self.storage.set_client_info(OAuthClientInformationFull(
                client_id=oauth.client_id, client_secret=oauth._client_secret, redirect_uris=[self.redirect_uri],
                token_endpoint_auth_method="client_secret_basic" if oauth._client_secret else "none",
            ))  # fmt: skip
        return OAuthClientProvider(
            server_url=self.server_url,
            client_metadata=OAuthClientMetadata(
                client_name=oauth.client_name, redirect_uris=[self.redirect_uri], scope=oauth.scopes,
                grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            ),  # fmt: skip
            storage=self.storage, redirect_handler=self._show, callback_handler=self._answered,
            client_metadata_url=oauth.client_metadata_url,
        )  # fmt: skip

    # -- the person's step -----------------------------------------------------------------

    async def _show(self, link: str) -> None:
        """The SDK's redirect handler: the link is ready; show it (and open it, on this machine)."""
        self.link = link
        self.state = (parse_qs(urlsplit(link).query).get("state") or [None])[0]
        self._answer = asyncio.get_running_loop().create_future()
        self.said("authorization: the link is shown; waiting for the person to approve" + (
            " and paste the address they land on into mcp_nb.complete_auth(...)" if self.pasted else ""
        ))  # fmt: skip
        self.shown.set()
        opener = self.oauth.open_browser
        if not self.pasted and opener:
            # webbrowser may start a program and wait for it: not on the loop.
            asyncio.get_running_loop().run_in_executor(None, _open_quietly, link, opener if callable(opener) else webbrowser.open)

    async def _answered(self) -> Any:
        """The SDK's callback handler: the code, once the redirect came (loopback) or was pasted."""
        assert self._answer is not None
        try:
            query = await asyncio.wait_for(asyncio.shield(self._answer), self.oauth.timeout)
        except asyncio.TimeoutError:
            raise AuthorizationPending(f"nobody approved within {self.oauth.timeout:g} s") from None
        finally:
            self.shown.clear()  # the listener stays: a step-up later in the session asks the person again
        if "error" in query:
            said = query["error"] + (f": {query['error_description']}" if query.get("error_description") else "")
            raise OAuthFlowError(f"the authorization server refused: {said}")
        if not query.get("code"):
            raise OAuthFlowError("the address given back holds no authorization code")
        self.said("authorization: the person approved; the code came back")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    def answers(self, url: str) -> bool:
        """Whether `url` (where the person landed) carries this flow's state."""
        try:
            return self.state is not None and _query(url).get("state") == self.state
        except BadValue:
            return False

    def complete(self, url: str) -> None:
        """The address the person landed on (paste flow), handed to the waiting flow. On the loop."""
        if self._answer is None or self._answer.done():
            raise BadValue("no authorization is waiting for an answer on this connection")
        if not self.answers(url):
            raise BadValue("that address belongs to another authorization (its state does not match this one's)")
        self._answer.set_result(_query(url))

    async def _redirected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The loopback listener: one GET with this flow's state is the answer; anything else is refused."""
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            method, _, rest = line.partition(" ")
            target = rest.rsplit(" ", 1)[0]
            query = _query(target)
            ok = method == "GET" and self.state is not None and query.get("state") == self.state
            if ok and self._answer is not None and not self._answer.done():
                self._answer.set_result(query)
                body, status = "Authorized: you can close this tab and go back to the notebook.", "200 OK"
            else:
                body, status = "Not an answer this notebook is waiting for.", "400 Bad Request"
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                f"Connection: close\r\n\r\n{body}".encode()
            )
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError, ValueError):
            pass  # a caller that said nothing useful gets nothing
        finally:
            writer.close()

    def _close_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def close(self) -> None:
        self._close_listener()
        if self._answer is not None and not self._answer.done():
            self._answer.cancel()


def _query(url: str) -> dict[str, str]:
    try:
        return {key: values[0] for key, values in parse_qs(urlsplit(url.strip()).query).items()}
    except ValueError:
        raise BadValue("that is not the address of a page (paste the whole address you landed on)") from None


def _open_quietly(link: str, opener: Callable[[str], Any]) -> None:
    try:
        opener(link)
    except Exception:  # noqa: BLE001 - the link is shown in the cell anyway
        log.debug("could not open a browser", exc_info=True)


# What a request of the flow is, by where it goes (the steps the connection's log names).
def step_of(request: Any) -> str | None:
    path = request.url.path
    if "/.well-known/oauth-protected-resource" in path:
        return "discovery (protected resource metadata)"
    if "/.well-known/oauth-authorization-server" in path or "/.well-known/openid-configuration" in path:
        return "discovery (authorization server metadata)"
    if request.method == "POST" and b"grant_type=" in (request.content or b""):
        grant = parse_qs(request.content.decode("latin-1")).get("grant_type", [""])[0]
        return "refresh" if grant == "refresh_token" else "token"
    if request.method == "POST" and path.rstrip("/").endswith("/register"):
        return "registration"
    return None
