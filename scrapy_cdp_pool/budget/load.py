"""Load samples and when they say "overloaded".

A :class:`LoadSample` is what the budget's monitor measures at one instant: the
CDP servers' memory, the machine's CPU, the event loop's lag, and the most
pages that were in flight since the previous sample. Over a window of samples,
:meth:`LoadThresholds.overloaded` names each signal that was above its bound in
more than :attr:`~LoadThresholds.overloaded_fraction` of the samples that
measured it. Plain data and pure functions: the autoscaling decision can be
tested with made-up samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: The signals, in the order they are reported.
SIGNALS = ("memory", "cpu", "loop_lag")


@dataclass(frozen=True)
class LoadSample:
    """One measurement.

    ``server_memory_mb``: the embedded CDP servers' process trees (PSS where the
    OS gives it, else RSS), mebibytes; ``None`` when not measurable (remote
    endpoints, no pool started yet). ``cpu_ratio``: the machine's CPU busy
    share since the previous sample, 0 to 1. ``loop_lag_s``: how late the
    event loop ran the sampler, seconds. ``pages_in_flight``: the most pages
    in flight under the budget since the previous sample.
    """

    server_memory_mb: float | None = None
    cpu_ratio: float | None = None
    loop_lag_s: float | None = None
    pages_in_flight: int = 0


@dataclass(frozen=True)
class LoadThresholds:
    """When a sample is overloaded, and when a window is.

    ``memory_limit_mb``: server memory above it is overloaded; ``None``: above
    ``memory_share`` of the machine's memory. ``cpu_ratio``: CPU busy share
    above it is overloaded (``1.0`` never is). ``loop_lag_s``: event-loop lag
    above it is overloaded. A window is overloaded on a signal when more than
    ``overloaded_fraction`` of its samples that measured the signal are.

    :raises ValueError: a value out of range, naming it.
    """

    memory_limit_mb: float | None = None
    memory_share: float = 0.7
    cpu_ratio: float = 0.95
    loop_lag_s: float = 0.25
    overloaded_fraction: float = 0.4

    def __post_init__(self) -> None:
        if self.memory_limit_mb is not None and not self.memory_limit_mb > 0:
            raise ValueError(
                f"memory_limit_mb: {self.memory_limit_mb!r} is not a number of megabytes > 0, "
                "or None for a share of the machine's memory"
            )
        for name in ("memory_share", "cpu_ratio"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{name}: {value!r} is not a number > 0 and <= 1")
        if not self.loop_lag_s > 0:
            raise ValueError(f"loop_lag_s: {self.loop_lag_s!r} is not a number of seconds > 0")
        if not 0 <= self.overloaded_fraction < 1:
            raise ValueError(
                f"overloaded_fraction: {self.overloaded_fraction!r} is not a number >= 0 and < 1"
            )

    def memory_bound_mb(self, system_memory_mb: float | None) -> float | None:
        """The server memory above which a sample is overloaded, mebibytes
        (``None``: no bound known)."""
        if self.memory_limit_mb is not None:
            return self.memory_limit_mb
        if system_memory_mb is None:
            return None
        return self.memory_share * system_memory_mb

    def overloaded(
        self, samples: Sequence[LoadSample], system_memory_mb: float | None = None
    ) -> tuple[str, ...]:
        """The signals (``"memory"``, ``"cpu"``, ``"loop_lag"``) overloaded
        over ``samples``; empty when none is. ``system_memory_mb`` is the
        machine's memory, for :attr:`memory_share`."""
        memory_bound = self.memory_bound_mb(system_memory_mb)
        values = {
            "memory": ([s.server_memory_mb for s in samples], memory_bound),
            "cpu": ([s.cpu_ratio for s in samples], self.cpu_ratio),
            "loop_lag": ([s.loop_lag_s for s in samples], self.loop_lag_s),
        }
        return tuple(
            signal for signal in SIGNALS if self._over(values[signal][0], values[signal][1])
        )

    def _over(self, values: list[float | None], bound: float | None) -> bool:
        measured = [v for v in values if v is not None]
        if bound is None or not measured:
            return False
        above = sum(1 for v in measured if v > bound)
        return above / len(measured) > self.overloaded_fraction
