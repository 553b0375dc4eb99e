"""The live page's relay (render/_live/live_relay.py) against a real embedded
Lightpanda, spoken to as Playwright would: private (one client, at its secret
path only), and scoped to the request's context and page."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from scrapy_cdp_pool.browser.cdp import CDPConnection
from scrapy_cdp_pool.browser.pool.servers import LightpandaServer
from scrapy_cdp_pool.render._live.live_relay import LiveRelay
from scrapy_cdp_pool.settings.config import PoolConfig


class Client:
    """A CDP client on the relay, as Playwright's."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.ids = 0
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, params: dict[str, Any] | None = None, **extra: Any) -> Any:
        self.ids += 1
        await self.ws.send(json.dumps({"id": self.ids, "method": method, "params": params or {},
                                       **extra}))  # fmt: skip
        while True:
            message = json.loads(await self.ws.recv())
            if message.get("id") == self.ids:
                return message
            self.events.append(message)


async def _page(cdp: CDPConnection, url: str) -> tuple[str, str]:
    context = (await cdp.send("Target.createBrowserContext"))["browserContextId"]
    target = await cdp.send("Target.createTarget", {"url": url, "browserContextId": context})
    return context, target["targetId"]


async def _lightpanda() -> AsyncIterator[tuple[LightpandaServer, CDPConnection]]:
    server = LightpandaServer(PoolConfig())
    await server.ensure_running()
    try:
        cdp = await server.connect(await server.server_info(10), 10)
        try:
            yield server, cdp
        finally:
            await cdp.close()
    finally:
        await server.stop()


@pytest_twisted.ensureDeferred
async def test_the_relay_takes_one_client_at_its_secret_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    await Deferred.fromFuture(asyncio.ensure_future(_one_client(caplog)))


async def _one_client(caplog: pytest.LogCaptureFixture) -> None:
    async for _, cdp in _lightpanda():
        context, target = await _page(cdp, "about:blank")
        relay = LiveRelay(cdp, context, target, "about:blank", None)
        url = await relay.start()
        base = url.rsplit("/", 1)[0]
        with pytest.raises(InvalidStatus) as wrong:
            await connect(base + "/not-the-token")
        assert wrong.value.response.status_code == 404
        async with connect(url) as ws:
            with pytest.raises((InvalidStatus, OSError)):  # a second client: 404, or not listening
                await connect(url, open_timeout=5)
            version = await Client(ws).send("Browser.getVersion")
            assert "product" in version["result"]
        await asyncio.wait_for(relay.done.wait(), 10)
        assert relay.reason == "Playwright disconnected"
        with caplog.at_level(logging.WARNING):
            await relay.close()
        assert relay.refused >= 1
        assert relay.token not in caplog.text
        assert any("refused" in r.getMessage() for r in caplog.records)


@pytest_twisted.ensureDeferred
async def test_the_relay_shows_one_context_and_one_page() -> None:
    await Deferred.fromFuture(asyncio.ensure_future(_one_context()))


async def _one_context() -> None:
    async for _, cdp in _lightpanda():
        context, target = await _page(cdp, "data:text/html,<p>ours</p>")
        relay = LiveRelay(cdp, context, target, "data:text/html,<p>ours</p>", None)
        url = await relay.start()
        async with connect(url) as ws:
            client = Client(ws)
            auto = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
            answer = await client.send("Target.setAutoAttach", auto)
            assert answer["result"] == {}
            [attached] = [e for e in client.events if e["method"] == "Target.attachedToTarget"]
            info = attached["params"]["targetInfo"]
            assert (info["targetId"], info["browserContextId"]) == (target, context)
            session = attached["params"]["sessionId"]
            targets = (await client.send("Target.getTargets"))["result"]["targetInfos"]
            assert [t["targetId"] for t in targets] == [target]
            contexts = (await client.send("Target.getBrowserContexts"))["result"]
            assert contexts == {"browserContextIds": [context]}
            for method in ("Target.createTarget", "Target.createBrowserContext",
                           "Target.attachToBrowserTarget", "Browser.crash"):  # fmt: skip
                refused = await client.send(method, {"url": "about:blank"})
                assert "is not available through a live page" in refused["error"]["message"]
            other = await client.send("Target.closeTarget", {"targetId": "another"})
            assert "no target" in other["error"]["message"]
            stranger = await client.send("Runtime.evaluate", {"expression": "1"}, sessionId="S-x")
            assert "no session" in stranger["error"]["message"]
            # Cookies: the request's context, whatever context Playwright names.
            await client.send("Storage.setCookies", {"browserContextId": "someone-else",
                              "cookies": [{"name": "a", "value": "1", "domain": "example.com",
                                           "path": "/"}]})  # fmt: skip
            ours = await cdp.send("Storage.getCookies", {"browserContextId": context})
            assert [c["name"] for c in ours["cookies"]] == ["a"]
            evaluated = await client.send(
                "Runtime.evaluate", {"expression": "document.body.textContent"}, sessionId=session
            )
            assert evaluated["result"]["result"]["value"] == "ours"
            assert evaluated["sessionId"] == session
            closed = await client.send("Target.closeTarget", {"targetId": target})
            assert closed["result"]["success"] is True
            await asyncio.wait_for(relay.done.wait(), 10)
            assert relay.reason == "the page was closed"
        await relay.close()
