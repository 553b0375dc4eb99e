"""What a main document is, from its status, headers and first bytes: taken
as its bytes or rendered, HTML or not, labelled or not, shareable between
profiles; and the request headers as a browser can send them. Pure functions
(no browser), used by :mod:`~scrapy_cdp_pool.render._page.interception` and
:mod:`~scrapy_cdp_pool.render._page.document_response` at the ``Fetch`` pauses."""

from __future__ import annotations

from urllib.parse import urlsplit

from scrapy.http import HtmlResponse
from scrapy.responsetypes import responsetypes

#: the ``Content-Type`` values of a document the browser renders
HTML_TYPES = ("text/html", "application/xhtml+xml")
#: statuses whose response has no body
NO_BODY_STATUSES = (204, 205, 304)


def is_raw_document(status: int, headers: list[tuple[str, str]]) -> bool:
    """Whether a main document is returned as its original bytes rather than
    rendered: no body by status, an attachment, or not HTML."""
    if status in NO_BODY_STATUSES:
        return True
    content_type = disposition = ""
    for name, value in headers:
        lowered = name.lower()
        if lowered == "content-type":
            content_type = value.split(";")[0].strip().lower()
        elif lowered == "content-disposition":
            disposition = value.strip().lower()
    if disposition.startswith("attachment"):
        return True
    return bool(content_type) and content_type not in HTML_TYPES


#: ``Content-Type`` values, besides ``text/*``, of a document a browser shows
#: as text (and Playwright's page actions run on): JSON, XML, scripts
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript")


def is_displayed_text(status: int, headers: list[tuple[str, str]]) -> bool:
    """Whether a raw document (:func:`is_raw_document`) is one a browser shows
    as text: labelled ``text/*`` (not HTML), JSON, XML or a script (a
    ``+json``/``+xml`` type too), not an attachment, with a body by status."""
    if status in NO_BODY_STATUSES:
        return False
    content_type = ""
    for name, value in headers:
        lowered = name.lower()
        if lowered == "content-type":
            content_type = value.split(";")[0].strip().lower()
        elif lowered == "content-disposition" and value.strip().lower().startswith("attachment"):
            return False
    return (
        content_type.startswith("text/")
        or content_type in _TEXT_TYPES
        or content_type.endswith(("+json", "+xml"))
    ) and content_type not in HTML_TYPES


def joined(headers: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """A request's headers, a repeated one's values joined with ", " in one
    header (RFC 9110 5.3): the browsers keep only the last entry of a name
    handed to them several times, so ``[("X", "foo"), ("X", "bar")]`` sent
    only ``X: bar``. First spelling and order of names kept."""
    values: dict[str, tuple[str, list[str]]] = {}
    for name, value in headers:
        values.setdefault(name.lower(), (name, []))[1].append(value)
    return [(name, ", ".join(parts)) for name, parts in values.values()]


#: byte order marks of the encodings the HTML standard sniffs, and the charset
#: each one means (its "BOM sniffing" step; UTF-8's needs no label)
_UTF16_BOMS = ((b"\xff\xfe", "utf-16le"), (b"\xfe\xff", "utf-16be"))


def bom_charset(body: bytes) -> str | None:
    """The charset ``body``'s UTF-16 byte order mark names, ``None`` for none."""
    return next((charset for bom, charset in _UTF16_BOMS if body.startswith(bom)), None)


def names_no_charset(headers: list[tuple[str, str]]) -> bool:
    """Whether the ``Content-Type`` (if any) names no charset."""
    return not any(
        name.lower() == "content-type" and "charset=" in value.lower() for name, value in headers
    )


def same_origin(url: str, other: str) -> bool:
    """Whether two URLs have one origin: scheme, host and port (the scheme's
    default port when none is written)."""
    a, b = urlsplit(url), urlsplit(other)
    defaults = {"http": 80, "https": 443}
    try:
        ports = (a.port or defaults.get(a.scheme), b.port or defaults.get(b.scheme))
    except ValueError:  # a port that is not a number
        return False
    return (a.scheme, a.hostname) == (b.scheme, b.hostname) and ports[0] == ports[1]


def is_unlabelled(headers: list[tuple[str, str]]) -> bool:
    """Whether a response has no ``Content-Type`` (or an empty one), so its
    body must be looked at to know what it is."""
    return not any(
        name.lower() == "content-type" and value.split(";")[0].strip() for name, value in headers
    )


def looks_like_html(url: str, body: bytes) -> bool:
    """Whether an unlabelled body is HTML, as Scrapy decides for a plain
    request (its URL's extension, then the body's first bytes)."""
    response_class = responsetypes.from_args(url=url, body=body[:5000])
    return issubclass(response_class, HtmlResponse)


def shareable(headers: list[dict[str, str]]) -> bool:
    """Whether a response with these CDP headers (``[{"name", "value"}]``)
    may be served from a cache to another profile or cookie jar: not when
    it sets a cookie, is ``Cache-Control: private``, or has a ``Vary`` naming
    ``Cookie`` (or ``*``)."""
    for header in headers:
        name = header.get("name", "").lower()
        fields = {f.strip().lower() for f in header.get("value", "").split(",")}
        if name == "set-cookie":
            return False
        if name == "vary" and ("cookie" in fields or "*" in fields):
            return False
        if name == "cache-control" and any(f.startswith("private") for f in fields):
            return False
    return True


def content_length(headers: list[tuple[str, str]]) -> int | None:
    """The ``Content-Length`` as a number, ``None`` without a valid one."""
    for name, value in headers:
        if name.lower() == "content-length" and value.strip().isdigit():
            return int(value)
    return None


def cdp_resource_type(name: str) -> str:
    """CDP's spelling of a resource type named in lower case (``xhr`` ->
    ``XHR``, ``script`` -> ``Script``)."""
    special = {
        "xhr": "XHR",
        "texttrack": "TextTrack",
        "eventsource": "EventSource",
        "websocket": "WebSocket",
        "signedexchange": "SignedExchange",
        "cspviolationreport": "CSPViolationReport",
    }
    return special.get(name, name.capitalize())
