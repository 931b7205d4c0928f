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
import contextlib
import functools
import hashlib
import html
import json
import logging
import os
import re
import stat
import time
import webbrowser
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio.to_thread
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, TokenStorage
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import ValidationError

from mcp_nb.elicitation import in_thread
from mcp_nb.mistakes import BadType, BadValue, Failure, first_line, one_line, read_json
from mcp_nb.numbers import as_float, shown

try:  # the advisory lock of a token file: flock where there is one, else Windows' own
    import fcntl
except ImportError:
    fcntl = None  # type: ignore[assignment]
    import msvcrt

log = logging.getLogger("mcp_nb")

CALLBACKS = ("auto", "loopback", "paste")
# The redirect a pasted flow registers: nothing listens there; the browser shows an error page
# whose address (with the code) the person copies back.
PASTE_REDIRECT = "http://127.0.0.1:8976/mcp_nb/callback"
# A remote notebook service, as its environment says (where a loopback redirect cannot land).
_REMOTE = (
    "JUPYTERHUB_API_URL",
    "BINDER_SERVICE_HOST",
    "BINDER_LAUNCH_HOST",
    "COLAB_RELEASE_TAG",
    "SAGEMAKER_APP_TYPE",
    "AWS_SAGEMAKER_JUPYTERSERVER_IMAGE",
    "VERTEX_PRODUCT",
    "DATABRICKS_RUNTIME_VERSION",
    "CODESPACES",
)
PERSON_S = 300.0  # how long a flow waits for the person's approval
OPENER_S = 30.0  # how long a browser opener is waited for (the link is shown meanwhile)
TOKEN_FILE_BYTES = 1 << 20  # tokens and a registered client take a few KB; a file larger is not one of mcp_nb's


