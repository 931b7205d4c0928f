"""A client for the official MCP conformance suite's client scenarios, written with mcp_nb's
public API only (`mcp_nb.connect`, `mcp_nb.call`, the connection it returns).

The suite starts a mock server per scenario and runs `python client.py URL` with the
scenario's name in MCP_CONFORMANCE_SCENARIO, its data in MCP_CONFORMANCE_CONTEXT (JSON) and
the spec version in MCP_CONFORMANCE_PROTOCOL_VERSION. The suite judges what reached its
server; in `--suite` mode it does not look at how the client ended, so this program says it
on its last line: `mcp_nb-client: ok` after it did every step with the outcome it should
have, and `mcp_nb-client: failed: ...` (exit 1) otherwise. tests/test_client_conformance.py
counts a scenario as passed only when the suite passed it *and* the client said ok.
"""

from __future__ import annotations

import json
import os
import sys
from urllib.parse import urlsplit

import mcp_nb

SERVER = "suite"
SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
VERSION = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")


class Failed(Exception):
    """A step did not end as it should have."""


def mode() -> str:
    """The era the suite asked for: a dated version before 2026, the handshake; 2026-07-28 as a
    client meets a server it does not know yet, asking with `server/discover` first ("auto",
    which the suite's modern scenarios check: the probe, and a retry at a version it offers)."""
    return "2025-11-25" if VERSION is not None and VERSION < "2026" else "auto"


def connect(url: str, **options):
    return mcp_nb.connect(SERVER, url, mode=options.pop("mode", mode()), **options)


def result(name: str, arguments: dict | None = None, **options):
    """Call a tool; it must answer with a result (not a tool error, protocol error or timeout)."""
    outcome = mcp_nb.call(name, arguments or {}, server=SERVER, progress=False, **options)
    if outcome.outcome != "result":
        raise Failed(f"{name}: {outcome.outcome} ({outcome.cause}): {outcome.message or outcome.content}")
    return outcome


def tools(connection) -> list:
    return [entry for entry in connection.entries() if entry.kind == "tool"]


def defaults(message, schema):
    """Accept with nothing of our own: mcp_nb fills in each field's default (SEP-1034)."""
    return "accept"


def stub_arguments(schema: dict) -> dict:
    """The least that satisfies a tool's required arguments."""
    by_type = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": [], "null": None}
    properties = schema.get("properties") or {}
    return {name: by_type.get((properties.get(name) or {}).get("type"), "x") for name in schema.get("required") or []}


# -- the scenarios ----------------------------------------------------------------------------------


def initialize(url):
    connect(url)


def tools_call(url):
    connect(url)
    result("add_numbers", {"a": 5, "b": 3})


def sse_retry(url):
    connect(url)
    result("test_reconnection")


def elicitation_defaults(url):
    connect(url)
    result("test_client_elicitation_defaults", elicit=defaults)


def request_metadata(url):
    connect(url)
    result("add_numbers", {"a": 5, "b": 3})


def invalid_tool_headers(url):
    connection = connect(url)
    for entry in tools(connection):  # the suite allows these to fail: it checks which were sent
        mcp_nb.call(entry.name, stub_arguments(entry.input_schema or {}), server=SERVER, progress=False)


def custom_headers(url):
    connection = connect(url)
    listed = {entry.name for entry in tools(connection)}
    for sent in CONTEXT.get("toolCalls", []):
        if sent["name"] in listed:
            mcp_nb.call(sent["name"], sent.get("arguments") or {}, server=SERVER, progress=False)


def schema_no_deref(url):
    connect(url, mode="2025-11-25")  # this mock speaks only the handshake, whatever version it names


def schema_preservation(url):
    connection = connect(url)
    focal = next(entry for entry in tools(connection) if entry.name == "json_schema_2020_12_tool")
    result("json_schema_echo", {"schema": focal.input_schema})


def request_state(url):
    connect(url)
    confirm = lambda message, schema: {"confirmed": True}  # noqa: E731
    for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"):
        result(name, elicit=confirm)


# -- authorization ------------------------------------------------------------------------------------


class Storage:
    """Tokens in memory: each scenario is a fresh client."""

    def __init__(self, client_info=None):
        self.tokens, self.client_info = None, client_info

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def authorization_code(url):
    authorized(url, authorization_code_auth(url))


def follow(link: str) -> None:
    """The person's browser: the suite's authorization server approves at once and redirects
    to the notebook's loopback listener, which this follows the redirect to."""
    import httpx2

    httpx2.get(link, follow_redirects=True, timeout=30)


def authorization_code_auth(url):
    """mcp_nb's own notebook flow (the SDK's OAuthClientProvider underneath), its tokens in a
    TokenFile under a folder of this run's own."""
    return mcp_nb.OAuth(
        callback="loopback",
        open_browser=follow,
        client_id=CONTEXT.get("client_id"),
        client_secret=CONTEXT.get("client_secret"),
        client_name="mcp_nb conformance client",
        client_metadata_url="https://conformance-test.local/client-metadata.json",
        timeout=30,
    )


def client_credentials_basic(url):
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=Storage(),
        client_id=CONTEXT["client_id"],
        client_secret=CONTEXT["client_secret"],
        token_endpoint_auth_method="client_secret_basic",
    )
    authorized(url, auth)


