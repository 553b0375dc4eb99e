"""``/enc/page``: one text in the encodings a site may send (issue 27 item 7).

``?codec=C&bom=1&header=1&meta=1``: the page, encoded with Python codec ``C``
(``utf-16-le``, ``utf-16-be``, ``utf-32-le``, ``utf-32-be``, ``windows-1252``,
``shift_jis``...), with its byte order mark (``bom=1``), its charset in the
``Content-Type`` header (``header=1``) and/or only in a ``<meta charset>``
(``meta=1``). Its ``#t`` paragraph holds :data:`TEXT` (in ``shift_jis`` and
``windows-1252``, the part the codec can write).
"""

from __future__ import annotations

import codecs

from aiohttp import web

routes = web.RouteTableDef()

#: the text of ``#t``: Latin, accented, Euro sign, Japanese
TEXT = "caf\u00e9 \u20ac \u65e5\u672c"
_BOMS = {
    "utf-16-le": codecs.BOM_UTF16_LE,
    "utf-16-be": codecs.BOM_UTF16_BE,
    "utf-32-le": codecs.BOM_UTF32_LE,
    "utf-32-be": codecs.BOM_UTF32_BE,
    "utf-8": codecs.BOM_UTF8,
}
#: the charset label a page names for a codec
LABELS = {"utf-16-le": "utf-16le", "utf-16-be": "utf-16be", "utf-32-le": "utf-32le",
          "utf-32-be": "utf-32be"}  # fmt: skip


def text_in(codec: str) -> str:
    """:data:`TEXT` as far as ``codec`` can write it."""
    return TEXT.encode(codec, errors="ignore").decode(codec)


@routes.get("/enc/page")
async def page(request: web.Request) -> web.Response:
    codec = request.query.get("codec", "utf-8")
    label = LABELS.get(codec, codec)
    meta = f'<meta charset="{label}">' if request.query.get("meta") == "1" else ""
    html = (
        f"<!doctype html><html><head>{meta}<title>Encoded</title></head>"
        f'<body><p id="t">{text_in(codec)}</p></body></html>'
    )
    body = html.encode(codec, errors="ignore")
    if request.query.get("bom") == "1":
        body = _BOMS[codec] + body
    content_type = "text/html"
    if request.query.get("header") == "1":
        content_type += f"; charset={label}"
    return web.Response(body=body, headers={"Content-Type": content_type})
