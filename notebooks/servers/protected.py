"""An MCP server protected by OAuth 2.1 that is also its own authorization server.

    python notebooks/servers/protected.py [--port N] [--token-seconds S] [--scopes "notes:read notes:write"]
                                          [--verbose]

Built only from the official `mcp` SDK's parts, for teaching and for tests: a notebook connects to
it with an OAuth client and the whole flow happens on this machine. One process, one origin
(http://127.0.0.1:PORT), serving

    /mcp                                        the MCP endpoint (streamable HTTP), bearer tokens only
    /.well-known/oauth-protected-resource/mcp   protected resource metadata (RFC 9728)
    /.well-known/oauth-authorization-server     authorization server metadata (RFC 8414)
    /register                                   dynamic client registration (RFC 7591)
    /authorize                                  authorization code with PKCE (S256 only)
    /token                                      code exchange and refresh (with rotation)
    /revoke                                     token revocation (RFC 7009)

The SDK serves every one of those routes and does the protocol checks (PKCE, redirect_uri,
client authentication, scopes, expiry); what is written here is the provider behind them,
`DemoAuthorizationServer`: where clients, codes and tokens are kept (in memory) and what
`/authorize` does. It approves at once, with no login page: the stand-in for a person who
signs in and consents. A real server would show a page there.

When it is listening it writes one line to stderr, `protected MCP server at http://127.0.0.1:PORT/mcp`,
and nothing else unless `--verbose` (which says each step of the flow, never a token, code or
secret). It stops cleanly, exit status 0, on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import signal
import socket
import sys
import time
from typing import Any

import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

HOST = "127.0.0.1"  # never another interface: this server approves anyone who asks
CODE_SECONDS = 300  # an authorization code is for the next few seconds of the flow, not for keeping
USER = "demo-user"  # the one resource owner, standing in for whoever would have signed in


# The SDK's models, each with the grant it belongs to: one approval at /authorize is one grant,
# and every code, access token and refresh token it leads to carries its id, so that revoking
# any of them can revoke them all (RFC 7009 §2.1). The SDK never shows these models to a client,
# so an extra field is ours to add.
class Code(AuthorizationCode):
    grant: str


class Access(AccessToken):
    grant: str


class Refresh(RefreshToken):
    grant: str


def same_url(a: str, b: str) -> bool:
    """Resource indicators compare as the SDK's bearer check compares them: a trailing slash aside."""
    return a.rstrip("/") == b.rstrip("/")


