"""Retry policy and rate limits (requests and tokens per minute) for the run engine."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

from counterbench.errors import UserError


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; a server's ``Retry-After`` is honoured (up to a cap).

    Attempt ``n`` (1-based) that failed with a retryable error waits a random time in
    ``[d/2, d]`` with ``d = min(max_delay, base_delay * 2**(n-1))`` — or the server's Retry-After
    if that is longer (capped at ``max_retry_after``).
    """

    max_attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise UserError(f"--max-attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise UserError("retry delays must not be negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        wait = random.uniform(ceiling / 2, ceiling)
        if retry_after is not None and retry_after > wait:
            wait = min(retry_after, self.max_retry_after) + random.uniform(0, 0.05 * ceiling)
        return wait


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
            if value is not None and value <= 0:
                raise UserError(f"{name} must be greater than 0, got {value:g}")

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
