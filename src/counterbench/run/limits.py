"""Rate limits (requests and tokens per minute) and the adaptive concurrency limit for the run engine (the
retry policy is a run option: :class:`counterbench.options.RetryPolicy`)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import time
from dataclasses import dataclass

from counterbench.errors import UserError


class AdaptiveLimit:
    """A concurrency limit shared by one model's requests that shrinks when the provider is overloaded.

    Additive increase, multiplicative decrease (as TCP, and as the adaptive-concurrency modes of
    evaluation harnesses do): every overload signal (HTTP 429/503/529) cuts the limit by
    ``decrease`` — at most once per ``cut_interval`` seconds, so one burst of refusals counts once —
    down to ``minimum``; every success adds ``1 / limit``, i.e. one more request in flight per
    round of ``limit`` successes, up to the user's ``--concurrency``. :meth:`acquire` is a plain
    counter check while the limit is not reached; :meth:`close` lets every waiter go (a stopping run).

    A server-wide ``Retry-After`` pauses the whole lane: when, within ``window`` seconds, at least
    ``burst`` overload refusals carried a ``Retry-After`` and they outnumber the answers received in
    that window, no request is let go until that ``Retry-After`` (counted from the latest such
    refusal) is over — the requests in flight finish, nothing new is sent. A refusal now and then
    among answers (one prompt refused) pauses nothing: only that request waits.
    """

    def __init__(
        self, maximum: int, *, decrease: float = 0.75, minimum: int = 1, cut_interval: float = 0.5,
        burst: int = 3, window: float = 2.0,
    ) -> None:
        self.maximum = float(maximum)
        self.limit = float(maximum)
        self.minimum = float(max(1, min(minimum, maximum)))
        self.decrease = decrease
        self.cut_interval = cut_interval
        self.in_flight = 0
        self.cuts = 0
        self.closed = False
        self._last_cut = -math.inf
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self.burst = max(1, burst)
        self.window = window
        #: recent outcomes in the window, ``(time, refused with Retry-After)``, and how many were refused
        self._recent: collections.deque[tuple[float, bool]] = collections.deque()
        self._refused = 0
        #: no request is let go before this (``time.monotonic()``); ``pauses`` counts the lane's pauses
        self.resume_at = -math.inf
        self.pauses = 0
        self._resume_timer: asyncio.TimerHandle | None = None

    def paused(self) -> bool:
        """Is the lane sitting out a server-wide ``Retry-After``?"""
        return not self.closed and self.resume_at > time.monotonic()

    async def acquire(self) -> None:
        if self.closed or (self.in_flight < int(self.limit) and not self._waiters and not self.paused()):
            self.in_flight += 1
            return
        loop = asyncio.get_running_loop()
        if self._resume_timer is None and self.paused():  # a pause begun outside an event loop
            self._resume_timer = loop.call_later(self.resume_at - time.monotonic(), self._resume)
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # granted, then cancelled: give the slot back
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(future)
            raise

    def release(self) -> None:
        self.in_flight -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        if self.paused():
            return  # the timer set by the pause wakes the waiters when it is over
        waiters = self._waiters
        while waiters and (self.closed or self.in_flight < int(self.limit)):
            future = waiters.popleft()
            if not future.done():
                self.in_flight += 1
                future.set_result(None)

    def on_success(self) -> None:
        if self._refused:  # answers count against a pause only while refusals are in the window
            self._note(time.monotonic(), refused=False)
        if self.limit < self.maximum:
            self.limit = min(self.maximum, self.limit + 1.0 / self.limit)
            if self._waiters:
                self._wake()

    def on_overload(self, retry_after: float | None = None) -> None:
        """An overload refusal; ``retry_after`` is its ``Retry-After`` in seconds (already capped), if any."""
        now = time.monotonic()
        if now - self._last_cut >= self.cut_interval:
            self._last_cut = now
            self.limit = max(self.minimum, self.limit * self.decrease)
            self.cuts += 1
        if retry_after is None or not retry_after > 0 or not math.isfinite(retry_after):
            return
        self._note(now, refused=True)
        if self._refused >= self.burst and 2 * self._refused > len(self._recent):
            self._pause_until(now + retry_after)

    def _note(self, now: float, *, refused: bool) -> None:
        recent = self._recent
        recent.append((now, refused))
        self._refused += refused
        horizon = now - self.window
        while recent and recent[0][0] < horizon:
            self._refused -= recent.popleft()[1]

    def _pause_until(self, resume_at: float) -> None:
        if resume_at <= self.resume_at:
            return
        if self.resume_at <= time.monotonic():
            self.pauses += 1  # a new pause, not a longer one
        self.resume_at = resume_at
        if self._resume_timer is not None:
            self._resume_timer.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop, so nobody waits: acquire() sees the pause itself
            self._resume_timer = None
            return
        self._resume_timer = loop.call_later(resume_at - time.monotonic(), self._resume)

    def _resume(self) -> None:
        """The pause is over (the loop's timer may fire a hair early: it is over all the same)."""
        self._resume_timer = None
        self.resume_at = -math.inf
        self._wake()

    def close(self) -> None:
        self.closed = True
        if self._resume_timer is not None:
            self._resume_timer.cancel()
        self._wake()


class TokenBucket:
    """A token bucket refilled at ``rate_per_s``; holds at most ``capacity`` tokens.

    :meth:`acquire` waits until ``amount`` tokens are available and takes them; :meth:`settle`
    corrects a reservation once the true amount is known (the balance may go negative: the debt is
    paid back by waiting before the next request).
    """

    def __init__(self, rate_per_s: float, capacity: float) -> None:
        self.rate = rate_per_s
        self.capacity = capacity
        self.level = capacity
        self.stamp = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        amount = min(amount, self.capacity)
        async with self._lock:  # FIFO: one waiter at a time drains the bucket
            while True:
                self._refill()
                if self.level >= amount:
                    self.level -= amount
                    return
                await asyncio.sleep((amount - self.level) / self.rate)

    def settle(self, delta: float) -> None:
        """Take ``delta`` more tokens (or give back when negative)."""
        self._refill()
        self.level = min(self.capacity, self.level - delta)


@dataclass
class RateLimits:
    """Optional per-backend limits; ``None`` disables a limit."""

    rpm: float | None = None
    tpm: float | None = None

    def __post_init__(self) -> None:
        for name, value in (("--rpm", self.rpm), ("--tpm", self.tpm)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise UserError(f"{name} must be a number greater than 0, got {value:g}")

    def request_bucket(self) -> TokenBucket | None:
        if self.rpm is None:
            return None
        rate = self.rpm / 60.0
        return TokenBucket(rate, max(1.0, rate))

    def token_bucket(self, largest_request: int) -> TokenBucket | None:
        if self.tpm is None:
            return None
        rate = self.tpm / 60.0
        return TokenBucket(rate, max(rate, float(largest_request)))