class AuthorizationPending(Failure, RuntimeError):
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
    by the user alone (0600). Holds the tokens and the client the server registered.

    Two kernels, or two connections of one, may save at once: each save reads the file, changes
    its part and writes it back while holding an advisory lock on a file beside it (`KEY.lock`,
    which works across processes), under a name of its own that is then moved over the old one,
    so that no save is lost and no reader sees half a file. The file's I/O runs in a worker
    thread: a slow disk or a long wait for the lock never holds mcp_nb's loop. A file that
    cannot be read, or holds what is not tokens, is said in one line (naming it and `forget()`)
    and authorization starts afresh; the next save replaces it.
    """

    LOCK_S = 10.0  # how long a save waits for another writer before it says so

    def __init__(self, server_url: str, folder: Path | None = None) -> None:
        key = hashlib.sha256(server_url.encode("utf-8")).hexdigest()[:24]
        self.path = (folder or config_dir() / "oauth") / f"{key}.json"
        self.server_url = server_url
        # Where the note about a file that cannot be used goes besides mcp_nb's logger: the
        # connection's log, when a flow uses this file (`Flow`). Called on mcp_nb's loop.
        self.said: Callable[[str], None] | None = None
        self._noted: set[str] = set()  # what was said already (once per reason, not at every read)
        self._notes: list[str] = []  # said by a worker thread, told on the loop

    # -- the file, in a worker thread --------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _hold(fd, self.LOCK_S, self.path)
            yield
        finally:
            os.close(fd)  # which lets the lock go

    def _read(self) -> dict[str, Any]:
        # Without the lock: every save moves a whole file into place, so a reader sees one whole
        # file or another (and a folder it may not write to can still be read). Opened without
        # blocking and looked at before it is read: a FIFO put there would wait forever for a writer.
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return {}
        except OSError as err:
            return self._unusable(f"cannot be read ({err.strerror or first_line(err)})")
        try:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode):
                return self._unusable("is not a regular file")
            if found.st_size > TOKEN_FILE_BYTES:
                return self._unusable(f"is larger ({found.st_size:,} bytes) than tokens can be")
            with os.fdopen(os.dup(fd), "rb") as kept:
                text = kept.read(TOKEN_FILE_BYTES + 1).decode("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            return self._unusable(f"cannot be read ({getattr(err, 'strerror', None) or first_line(err)})")
        finally:
            os.close(fd)
        try:
            data = read_json(text)
        except ValueError:
            return self._unusable("is not JSON")
        return data if isinstance(data, dict) else self._unusable("holds JSON of another shape than mcp_nb's")

    def _unusable(self, why: str) -> dict[str, Any]:
        self._notes.append(
            f"the token file {self.path} {why}; authorization starts afresh and the next save replaces "
            "it (TokenFile(url).forget() deletes it)"
        )
        return {}

    def _saved(self, field: str, model: Any) -> Any:
        saved = self._read().get(field)
        if not saved:
            return None
        try:
            return model.model_validate(saved)
        except ValidationError as err:
            self._unusable(f"holds {field.replace('_', ' ')} of another shape than the SDK's ({first_line(err)})")
            return None

    def _update(self, **fields: Any) -> None:
        with self._locked():
            data = self._read()
            data.update(server=self.server_url, **fields)
            self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        # A name of this save's own (two writers never share one), created 0600 whatever the
        # umask, on the disk before it is moved over the old file: never readable by others,
        # never half written, never lost to another writer's move.
        partial = self.path.with_name(f".{self.path.stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if hasattr(os, "fchmod"):  # 0600 even where the umask would take the owner's write away
                os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(partial, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise

    async def _off_loop(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(functools.partial(work, *args, **kwargs))
        finally:
            self._tell()

    def _tell(self) -> None:
        while self._notes:
            note = self._notes.pop(0)
            if note in self._noted:
                continue
            self._noted.add(note)
            log.warning("%s", note)
            if self.said is not None:
                self.said(note)

    # -- the SDK's TokenStorage ------------------------------------------------------------------

    async def get_tokens(self) -> Any:
        return await self._off_loop(self._saved, "tokens", OAuthToken)

    async def set_tokens(self, tokens: Any) -> None:
        saved = tokens.model_dump(mode="json", exclude_none=True)
        await self._off_loop(self._update, tokens=saved, saved_at=time.time())

    async def get_client_info(self) -> Any:
        return await self._off_loop(self._saved, "client_info", OAuthClientInformationFull)

    async def set_client_info(self, client_info: Any) -> None:
        await self._off_loop(self._update, client_info=client_info.model_dump(mode="json", exclude_none=True))

    def forget(self) -> bool:
        """Delete what is kept for this server (the next connect authorizes afresh)."""
        if not self.path.parent.is_dir():
            return False
        with self._locked():
            try:
                self.path.unlink()
                return True
            except FileNotFoundError:
                return False


def _hold(fd: int, limit: float, path: Path) -> None:
    """Take the advisory lock on `fd` (exclusive), waiting up to `limit` seconds for its holder."""
    end = time.monotonic() + limit
    pause = 0.001
    while True:
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return
        except OSError as err:  # BlockingIOError where flock is; PermissionError from msvcrt
            if not isinstance(err, (BlockingIOError, PermissionError)) or time.monotonic() > end:
                raise OSError(f"the token file {path} is locked by another writer ({first_line(err)})") from None
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


class OAuth:
    """How to authorize with an OAuth-protected server: `connect(name, url, auth=mcp_nb.OAuth())`.

    `scopes`: the scopes to ask for (text or a list; by default the server's own choice).
    `callback`: "auto", "loopback" or "paste" (see the module's doc). `client_id`,
    `client_secret`: a client registered beforehand (else the server's dynamic registration,
    or `client_metadata_url`, a client ID metadata document). `storage`: where tokens are
    kept, per server (default: `TokenFile`): one of the SDK's `TokenStorage`s, or a function
    `(server_url) -> storage`, called in a thread of its own. `open_browser`: open the link in the
    loopback flow (it is shown either way); a function `(link) -> None` opens it some other way,
    in a daemon thread of its own. `timeout`: seconds to wait for the person's approval.
    """

    def __init__(
        self,
        *,
        scopes: str | list[str] | None = None,
        callback: str = "auto",
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcp_nb",
        storage: Callable[[str], Any] | Any | None = None,
        open_browser: bool | Callable[[str], Any] = True,
        timeout: float = PERSON_S,
    ) -> None:
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
        seconds = as_float(timeout)  # None for a bool, an infinity, 10**400: no clock keeps those
        if seconds is None or seconds <= 0:
            raise BadValue(f"timeout is a positive number of seconds, got {shown(timeout)}")
        self.scopes, self.client_id, self.client_name = scopes, client_id, client_name
        self._client_secret = client_secret
        self.client_metadata_url, self.storage, self.open_browser = client_metadata_url, storage, open_browser
        self.timeout = seconds
        self.callback = callback if callback != "auto" else ("paste" if any(os.environ.get(v) for v in _REMOTE) else "loopback")

    def __repr__(self) -> str:  # never the secret
        shown = ", ".join(
            f"{k}={v!r}" for k, v in (("scopes", self.scopes), ("callback", self.callback), ("client_id", self.client_id)) if v
        )
        return f"OAuth({shown})"

    def secret_values(self) -> list[str]:
        """What this OAuth holds that no record may: its client secret, when it was given one."""
        return [self._client_secret] if self._client_secret else []

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
        self._answer: asyncio.Future[dict[str, str]] | None = None
        self._listener: Any = None
        self.redirect_uri = PASTE_REDIRECT
        self.kept: TokenStorage  # where tokens and the registration are kept: made by `provider`, before the SDK reads it
        self._opener: asyncio.Task[None] | None = None  # the browser opener, while it is waited for
        self.storage = _ForThisAddress(self)  # what the SDK's provider is given
        self.own: OAuthClientInformationFull | None = None  # the client the OAuth was given, if any

    @property
    def pasted(self) -> bool:
        return self.oauth.callback == "paste"

    async def provider(self) -> Any:
        """The SDK's OAuthClientProvider for this flow (the loopback listener started first, on the
        port the kept registration names when it is free: the registration then serves again)."""
        oauth = self.oauth
        # The user's storage factory may read a keyring or a disk: in a thread, never on the loop
        # (the connect's timeout bounds the wait; a factory that never returns is left to itself).
        kept = self.kept = await in_thread(oauth.storage_for, self.server_url)
        if isinstance(kept, TokenFile):
            kept.said = self.said  # a file it cannot use is said in the connection's log too
        if not self.pasted:
            port = _loopback_port(await _kept_client(kept)) if oauth.client_id is None else 0
            try:
                self._listener = await asyncio.start_server(self._redirected, "127.0.0.1", port)
            except OSError:
                if not port:
                    raise
                # Taken (another kernel's flow waits there): a port of this flow's own, registered afresh.
                self._listener = await asyncio.start_server(self._redirected, "127.0.0.1", 0)
            port = self._listener.sockets[0].getsockname()[1]
            self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        if oauth.client_id is not None:
            self.own = OAuthClientInformationFull.model_validate(
                {
                    "client_id": oauth.client_id,
                    "client_secret": oauth._client_secret,
                    "redirect_uris": [self.redirect_uri],
                    "token_endpoint_auth_method": "client_secret_basic" if oauth._client_secret else "none",
                }
            )
            await kept.set_client_info(self.own)
        return OAuthClientProvider(
            server_url=self.server_url,
            client_metadata=OAuthClientMetadata.model_validate(
                {
                    "client_name": oauth.client_name,
                    "redirect_uris": [self.redirect_uri],
                    "scope": oauth.scopes,
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                }
            ),
            storage=self.storage,
            redirect_handler=self._show,
            callback_handler=self._answered,
            client_metadata_url=oauth.client_metadata_url,
        )

    # -- the person's step -----------------------------------------------------------------

    async def _show(self, link: str) -> None:
        """The SDK's redirect handler: the link is ready; show it (and open it, on this machine)."""
        self.link = link
        states = parse_qs(urlsplit(link).query).get("state")
        self.state = states[0] if states else None
        self._answer = asyncio.get_running_loop().create_future()
        self.said(
            "authorization: the link is shown; waiting for the person to approve"
            + (" and paste the address they land on into mcp_nb.complete_auth(...)" if self.pasted else "")
        )
        self.shown.set()
        opener = self.oauth.open_browser
        if not self.pasted and opener:
            # webbrowser may start a program and wait for it, and a function of the user's may never
            # return: in a daemon thread of its own (`in_thread`), never on the loop nor in its
            # default executor, whose threads the interpreter waits for at exit.
            self._opener = asyncio.get_running_loop().create_task(_opened(link, opener if callable(opener) else webbrowser.open))

    async def _answered(self) -> Any:
        """The SDK's callback handler: the code, once the redirect came (loopback) or was pasted."""
        assert self._answer is not None
        try:
            query = await asyncio.wait_for(asyncio.shield(self._answer), self.oauth.timeout)
        except TimeoutError:
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
        except (TimeoutError, ConnectionError, ValueError):
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
        if self._opener is not None:
            self._opener.cancel()  # nobody waits for the browser any more (its thread finishes by itself)


class _ForThisAddress:
    """A flow's view of where tokens are kept (the `TokenStorage` its SDK provider is given): the
    tokens as kept, and the client registration only when it names this flow's redirect address.

    A registration lists the addresses the authorization server may send the person back to, and
    a loopback flow listens on a port of its own: a registration kept by another flow (an earlier
    session on a port now taken, another kernel) names another port, and the server refuses an
    authorization with it on a page the notebook never hears of, so the flow would wait for the
    person until its timeout. Such a registration is left aside: the SDK registers this address
    afresh, and keeps that. A client the OAuth was given (`client_id=`) is this flow's own.
    """

    def __init__(self, flow: Flow) -> None:
        self.flow = flow

    async def get_tokens(self) -> Any:
        return await self.flow.kept.get_tokens()

    async def set_tokens(self, tokens: Any) -> None:
        await self.flow.kept.set_tokens(tokens)

    async def get_client_info(self) -> Any:
        flow = self.flow
        if flow.own is not None:
            return flow.own
        kept = await flow.kept.get_client_info()
        addresses = getattr(kept, "redirect_uris", None)
        if kept is None or not addresses or flow.redirect_uri in {str(address) for address in addresses}:
            return kept
        flow.said("authorization: the kept client registration is for another redirect address; this one is registered afresh")
        return None

    async def set_client_info(self, client_info: Any) -> None:
        await self.flow.kept.set_client_info(client_info)


async def _kept_client(storage: Any) -> Any:
    try:
        return await storage.get_client_info()
    except Exception:  # noqa: BLE001 - a storage that cannot say: the SDK asks it again, and says why it failed
        log.debug("the kept client registration could not be read", exc_info=True)
        return None


def _loopback_port(client: Any) -> int:
    """The port of the loopback redirect a kept registration names (0: none, or not one of mcp_nb's)."""
    for address in getattr(client, "redirect_uris", None) or ():
        parts = urlsplit(str(address))
        try:
            port = parts.port
        except ValueError:
            continue
        if parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.path == "/callback" and port and port >= 1024:
            return port
    return 0


def _query(url: str) -> dict[str, str]:
    try:
        return {key: values[0] for key, values in parse_qs(urlsplit(url.strip()).query).items()}
    except ValueError:
        raise BadValue("that is not the address of a page (paste the whole address you landed on)") from None


async def _opened(link: str, opener: Callable[[str], object]) -> None:
    """Open `link` with `opener` in a thread of its own, waiting for it OPENER_S at most."""
    opening = asyncio.ensure_future(in_thread(_open_quietly, link, opener))
    try:
        done, _ = await asyncio.wait({opening}, timeout=OPENER_S)
    finally:
        if not opening.done():
            opening.cancel()
    if not done:
        log.debug("the browser opener did not return within %g s; it is left to finish by itself", OPENER_S)


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


# -- what a failed flow says ---------------------------------------------------------------------

# The step an OAuth failure of the SDK's flow names (mcp.client.auth raises OAuthRegistrationError,
# OAuthTokenError, and OAuthFlowError for the rest), by its class and the words of its message.
_STEPS = (
    ("OAuthRegistrationError", "", "registration"),
    ("OAuthTokenError", "", "token"),
    ("OAuthFlowError", "protected resource", "discovery"),
    ("OAuthFlowError", "metadata", "discovery"),
    ("OAuthFlowError", "", "authorization"),
)
# Where the SDK puts an endpoint's whole answer into its message: what follows is the peer's body.
_BODY_AFTER = re.compile(
    r"(Token exchange failed \(\d+\)(?: \(redirected to [^;]*; not followed\))?: |"
    r"Registration failed: \d+(?: \(redirected to [^;]*; not followed\))? )"
)


def flow_failure(err: BaseException) -> str | None:
    """The step and the reason of an OAuth flow that failed somewhere in `err`, in one line
    (an endpoint's answer said by `answer_text`), or None when no flow failed there."""
    late = find(err, lambda e: isinstance(e, AuthorizationPending))
    if late is not None:
        return f"authorization failed at the authorization step: {one_line(late)}"
    found = find(
        err, lambda e: any(c.__name__ == "OAuthFlowError" and c.__module__.startswith("mcp.client.auth") for c in type(e).__mro__)
    )
    if found is None:
        return None
    names = {c.__name__ for c in type(found).__mro__}
    text = str(found).lstrip()
    said = _BODY_AFTER.match(text)
    page = _not_json(found)
    if said:
        shown = said.group(1) + answer_text(text[said.end() :])
    elif page is not None:  # "Invalid token response: 1 validation error ...": a login page, most often
        shown = f"{one_line(text.split(':', 1)[0], 80)}: not JSON but {answer_text(page)}"
    else:
        shown = one_line(text)
    step = next(step for name, words, step in _STEPS if name in names and words in shown.lower())
    return f"authorization failed at the {step} step: {shown}"


def _not_json(err: BaseException) -> str | None:
    """The body an endpoint answered with, when the SDK failed on it for not being JSON at all."""
    cause = err.__cause__ or err.__context__
    if not isinstance(cause, ValidationError):
        return None
    problem = cause.errors(include_url=False)[0]
    body = problem.get("input")
    if problem.get("type") != "json_invalid" or not isinstance(body, (str, bytes)):
        return None
    return body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body


def answer_text(body: str, limit: int = 200) -> str:
    """What an HTTP answer's body says, in one safe line (`mistakes.one_line`): a JSON-RPC error's
    message, an OAuth error and its description (RFC 6749, 5.2), an HTML page's title, or else
    its first line. A login page or a proxy's error page is named as one, not pasted."""
    start = body.lstrip()[:1]
    if start == "{" and len(body) <= 1 << 20:  # an OAuth or JSON-RPC error is small; a megabyte is not one
        try:
            data = read_json(body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):  # JSON-RPC
                code = error.get("code")
                return one_line(f"error {code}: {error['message']}" if isinstance(code, int) else error["message"], limit)
            if isinstance(error, str):  # OAuth
                described = data.get("error_description")
                return one_line(error + (f": {described}" if isinstance(described, str) and described else ""), limit)
    if start == "<":
        title = _TITLE.search(body[:65536])
        named = one_line(html.unescape(" ".join(title.group(1).split())), 120) if title else ""
        return f'an HTML page titled "{named}"' if named else "an HTML page"
    return one_line(body, limit)


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def find(err: BaseException, match: Callable[[BaseException], bool]) -> BaseException | None:
    """The first exception in `err`, its groups and its causes, that `match`es."""
    seen: set[int] = set()
    todo = [err]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if match(e):
            return e
        todo.extend(getattr(e, "exceptions", ()) or ())
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
    return None