class DemoAuthorizationServer:
    """An `OAuthAuthorizationServerProvider` (mcp.server.auth.provider) holding everything in memory.

    The SDK's handlers have checked the request before a method here runs: at /authorize, that the
    client exists, its redirect_uri is registered and the scopes are the client's; at /token, that
    the client authenticated, the PKCE verifier matches the challenge, the redirect_uri is the one
    used at /authorize and the code or refresh token has not expired. What is left is to keep
    things and hand them out.
    Tokens are random strings that mean nothing by themselves (opaque, not JWTs): the resource
    server side of this process looks them up here, through `load_access_token`.
    """

    def __init__(self, *, issuer: str, resource: str, token_seconds: int, verbose: bool) -> None:
        self.issuer = issuer  # sent back as `iss` on the redirect (RFC 9207)
        self.resource = resource  # the one resource (RFC 8707) this server issues tokens for
        self.token_seconds = token_seconds
        self.verbose = verbose
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, Code] = {}
        self.access_tokens: dict[str, Access] = {}
        self.refresh_tokens: dict[str, Refresh] = {}

    def say(self, step: str) -> None:
        # Only ever client ids, scopes and grant types: never a token, code or secret.
        if self.verbose:
            print(f"oauth: {step}", file=sys.stderr, flush=True)

    # -- dynamic client registration ---------------------------------------------------------------

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        # The SDK has minted the client_id (and a secret, unless the client asked for
        # token_endpoint_auth_method "none", as a public client does) and checked the scopes
        # against ClientRegistrationOptions.valid_scopes.
        if not client_info.redirect_uris:
            raise RegistrationError("invalid_redirect_uri", "at least one redirect_uri is needed")
        self.clients[client_info.client_id] = client_info
        self.say(f"registered client {client_info.client_id} (scope {client_info.scope!r})")

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    # -- /authorize --------------------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """Approve at once, and answer with where to send the browser: the client's redirect_uri."""
        # RFC 8707: a token is for one resource. Asked for another one, refuse (the SDK then
        # redirects back with error=invalid_target); asked for none, bind it to ours anyway, or the
        # bearer check (AuthSettings.validate_token_resource) would refuse the token later.
        if params.resource is not None and not same_url(params.resource, self.resource):
            raise AuthorizeError("invalid_target", f"this server issues tokens only for {self.resource}")
        # The scopes were checked against the client's registration; a request naming none gets
        # what the client registered for (which the SDK defaulted to the server's scopes).
        scopes = params.scopes if params.scopes is not None else (client.scope or "").split()
        # RFC 6749 §10.10: at least 128 bits of entropy; 256 here. Single use (see below).
        code = secrets.token_urlsafe(32)
        self.codes[code] = Code(
            code=code,
            grant=secrets.token_hex(8),
            client_id=client.client_id,
            scopes=scopes,
            expires_at=time.time() + CODE_SECONDS,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=self.resource,
            subject=USER,
        )
        self.say(f"approved client {client.client_id} for {' '.join(scopes) or 'no scopes'}")
        # The SDK's AuthorizationHandler answers 302 to whatever URL this returns. `state` must
        # come back unchanged (the client's CSRF check); `iss` (RFC 9207) is ours to add, and the
        # SDK's client checks it against the issuer in the metadata when it is there. The SDK's
        # metadata does not say `authorization_response_iss_parameter_supported`, so a client
        # may not insist on it; sending it anyway guards against mix-up attacks for those that check.
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=self.issuer)

    # -- /token: the authorization code grant -------------------------------------------------------

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> Code | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: Code) -> OAuthToken:
        code = authorization_code
        # Single use (OAuth 2.1 §4.1.3): gone before the tokens exist, so a replay finds nothing.
        self.codes.pop(code.code, None)
        self.say(f"token for client {client.client_id} (authorization_code)")
        return self._issue(client.client_id, code.scopes, code.grant, code.subject)

    # -- /token: the refresh token grant -------------------------------------------------------------

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> Refresh | None:
        token = self.refresh_tokens.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: Refresh, scopes: list[str]
    ) -> OAuthToken:
        # Rotation (OAuth 2.1 §4.3.1, a public client's refresh token must be one-time): the old
        # refresh token and the grant's older access tokens stop working as the new pair is made.
        # `scopes` may be narrower than the grant (the SDK checked it is no wider); the new refresh
        # token keeps the whole grant so a later refresh may ask for all of it again.
        self._forget(refresh_token.grant)
        self.say(f"token for client {client.client_id} (refresh_token)")
        return self._issue(client.client_id, scopes, refresh_token.grant, refresh_token.subject, refresh_token.scopes)

    # -- the resource server's side: checking a bearer token ------------------------------------------

    async def load_access_token(self, token: str) -> Access | None:
        access = self.access_tokens.get(token)
        if access is not None and access.expires_at is not None and access.expires_at < time.time():
            # The SDK's bearer check refuses an expired token too; dropping it here keeps the
            # store from growing and makes /revoke treat it as unknown.
            del self.access_tokens[token]
            return None
        return access

    # -- /revoke --------------------------------------------------------------------------------------

    async def revoke_token(self, token: Access | Refresh) -> None:
        # The SDK found the token and checked it belongs to the asking client. RFC 7009 lets a
        # server revoke the whole grant, and the SDK's provider contract asks for it.
        self._forget(token.grant)
        self.say(f"revoked a grant of client {token.client_id}")

    # -- keeping ----------------------------------------------------------------------------------------

    def _issue(
        self, client_id: str, scopes: list[str], grant: str, subject: str | None, grant_scopes: list[str] | None = None
    ) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        # Whole seconds, as the SDK's bearer check compares them.
        expires_at = int(time.time()) + self.token_seconds
        self.access_tokens[access] = Access(
            token=access,
            grant=grant,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires_at,
            resource=self.resource,
            subject=subject,
        )
        self.refresh_tokens[refresh] = Refresh(
            token=refresh,
            grant=grant,
            client_id=client_id,
            scopes=grant_scopes or scopes,
            resource=self.resource,
            subject=subject,
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_seconds,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    def _forget(self, grant: str) -> None:
        for store in (self.access_tokens, self.refresh_tokens, self.codes):
            for key in [key for key, item in store.items() if item.grant == grant]:
                del store[key]


def build(base_url: str, *, scopes: list[str], token_seconds: int, verbose: bool = False) -> MCPServer:
    """The MCP server for `base_url` (http://127.0.0.1:PORT): its tools, its auth settings, its provider."""
    resource = f"{base_url}/mcp"
    auth = AuthSettings(
        issuer_url=base_url,  # same origin: this process is the authorization server
        resource_server_url=resource,  # published in the RFC 9728 metadata and in 401s
        # Refuse a token issued for another resource (RFC 8707 audience check), even though this
        # authorization server only issues tokens for this one: it is what a resource server must do.
        validate_token_resource=True,
        # Every token must carry all of these, or /mcp answers 403 insufficient_scope. The
        # protected resource metadata lists them as scopes_supported, which is also what the SDK's
        # client asks for at /authorize.
        required_scopes=scopes or None,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=scopes or None, default_scopes=scopes or None
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    provider = DemoAuthorizationServer(
        issuer=str(auth.issuer_url), resource=resource, token_seconds=token_seconds, verbose=verbose
    )
    server = MCPServer(
        "protected-notes",
        version="1.0.0",
        instructions="A notes server behind OAuth 2.1; whoami says which token made the call.",
        auth=auth,
        auth_server_provider=provider,
        log_level="WARNING",  # the SDK's own INFO lines would name every request
    )
    notes: list[dict[str, str]] = []  # in memory, shared by every client, gone when the process ends

    def token_scopes() -> list[str]:
        token = get_access_token()
        return token.scopes if token is not None else []

    @server.tool()
    def whoami() -> dict[str, Any]:
        """Who made this call: the client and the scopes of its access token (never the token itself)."""
        # The SDK's bearer middleware put the checked token in a context variable for this request.
        token = get_access_token()
        if token is None:  # cannot happen behind RequireAuthMiddleware; said plainly if it ever does
            raise ToolError("this call came without an access token")
        return {
            "client_id": token.client_id,
            "subject": token.subject,
            "scopes": token.scopes,
            "resource": token.resource,
            "expires_in": None if token.expires_at is None else max(0, token.expires_at - int(time.time())),
        }

    @server.tool()
    def add_note(text: str) -> str:
        """Keep a note (needs the notes:write scope)."""
        # A finer check than required_scopes: run with --scopes notes:read, reading works and this refuses.
        if "notes:write" not in token_scopes():
            raise ToolError("add_note needs the notes:write scope, which this token does not have")
        token = get_access_token()
        notes.append({"text": text, "by": token.client_id if token else "?"})
        return f"kept note {len(notes)}"

    @server.tool(name="notes")
    def list_notes() -> list[str]:
        """The notes kept so far, oldest first."""
        return [note["text"] for note in notes]

    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0, the default: any free port)")
    parser.add_argument("--token-seconds", type=int, default=3600, help="access token lifetime (default 3600)")
    parser.add_argument("--scopes", default="notes:read notes:write", help="scopes every token needs, space-separated")
    parser.add_argument("--verbose", action="store_true", help="say each step of the OAuth flow on stderr")
    args = parser.parse_args(argv)
    if args.token_seconds < 1:
        parser.error("--token-seconds must be at least 1")

    # The issuer and resource URLs name the port, and with --port 0 the port is known only once
    # bound: so bind first, then build the server for that port, then hand uvicorn the socket.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Every answer leaves at once (the accepted sockets inherit it): without it a JSON answer,
    # written as its head then its body, waited for the client's delayed ACK, 40 ms a request.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        listener.bind((HOST, args.port))
    except OSError as error:
        print(f"protected.py: cannot listen on {HOST}:{args.port}: {error.strerror}", file=sys.stderr, flush=True)
        return 1
    base_url = f"http://{HOST}:{listener.getsockname()[1]}"

    server = build(base_url, scopes=args.scopes.split(), token_seconds=args.token_seconds, verbose=args.verbose)
    # host=127.0.0.1 turns on the SDK's DNS-rebinding protection (Host and Origin must be local).
    app = server.streamable_http_app(host=HOST)
    web = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,  # an access log line carries the /authorize query (state, PKCE challenge)
            timeout_graceful_shutdown=2,  # an open SSE stream would otherwise hold the shutdown forever
        )
    )

    # uvicorn catches SIGTERM/SIGINT while it serves, shuts down gracefully, then restores the
    # handlers it found and raises the signal again. Installing these first means that second
    # raise lands here and the process ends with status 0 (not killed by SIGTERM, nor a
    # KeyboardInterrupt traceback); they also stop a server that is still starting.
    def stop(signum: int, frame: object) -> None:
        web.should_exit = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    async def serve() -> None:
        serving = asyncio.create_task(web.serve(sockets=[listener]))
        while not web.started and not serving.done():
            await asyncio.sleep(0.01)
        if web.started:
            # The one line a test or a notebook waits for; only once the socket accepts.
            print(f"protected MCP server at {base_url}/mcp", file=sys.stderr, flush=True)
        await serving

    asyncio.run(serve())
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
