"""The ladder's one exception."""

from __future__ import annotations

from dataclasses import dataclass

from scrapy_cdp_pool.messages import cap_message


@dataclass(frozen=True)
class RungResult:
    """What one rung gave a request: ``outcome`` is ``"met"``,
    ``"incomplete: <what was missing>"`` or ``"<ErrorClass>: <message>"``;
    ``seconds`` its wall time."""

    rung: str
    outcome: str
    seconds: float

    def as_dict(self) -> dict[str, object]:
        return {"rung": self.rung, "outcome": self.outcome, "seconds": round(self.seconds, 3)}


class ExpectationNotMet(Exception):
    """A request's expectation (``meta["cdp_expect"]`` or ``CDP_POOL_EXPECT``)
    was met on no rung of the ladder. ``results`` holds every rung's outcome,
    in order; ``kind`` is the request's page kind. Not retried by Scrapy (it is
    not a download error): every rung was tried once already."""

    def __init__(self, request_text: str, kind: str, results: list[RungResult]) -> None:
        tried = "; ".join(f"{r.rung}: {r.outcome}" for r in results)
        super().__init__(cap_message(f"{request_text}: expectation met on no rung ({tried})"))
        self.kind = kind
        self.results = results