def client_credentials_jwt(url):
    from mcp.client.auth.extensions.client_credentials import PrivateKeyJWTOAuthProvider, SignedJWTParameters

    signed = SignedJWTParameters(
        issuer=CONTEXT["client_id"],
        subject=CONTEXT["client_id"],
        signing_algorithm=CONTEXT.get("signing_algorithm", "ES256"),
        signing_key=CONTEXT["private_key_pem"],
    )
    auth = PrivateKeyJWTOAuthProvider(
        server_url=url,
        storage=Storage(),
        client_id=CONTEXT["client_id"],
        assertion_provider=signed.create_assertion_provider(),
    )
    authorized(url, auth)


def enterprise_managed(url):
    """SEP-990: the enterprise's identity provider swaps the user's ID token for an identity
    assertion grant (RFC 8693), which the MCP server's authorization server takes as a
    jwt-bearer grant (RFC 7523). The SDK's IdentityAssertionOAuthProvider does the second leg;
    the first is the enterprise's, written here."""
    import asyncio

    import httpx2
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    parts = urlsplit(url)
    metadata = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"

    async def issuer() -> str:
        async with httpx2.AsyncClient(timeout=30.0) as http:
            return (await http.get(metadata)).raise_for_status().json()["authorization_servers"][0]

    async def identity_assertion(audience: str, resource: str) -> str:
        async with httpx2.AsyncClient(timeout=30.0) as http:
            answer = await http.post(
                CONTEXT["idp_token_endpoint"],
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "subject_token": CONTEXT["idp_id_token"],
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "audience": audience,
                    "resource": resource,
                    "client_id": CONTEXT["idp_client_id"],
                },
            )
        return answer.raise_for_status().json()["access_token"]

    auth = IdentityAssertionOAuthProvider(
        server_url=url,
        storage=Storage(),
        client_id=CONTEXT["client_id"],
        client_secret=CONTEXT["client_secret"],
        issuer=asyncio.run(issuer()),
        assertion_provider=identity_assertion,
        token_endpoint_auth_method="client_secret_basic",
    )
    authorized(url, auth)


def refused(said: str):
    """A scenario whose server must be refused: connect raises ConnectError, and its message
    says why (`said`), not some later failure the refusal caused."""

    def scenario(url):
        try:
            authorized(url, authorization_code_auth(url))
        except mcp_nb.ConnectError as err:
            if said not in str(err):
                raise Failed(f"connect failed, but its message does not say {said!r}: {err}") from None
            return
        raise Failed("connected, though the scenario's server must be refused")

    return scenario


def authorized(url, auth):
    """Connect through `auth`, then call the first tool (each scenario's server has its own)."""
    connection = connect(url, auth=auth)
    listed = tools(connection)
    if listed:
        mcp_nb.call(listed[0].name, {}, server=SERVER, progress=False, elicit=defaults)


SCENARIOS = {
    "initialize": initialize,
    "tools_call": tools_call,
    "sse-retry": sse_retry,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "request-metadata": request_metadata,
    "http-standard-headers": tools_call,
    "http-invalid-tool-headers": invalid_tool_headers,
    "http-custom-headers": custom_headers,
    "json-schema-ref-no-deref": schema_no_deref,
    "json-schema-2020-12-preservation": schema_preservation,
    "sep-2322-client-request-state": request_state,
    # A server that never grants the scope asked for: the client gives up (after a bounded
    # number of tries, which the suite counts) and says so.
    "auth/scope-retry-limit": refused("HTTP 403"),
    # The authorization server or the resource is not the one it claims to be: refused.
    "auth/resource-mismatch": refused("authorization failed at the discovery step"),
    "auth/metadata-issuer-mismatch": refused("authorization failed"),
    "auth/iss-wrong-issuer": refused("authorization failed at the authorization step: Authorization response iss mismatch"),
    "auth/iss-unexpected": refused("iss mismatch"),
    "auth/iss-normalized": refused("iss mismatch"),
    "auth/iss-supported-missing": refused("missing iss"),
    "auth/client-credentials-basic": client_credentials_basic,
    "auth/client-credentials-jwt": client_credentials_jwt,
    "auth/enterprise-managed-authorization": enterprise_managed,
}


def main() -> int:
    import shutil
    import tempfile

    os.environ["MCP_NB_CONFIG_DIR"] = tokens = tempfile.mkdtemp(prefix="mcp_nb-conformance-")  # this run's only
    try:
        return run_scenario(sys.argv[-1])
    finally:
        shutil.rmtree(tokens, ignore_errors=True)


def run_scenario(url: str) -> int:
    import logging

    said = logging.StreamHandler(sys.stderr)  # mcp_nb's own log, in the scenario's stderr.txt
    said.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.getLogger("mcp_nb").addHandler(said)
    logging.getLogger("mcp_nb").setLevel(logging.DEBUG)
    run = SCENARIOS.get(SCENARIO) or (authorization_code if SCENARIO.startswith("auth/") else None)
    if run is None:
        print(f"mcp_nb-client: failed: no scenario {SCENARIO!r}", flush=True)
        return 1
    try:
        run(url)
    except Exception as err:  # noqa: BLE001 - said on the last line, which the test reads
        print(f"mcp_nb-client: failed: {type(err).__name__}: {' '.join(str(err).split())}", flush=True)  # one line
        return 1
    finally:
        mcp_nb.reset()
    print("mcp_nb-client: ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
