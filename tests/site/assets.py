"""Non-HTML responses: JSON, a PDF download, a PNG, plain text and a 204.

They exist to check that non-HTML bodies pass through byte for byte and
that a request which needs no browser reaches the site exactly once.
The PDF and PNG are built here in code so that no binary file is checked in.
"""

from __future__ import annotations

import struct
import zlib

from aiohttp import web

routes = web.RouteTableDef()


def build_pdf() -> bytes:
    """A one-page PDF saying "Hello café" with a correct xref table.

    The header's comment line and the ``é`` (WinAnsi 0xE9) make the file
    contain bytes that are not ASCII, as real PDFs do.
    """
    content = b"BT /F1 18 Tf 20 40 Td (Hello caf\xe9) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100]"
            b" /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
        ),
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        (b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"),
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref_at
    return bytes(out)


def build_png(width: int = 4, height: int = 3) -> bytes:
    """A small RGB PNG with a simple colour gradient."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    rows = b"".join(
        b"\x00"  # filter type: none
        + b"".join(bytes((x * 60, y * 80, 200)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PDF_BYTES = build_pdf()
PNG_BYTES = build_png()


@routes.get("/json")
async def json_route(request: web.Request) -> web.Response:
    """A fixed JSON document."""
    return web.json_response({"ok": True, "items": [1, 2, 3]})


@routes.get("/pdf")
async def pdf(request: web.Request) -> web.Response:
    """A PDF served as an attachment (a browser would download it)."""
    return web.Response(
        body=PDF_BYTES,
        headers={
            "Content-Type": "application/pdf",
            "Content-Disposition": 'attachment; filename="doc.pdf"',
        },
    )


@routes.get("/image.png")
async def image(request: web.Request) -> web.Response:
    """A small valid PNG."""
    return web.Response(body=PNG_BYTES, headers={"Content-Type": "image/png"})


@routes.get("/text")
async def text(request: web.Request) -> web.Response:
    """Plain text: ``hello plain text``."""
    return web.Response(text="hello plain text", content_type="text/plain")


@routes.get("/204")
async def no_content(request: web.Request) -> web.Response:
    """204 No Content, no body."""
    return web.Response(status=204)
