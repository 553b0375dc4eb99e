"""Pages do not reach the crawler's own machine (issue 31): a request a page
starts itself (``fetch()``, an iframe) to a non-public address is refused
before it leaves the browser, after DNS resolution (``localhost``), unless the
address is the page's own host's; ``CDP_POOL_ALLOW_PRIVATE_NETWORKS`` allows
them all. The page that plays the outsider is served from 127.0.0.2, another
address than the local service's 127.0.0.1 (a public page's case: it has no
non-public address of its own)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode, urlsplit

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import PrivateNavigationRefused
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}
SECRET = "SECRET-7f3a"  # noqa: S105 (what the test site serves)
#: the probe's requests to the service: two fetches, and the iframe where the
#: backend loads iframes (Lightpanda 1.0.2 does not without
#: ``--load-resources iframe``)
REQUESTS = {"lightpanda": 2, "chromium": 3}


@pytest.fixture(scope="module")
def outsider() -> Iterator[SiteServer]:
    """The test site on 127.0.0.2: a page from another address."""
    server = SiteServer(host="127.0.0.2")
    yield server
    server.stop()


def _probe(page_site: SiteServer, service: SiteServer) -> str:
    """A page of ``page_site`` fetching the service's secret by IP and by
    name (``localhost``, resolved by DNS), and framing it by IP."""
    port = urlsplit(service.base).port
    by_ip = f"http://127.0.0.1:{port}/private/secret"
    by_name = f"http://localhost:{port}/private/secret?by=name"
    frame = f"http://127.0.0.1:{port}/private/secret?by=frame"
    query = urlencode([("target", by_ip), ("target", by_name), ("frame", frame)])
    return page_site.url(f"/private/probe?{query}")


def _request(url: str) -> scrapy.Request:
    return scrapy.Request(url, meta={"cdp": True, "cdp_actions": [["wait_for_selector", "#done"]]})


def _secret_hits(site: SiteServer) -> int:
    hits: dict[str, int] = site.stats()["hits"]
    return hits.get("/private/secret", 0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_page_from_another_address_does_not_reach_a_local_service(
    site: SiteServer, outsider: SiteServer, backend: str
) -> None:
    before = _secret_hits(site)
    spider, crawler = await crawl([_request(_probe(outsider, site))], BACKENDS[backend])
    assert not spider.failures
    (response,) = spider.responses
    assert SECRET not in response.text
    assert response.css("#out-0::text").get() == "refused"
    assert response.css("#out-1::text").get() == "refused"
    # refused before leaving the browser: the service never saw them
    assert _secret_hits(site) == before
    stats = crawler.stats.get_stats()
    assert stats.get("cdp_pool/private_network_blocked") == REQUESTS[backend]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_private_networks_allowed_reach_the_local_service(
    site: SiteServer, outsider: SiteServer, backend: str
) -> None:
    before = _secret_hits(site)
    spider, crawler = await crawl(
        [_request(_probe(outsider, site))],
        {**BACKENDS[backend], "CDP_POOL_ALLOW_PRIVATE_NETWORKS": True},
    )
    (response,) = spider.responses
    assert response.css("#out-0::text").get() == SECRET
    assert response.css("#out-1::text").get() == SECRET
    assert _secret_hits(site) - before == REQUESTS[backend]
    assert "cdp_pool/private_network_blocked" not in crawler.stats.get_stats()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_local_page_reaches_its_own_address(site: SiteServer, backend: str) -> None:
    """The spider's own request to a local site, and that page's requests to
    its own address (any port, by name too), are not refused by default."""
    before = _secret_hits(site)
    spider, crawler = await crawl([_request(_probe(site, site))], BACKENDS[backend])
    (response,) = spider.responses
    assert response.css("#out-0::text").get() == SECRET
    assert response.css("#out-1::text").get() == SECRET
    assert _secret_hits(site) - before == REQUESTS[backend]
    assert "cdp_pool/private_network_blocked" not in crawler.stats.get_stats()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_redirect_into_a_private_address_is_refused(
    site: SiteServer, outsider: SiteServer, backend: str
) -> None:
    """A page's request to its own host that redirects to a local service:
    the hop the browser follows is asked about as well."""
    port = urlsplit(site.base).port
    hop = outsider.url(
        "/private/redirect?" + urlencode({"to": f"http://127.0.0.1:{port}/private/secret"})
    )
    before = _secret_hits(site)
    page = outsider.url("/private/probe?" + urlencode({"target": hop}))
    spider, crawler = await crawl([_request(page)], BACKENDS[backend])
    (response,) = spider.responses
    assert response.css("#out-0::text").get() == "refused"
    assert _secret_hits(site) == before
    assert crawler.stats.get_stats().get("cdp_pool/private_network_blocked") == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_page_navigating_itself_into_a_private_address_fails_by_name(
    site: SiteServer, outsider: SiteServer, backend: str
) -> None:
    """The page's own navigation of its main frame to a local service is
    refused, and the request fails naming why (before: a 200 response of the
    requested URL whose body was the browser's error page)."""
    port = urlsplit(site.base).port
    target = f"http://127.0.0.1:{port}/private/secret?by=navigation"
    before = _secret_hits(site)
    page = outsider.url("/private/leave?" + urlencode({"to": target}))
    spider, crawler = await crawl([scrapy.Request(page, meta={"cdp": True})], BACKENDS[backend])
    assert not spider.responses, [(r.status, r.text[:200]) for r in spider.responses]
    (failure,) = spider.failures
    assert isinstance(failure.value, PrivateNavigationRefused)
    assert "private network" in str(failure.value)
    assert target in str(failure.value)
    assert _secret_hits(site) == before
    assert crawler.stats.get_stats().get("cdp_pool/errors/PrivateNavigationRefused") == 1
