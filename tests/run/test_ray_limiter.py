"""The cluster-wide rate limiter at the real scale (``--rpm 600``, 60-second windows) on a simulated clock.

The end-to-end test through Ray (tests/run/test_ray.py) checks the arrivals at a real server over
3-second windows, because 60-second ones take minutes. This one checks the limiter's own logic at
the real scale: the same :class:`ModelLimits` the Ray actor holds, with time simulated, so that ten
minutes of greedy workers take well under a second.
"""

from __future__ import annotations

import asyncio
import bisect
import types

import pytest

pytest.importorskip("ray")

from counterbench.run import limits as limits_module
from counterbench.run import ray_actors
from counterbench.run.limits import TokenBucket
from counterbench.run.ray_actors import ModelLimits


class SimulatedClock:
    """``time.monotonic`` and ``asyncio.sleep`` on simulated time: a sleep moves the clock forward.

    Exact here because the limiter serialises its waiters: at most one task sleeps at a time. A
    sleep lasts at least a microsecond, as a real one does (a shorter step could vanish in rounding).
    """

    def __init__(self) -> None:
        self.now = 1000.0
        self._sleep = asyncio.sleep

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.now += max(1e-6, delay)
        await self._sleep(0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> SimulatedClock:
    simulated = SimulatedClock()
    fake_time = types.SimpleNamespace(monotonic=simulated.monotonic)
    monkeypatch.setattr(limits_module, "time", fake_time)
    monkeypatch.setattr(ray_actors, "time", fake_time)
    monkeypatch.setattr(asyncio, "sleep", simulated.sleep)
    return simulated


def _greedy_starts(clock: SimulatedClock, acquire: object, workers: int, duration_s: float) -> list[float]:
    """Permit times when ``workers`` tasks each ask for the next permit as soon as they get one."""
    starts: list[float] = []
    end = clock.now + duration_s

    async def worker() -> None:
        while clock.now < end:
            await acquire()  # type: ignore[operator]
            starts.append(clock.now)

    async def main() -> None:
        await asyncio.gather(*(worker() for _ in range(workers)))

    asyncio.run(main())
    return sorted(starts)


def _max_in_window(starts: list[float], window_s: float) -> int:
    """The largest number of starts in any half-open window [t, t + window_s) (t at a start suffices)."""
    return max(bisect.bisect_left(starts, t + window_s) - i for i, t in enumerate(starts))


def test_no_60_second_window_exceeds_rpm(clock: SimulatedClock) -> None:
    limits = ModelLimits(rpm=600, tpm=None, largest_request=0)
    starts = _greedy_starts(clock, lambda: limits.acquire("requests", 1.0), workers=16, duration_s=600)
    assert len(starts) > 5_800  # ten minutes of greedy workers at 10 requests/s
    assert _max_in_window(starts, 60.0) <= 600
    # ... and within the 1% guard the limiter keeps for requests that travel longer than others
    assert _max_in_window(starts, 60.6) <= 600
    assert _max_in_window(starts, 60.0) >= 590  # the limit binds: the rate is used, not wasted


def test_the_request_bucket_alone_would_exceed_a_minute(clock: SimulatedClock) -> None:
    """Why the window log exists: the pacing bucket's one-second burst comes on top of 60 s of rate."""
    bucket = TokenBucket(600 / 60.0, 10.0)
    starts = _greedy_starts(clock, bucket.acquire, workers=16, duration_s=120)
    assert _max_in_window(starts, 60.0) > 600


def test_a_shorter_window_is_a_stricter_guarantee(clock: SimulatedClock) -> None:
    """At most 30 starts in every 3-second window implies at most 600 in every 60-second one.

    A 60-second window is the union of twenty disjoint 3-second windows, each holding at most 30.
    This is why the end-to-end test through Ray may check 3-second windows.
    """
    limits = ModelLimits(rpm=600, tpm=None, largest_request=0, window_s=3.0)
    starts = _greedy_starts(clock, lambda: limits.acquire("requests", 1.0), workers=16, duration_s=300)
    assert _max_in_window(starts, 3.0) <= 30
    assert _max_in_window(starts, 60.0) <= 600
