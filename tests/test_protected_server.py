"""notebooks/servers/protected.py on its own, with the official SDK's OAuth client (no mcp_nb): the
server refuses a call without a token, and the SDK's whole flow (discovery, registration,
authorization code with PKCE, token, refresh, revocation) gets through to its tools."""

import asyncio
import re
import time
from urllib.parse import parse_qs, urlparse

import httpx2
import mcp
from helpers import protected_server
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"  # never listened on: the flow reads the redirect, it does not follow it


class Memory:
    """The SDK client's TokenStorage, in memory; it keeps every token set it was given."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.given: list[OAuthToken] = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        self.given.append(tokens)

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


def sdk_client(url: str, storage: Memory) -> tuple[OAuthClientProvider, list[str]]:
    """The SDK's provider, with the person's part played by a GET of the authorization link that reads
    where the server sends the browser back (code, state, iss) without going there."""
    landed: list[str] = []

    async def redirect_handler(link: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            answer = await http.get(link)
        assert answer.status_code == 302, (answer.status_code, answer.text)
        landed.append(answer.headers["location"])

    async def callback_handler() -> AuthorizationCodeResult:
        query = {key: values[0] for key, values in parse_qs(urlparse(landed[-1]).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    metadata = OAuthClientMetadata(
        client_name="test", redirect_uris=[REDIRECT], grant_types=["authorization_code", "refresh_token"]
    )
    return OAuthClientProvider(url, metadata, storage, redirect_handler, callback_handler), landed


async def calls(url: str, storage: Memory, *steps) -> list:
    """Connect with the SDK's client and run `steps` (a tool name and its arguments, or a pause in seconds)."""
    provider, landed = sdk_client(url, storage)
    results = []
    async with httpx2.AsyncClient(auth=provider) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
            results.append(sorted(tool.name for tool in (await client.list_tools()).tools))
            for step in steps:
                if isinstance(step, (int, float)):
                    await asyncio.sleep(step)
                else:
                    results.append(await client.call_tool(*step))
    return [landed, provider.context.oauth_metadata, *results]


def test_no_token_is_401_and_the_sdk_flow_reaches_whoami_until_revoked():
    with protected_server() as (url, said):
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=10)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        base = url.removesuffix("/mcp")
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in challenge

        storage = Memory()
        landed, metadata, tools, whoami, added, notes = asyncio.run(
            calls(url, storage, ("whoami", {}), ("add_note", {"text": "hello"}), ("notes", {}))
        )
        assert tools == ["add_note", "notes", "whoami"]
        assert not whoami.is_error, whoami
        assert whoami.structured_content["client_id"] == storage.client.client_id
        assert whoami.structured_content["scopes"] == ["notes:read", "notes:write"]
        assert not added.is_error and notes.structured_content == {"result": ["hello"]}
        # One approval; the redirect carried the code, the client's state and the issuer (RFC 9207).
        (location,) = landed
        back = parse_qs(urlparse(location).query)
        assert location.startswith(REDIRECT + "?") and set(back) == {"code", "state", "iss"}
        assert back["iss"] == [str(metadata.issuer)] == [base]

        # Revoking the access token revokes its grant: the token and its refresh token stop working.
        token, client = storage.tokens, storage.client
        auth = {"client_id": client.client_id, "client_secret": client.client_secret}
        revoked = httpx2.post(f"{base}/revoke", data={"token": token.access_token, **auth}, timeout=10)
        assert revoked.status_code == 200
        bearer = {"authorization": f"Bearer {token.access_token}"}
        assert httpx2.post(url, json={}, headers=bearer, timeout=10).status_code == 401
        refresh = {"grant_type": "refresh_token", "refresh_token": token.refresh_token, **auth}
        again = httpx2.post(f"{base}/token", data=refresh, timeout=10)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    # It said nothing after its one line: no token, code or secret, nor anything else.
    assert said["after"] == ""


def test_an_expired_access_token_is_refreshed_and_rotated():
    with protected_server("--token-seconds", "2", "--verbose") as (url, said):
        storage = Memory()
        started = time.monotonic()
        landed, _, _, first, second = asyncio.run(calls(url, storage, ("whoami", {}), 3, ("whoami", {})))
        assert not first.is_error and not second.is_error, second
        assert time.monotonic() - started >= 3
        # One authorization, two token sets: the second came from the refresh token, not a new approval.
        assert len(landed) == 1 and len(storage.given) == 2
        old, new = storage.given
        assert old.access_token != new.access_token and old.refresh_token != new.refresh_token
        # Rotation: the refresh token that was used is no longer good.
        client = storage.client
        reused = httpx2.post(
            f"{url.removesuffix('/mcp')}/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": old.refresh_token,
                "client_id": client.client_id,
                "client_secret": client.client_secret,
            },
            timeout=10,
        )
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
        secret = [old.access_token, old.refresh_token, new.access_token, new.refresh_token, client.client_secret]
    steps = said["after"]
    assert "(authorization_code)" in steps and "(refresh_token)" in steps, steps
    assert not [value for value in secret if value in steps]
    assert not re.search(r"code=|[A-Za-z0-9_-]{40,}", steps), steps
