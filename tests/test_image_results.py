"""A tool's image (and audio) shows as itself in the outcome card, not as the text `[image image/png]`.

The model's text, `Outcome.content`, stays what it was (the history's column is text); the card
inlines each image and sound as a data: URI, scaled down by CSS, and names one too large to inline
instead. The Outcome keeps the SDK's blocks as they came (`Outcome.media`); the history keeps none.
"""

from __future__ import annotations

import base64
import struct
import zlib

import mcp_types as t
import peers
from mcp.server.mcpserver import Audio, Image

import mcp_nb
from mcp_nb.views.cards import outcome_html


def png(width: int = 2, height: int = 2) -> bytes:
    """A real PNG of grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = png()
PNG64 = base64.b64encode(PNG).decode()
WAV64 = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()


def test_a_kernel_tool_returning_an_image_shows_it_in_the_card():
    @mcp_nb.tool()
    def logo() -> Image:
        return Image(data=PNG, format="png")

    o = mcp_nb.call("logo")
    assert o.ok and o.content == "[image image/png]" and type(o.content) is str  # the model's text, as before
    (block,) = o.media
    assert block.type == "image" and block.data == PNG64  # the SDK's block, as it came
    card = o._repr_html_()
    assert card.count(PNG64) == 1 and f'src="data:image/png;base64,{PNG64}"' in card
    assert "<img " in card and "max-width:100%" in card and "max-height:" in card
    assert "[image image/png]" in repr(o) and PNG64 not in repr(o)  # the text view is text
    frame = mcp_nb.history().to_frame()
    assert frame["content"].tolist() == ["[image image/png]"] and type(frame["content"][0]) is str
    assert PNG64 not in frame.to_json(default_handler=str, date_format="iso")  # the history keeps no image


def test_the_magic_shows_the_image_in_the_notebooks_rich_display(shell):
    @mcp_nb.tool()
    def logo() -> Image:
        return Image(data=PNG, format="png")

    o = shell.run_line_magic("mcp_call", "logo")
    shown, _ = shell.display_formatter.format(o)
    assert f"data:image/png;base64,{PNG64}" in shown["text/html"]  # the card, with the image inside it
    assert "image/png" not in shown  # once: a second copy beside the card would double the saved notebook
    assert PNG64 not in shown["text/plain"]


def test_audio_and_an_embedded_image_resource_show_and_the_text_stays_as_it_was():
    @mcp_nb.tool()
    def sound() -> Audio:
        return Audio(data=base64.b64decode(WAV64), format="wav")

    @mcp_nb.tool()
    def mixed() -> t.CallToolResult:
        return t.CallToolResult(
            content=[
                t.TextContent(type="text", text="a chart and a sound"),
                t.EmbeddedResource(
                    type="resource", resource=t.BlobResourceContents(uri="file:///chart.png", blob=PNG64, mime_type="image/png")
                ),
                t.AudioContent(type="audio", data=WAV64, mime_type="audio/wav"),
                t.EmbeddedResource(
                    type="resource",
                    resource=t.BlobResourceContents(uri="file:///data.bin", blob="AAAA", mime_type="application/octet-stream"),
                ),
            ]
        )

    heard = mcp_nb.call("sound")
    assert heard.content == "[audio audio/wav]"
    assert f'<audio controls src="data:audio/wav;base64,{WAV64}"' in heard._repr_html_()
    o = mcp_nb.call("mixed")
    assert o.content == "a chart and a sound\n[resource file:///chart.png]\n[audio audio/wav]\n[resource file:///data.bin]"
    assert [b.type for b in o.media] == ["resource", "audio"]  # the blob of no image or sound is no media
    card = o._repr_html_()
    assert f"data:image/png;base64,{PNG64}" in card and f"data:audio/wav;base64,{WAV64}" in card
    assert "data:application/octet-stream" not in card and card.index(PNG64) < card.index(WAV64)  # in their order


def test_an_image_too_large_to_inline_is_named_with_its_size_and_the_card_stays_small():
    big = "A" * 3_200_000  # 3.2 MB of base64: 2.4 MB of image

    @mcp_nb.tool()
    def huge() -> t.CallToolResult:
        return t.CallToolResult(
            content=[
                t.ImageContent(type="image", data=big, mime_type="image/png"),
                t.ImageContent(type="image", data=PNG64, mime_type="image/png"),
            ]
        )

    o = mcp_nb.call("huge")
    assert o.content == "[image image/png]\n[image image/png]" and o.media[0].data is big  # kept, not copied
    card = outcome_html(o)
    assert len(card) < 50_000, f"{len(card):,} characters"
    assert "image image/png, 2.4 MB: too large to show here" in card and "o.media" in card
    assert f"data:image/png;base64,{PNG64}" in card  # the small one still shows


def test_what_a_server_sends_as_media_cannot_write_markup_into_the_card():
    @mcp_nb.tool()
    def sly() -> t.CallToolResult:
        return t.CallToolResult(
            content=[
                t.ImageContent(type="image", data=PNG64, mime_type='image/png" onerror="alert(1)'),
                t.ImageContent(type="image", data='x" onerror="alert(2)', mime_type="image/png"),
            ]
        )

    card = mcp_nb.call("sly")._repr_html_()
    assert 'onerror="' not in card and "<img " not in card  # neither is inlined, and no attribute gets out
    assert "not shown: not a media type" in card and "not shown: not base64" in card


def test_stable_output_shows_the_same_image_every_run():
    @mcp_nb.tool()
    def logo() -> Image:
        return Image(data=PNG, format="png")

    first, again = mcp_nb.call("logo"), mcp_nb.call("logo")
    html = outcome_html(first, stable=True)
    assert PNG64 in html and html.replace(f">#{first.call_id}<", f">#{again.call_id}<") == outcome_html(again, stable=True)


def test_server_everythings_tiny_image_shows_in_the_card():
    peers.require(peers.EVERYTHING)
    mcp_nb.connect("everything", peers.everything_stdio(), env=peers.node_env())
    o = mcp_nb.call("get-tiny-image", server="everything")
    assert o.ok and o.content == "Here's the image you requested:\n[image image/png]\nThe image above is the MCP logo."
    (image,) = o.media
    assert image.mime_type == "image/png" and base64.b64decode(image.data).startswith(b"\x89PNG")
    card = o._repr_html_()
    assert f'src="data:image/png;base64,{image.data}"' in card and card.count(image.data) == 1
    assert mcp_nb.history().to_frame()["content"].tolist() == [o.content]


def test_a_card_inlines_a_few_megabytes_of_media_at_most_and_names_the_rest():
    picture = "A" * 1_500_000  # 1.1 MB of image each: small enough alone

    @mcp_nb.tool()
    def album() -> t.CallToolResult:
        return t.CallToolResult(content=[t.ImageContent(type="image", data=picture, mime_type="image/png")] * 4)

    card = outcome_html(mcp_nb.call("album"))
    assert card.count(picture) == 2 and len(card) < 3_100_000
    assert card.count("image image/png, 1.1 MB: not shown, the card holds 2.2 MB of media already (o.media has it)") == 2


def test_an_outcome_keeps_its_media_across_a_process_boundary():
    import pickle

    @mcp_nb.tool()
    def logo() -> Image:
        return Image(data=PNG, format="png")

    o = pickle.loads(pickle.dumps(mcp_nb.call("logo")))  # as a dask worker sends it back
    assert type(o.content) is str and o.content == "[image image/png]" and o.media[0].data == PNG64
    assert PNG64 in o._repr_html_()
