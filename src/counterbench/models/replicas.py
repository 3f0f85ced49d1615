"""Several servers of one model (replicas): requests balanced, a failing replica taken out and retried later.

A ``vllm:`` or ``openai-compatible:`` model may name several base URLs, separated by commas, before
the model name::

    vllm:http://gpu1:8000/v1,http://gpu2:8000/v1,http://gpu3:8000/v1:Qwen/Qwen2.5-7B-Instruct

Every URL must serve the same model with the same weights: the answers are stored under the one
model string (the URL list is part of it, as the URL is for one server; keep the list unchanged to
resume — a dead replica may stay in it).

:class:`ReplicaBackend` sends each request to the live replica with the fewest requests in flight
(ties in turn), so equally fast servers get equal shares and a slower one gets less. A replica whose
request fails for a reason of its own — no connection, a reset, a timeout, a 5xx, a malformed
reply — is taken out for a cooldown (1 s, doubling with each further failure up to 30 s) and the
request goes at once to the next replica. When the cooldown is over, one request at a time tests it;
the first success puts it back. When every replica is out, the one due back first is tried. Errors
that are about the request or the account (4xx, including 429 with its Retry-After) are the
model's answer, not the server's health: they go to the engine, which retries as usual.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from counterbench.models.base import Backend, BackendError, ChatRequest, ChatResult

_SPLIT = re.compile(r",\s*(?=[A-Za-z][A-Za-z0-9+.-]*://)")
COOLDOWN_S = 1.0
MAX_COOLDOWN_S = 30.0


def split_replica_urls(rest: str) -> tuple[list[str], str]:
    """``URL1,URL2,...,URLn:MODEL`` -> (``[URL1, ..., URLn-1]``, ``URLn:MODEL``); no list: ``([], rest)``."""
    parts = _SPLIT.split(rest)
    return [p.strip() for p in parts[:-1]], parts[-1]


@dataclass
class ReplicaState:
    """Health and load of one replica."""

    url: str
    in_flight: int = 0
    requests: int = 0
    answered: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    out_until: float = 0.0

    def usable(self, now: float) -> bool:
        """In service, or due back and not already being tested by another request."""
        if self.out_until > now:
            return False
        return self.consecutive_failures == 0 or self.in_flight == 0


def is_replica_fault(error: BackendError) -> bool:
    """Failures of the server itself (worth another replica): no reply, 5xx, a malformed reply."""
    if error.status is None:
        return True
    return error.status >= 500 or (error.status == 200 and error.retryable)


class ReplicaBackend:
    """One model served by several OpenAI-protocol servers (see the module docstring)."""

    simulated = False

    def __init__(self, replicas: Sequence[Backend], *, cooldown_s: float = COOLDOWN_S,
                 max_cooldown_s: float = MAX_COOLDOWN_S) -> None:
        if not replicas:
            raise ValueError("a replicated model needs at least one replica")
        self.replicas = list(replicas)
        self.name = replicas[0].name
        self.timeout_s = getattr(replicas[0], "timeout_s", None)
        self.enforces_timeout = all(getattr(r, "enforces_timeout", False) for r in replicas)
        self.cooldown_s = cooldown_s
        self.max_cooldown_s = max_cooldown_s
        self.states = [ReplicaState(str(getattr(r, "base_url", i))) for i, r in enumerate(replicas)]
        self._turn = 0

    @property
    def base_url(self) -> str:
        """The first replica's URL: the run records it as the model's endpoint (the model string lists all)."""
        return self.states[0].url

    def structured_mode_for(self, config: Any) -> str:
        """The structured mode every replica uses (they are one server family)."""
        describe = getattr(self.replicas[0], "structured_mode_for", None)
        return str(describe(config)) if callable(describe) else "none"

    def __repr__(self) -> str:
        return f"ReplicaBackend(name={self.name!r}, replicas={[s.url for s in self.states]!r})"

    def _pick(self, tried: set[int]) -> int | None:
        now = time.monotonic()
        n = len(self.states)
        candidates = [i for i in range(n) if i not in tried]
        if not candidates:
            return None
        usable = [i for i in candidates if self.states[i].usable(now)]
        if not usable:  # every untried replica is out: the one due back first
            return min(candidates, key=lambda i: self.states[i].out_until)
        turn = self._turn
        best = min(usable, key=lambda i: (self.states[i].in_flight, (i - turn) % n))
        self._turn = (best + 1) % n
        return best

    async def complete(self, request: ChatRequest) -> ChatResult:
        tried: set[int] = set()
        last: BackendError | None = None
        while (index := self._pick(tried)) is not None:
            tried.add(index)
            state = self.states[index]
            state.in_flight += 1
            state.requests += 1
            try:
                result = await self.replicas[index].complete(request)
            except BackendError as err:
                if not is_replica_fault(err):  # it answered: it is up
                    state.consecutive_failures = 0
                    state.out_until = 0.0
                    raise
                self._take_out(state)
                last = err
                continue
            finally:
                state.in_flight -= 1
            state.answered += 1
            state.consecutive_failures = 0
            state.out_until = 0.0
            return result
        detail = f": {last}" if last is not None else ""
        raise BackendError(f"{self.name}: every replica failed{detail}", retryable=True,
                           status=last.status if last is not None else None,
                           retry_after=last.retry_after if last is not None else None)

    def _take_out(self, state: ReplicaState) -> None:
        state.failures += 1
        state.consecutive_failures += 1
        pause = min(self.max_cooldown_s, self.cooldown_s * 2 ** (state.consecutive_failures - 1))
        state.out_until = time.monotonic() + pause

    def stats(self) -> list[dict[str, Any]]:
        """Per replica: URL, requests sent, answers, failures, and whether it is in service now."""
        now = time.monotonic()
        return [{"url": s.url, "requests": s.requests, "answered": s.answered, "failures": s.failures,
                 "in_service": s.out_until <= now and s.consecutive_failures == 0} for s in self.states]

    async def aclose(self) -> None:
        for replica in self.replicas:
            await replica.aclose()
