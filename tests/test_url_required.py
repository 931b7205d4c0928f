"""A server that needs the user to open a page before it answers (-32042, URL elicitation by
error, MCP 2025-11-25): recorded as protocol_error / url_required, the card says which page to
open, and the call made again afterwards goes through. Against server-everything over stdio."""

import peers

import mcp_nb

ASKS = {"url": "https://example.com/pay", "errorPath": True}


def test_the_page_to_open_is_said_and_the_call_goes_through_after():
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    first = mcp_nb.call("trigger-url-elicitation", ASKS, server="everything")
    mcp_nb.expect(first, "protocol_error", "url_required", code=-32042)
    (page,) = first.data["elicitations"]
    card = repr(first)
    assert f"open {page['url']} ({page['message']}), then call again" in card
    assert "url_required" in mcp_nb.CAUSE_DOC and "-32042" in mcp_nb.CAUSE_DOC["url_required"]
    again = mcp_nb.call("trigger-url-elicitation", ASKS, server="everything")  # server-everything lets the retry pass
    assert again.outcome == "result"
    frame = mcp_nb.history().to_frame()
    assert list(frame["cause"].astype(str)) == ["url_required", "ok"]
