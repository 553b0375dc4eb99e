"""CDP messages through orjson (scrapy_cdp_pool/browser/cdp/codec.py): what orjson
refuses and the standard library accepts gives the same value as before."""

from __future__ import annotations

import json

import pytest

from scrapy_cdp_pool.browser.cdp import codec


@pytest.mark.parametrize(
    "raw",
    [
        # a DOM with a lone surrogate, as Chromium escapes it
        b'{"id": 3, "result": {"result": {"type": "string", "value": "a\\ud800b"}}}',
        b'{"id": 4, "result": {"n": 18446744073709551615, "m": -9223372036854775808}}',
        # ordinary messages
        b'{"method": "Page.loadEventFired", "params": {"timestamp": 1.5}, "sessionId": "S"}',
        '{"id": 5, "result": {"value": "caf\u00e9 \u2603"}}'.encode(),
    ],
)
def test_decoding_gives_what_the_standard_library_gives(raw: bytes) -> None:
    assert codec.decode(raw) == json.loads(raw)


def test_an_integer_beyond_64_bits_is_read_as_a_float() -> None:
    assert codec.decode(b'{"n": 123456789012345678901234567890}') == {"n": 1.2345678901234568e29}


def test_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Expecting property name"):
        codec.decode(b"{not json")


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "Runtime.evaluate", "params": {"expression": "'\ud800'"}},
        {"id": 2, "method": "X.y", "params": {"n": 1 << 70}},
        {"id": 3, "method": "Page.navigate", "params": {"url": "http://h/caf\u00e9"}},
    ],
)
def test_encoding_round_trips(message: dict) -> None:
    assert json.loads(codec.encode(message)) == message
