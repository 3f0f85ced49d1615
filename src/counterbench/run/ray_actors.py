"""What runs inside the Ray cluster: model workers and the shared rate limiter.

* :class:`ModelWorker` — one Ray actor per replica of a model's client. It holds the backend (its
  own llama.cpp with its own thread count for the embedded model; one async HTTP client for an
  OpenAI-protocol server; the simulated model) and answers *batches* of planned request groups by
  running the run engine itself (:class:`~counterbench.run.engine.Engine`: retries, Retry-After,
  timeouts, parsing, redaction, row building) with a collector in place of the store writer. The
  finished rows go back to the driver, which commits them through its
  :class:`~counterbench.run.writer.BatchWriter` — the store stays the one source of truth.
  A batch is an ordinary (not streaming) actor task, so when the actor's process dies Ray restarts
  the actor and re-runs the whole batch (``max_task_retries``): a batch's rows reach the driver
  once or not at all, and every prompt is stored exactly once.
* :class:`RateLimiter` — one actor per run holding the rpm/tpm budgets of every model, so that the
  provider's limits hold across all actors on all machines: a worker awaits a permit from it before
  each request (:class:`SharedBucket` gives the engine the interface of a local token bucket).

This module imports :mod:`ray` at import time; :mod:`counterbench.run.ray_exec` imports it only
once Ray is known to be installed.
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

from counterbench.models.base import Backend, ChatRequest, ChatResult, GenerationConfig, waiting_turn
from counterbench.options import RetryPolicy
from counterbench.run.costs import Price
from counterbench.run.engine import Engine
from counterbench.run.lane import EngineSettings, Lane
from counterbench.run.limits import RateLimits, TokenBucket
from counterbench.run.parsing import ResponseParser
from counterbench.run.plan import Group, Work
from counterbench.run.progress import RunDisplay
from counterbench.run.redact import Redactor

#: a guard on the limiter's window (a share of it, at least ``WINDOW_GUARD_MIN_S``): a request that
#: reaches the provider up to this much later than others still cannot push a window over the limit
WINDOW_GUARD = 0.01
WINDOW_GUARD_MIN_S = 0.5


@dataclass(frozen=True)
class LocalModelSpec:
    """How to rebuild the embedded model inside an actor (a loaded llama.cpp model cannot be pickled)."""

    name: str
    model_path: Path
    n_ctx: int
    reuse_prefix: bool
    extra_buffers: bool


@dataclass
class WorkerSpec:
    """Everything a :class:`ModelWorker` needs; sent once, when the actor is created (and restarted)."""

    model: str
    backend: Backend | LocalModelSpec
    config: GenerationConfig
    config_fp: str
    concurrency: int
    timeout_s: float
    retry: RetryPolicy
    parse_profile: str
    redactor: Redactor
    run_id: int
    price: Price | None
    threads: int = 1
    #: the run's :class:`RateLimiter` actor, looked up by name (a handle in the arguments would keep
    #: them in the object store, which Ray advises against for restartable actors)
    limiter: str | None = None
    request_limited: bool = False
    token_limited: bool = False


@dataclass
class BatchOutcome:
    """What one batch produced: store rows, the engine's counters for them, and a fatal error if any."""

    rows: list[tuple[Any, ...]]
    counters: dict[str, Any]
    fatal: str | None = None
    pid: int = 0
    #: the worker process's CPU seconds so far (for the driver's account of what Ray costs)
    cpu_s: float = 0.0
    #: ``max_cost`` when the batch stopped at its share of --max-cost (its other groups were not sent)
    stopped: str | None = None
    #: USD its attempts may have been billed without saying (timeouts, dropped connections), at worst
    unsure: float = 0.0


class RowCollector:
    """Stands in for the store writer inside an actor: the engine's rows are kept and sent back."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.failure: Exception | None = None

    def add(self, row: tuple[Any, ...]) -> None:
        self.rows.append(row)

    def attach(self, loop: asyncio.AbstractEventLoop | None) -> None:
        return None

    def flush(self, *, wait: bool = True) -> None:
        return None


class _Bounded:
    """A backend behind an actor-wide semaphore: at most ``concurrency`` requests of the actor in flight."""

    def __init__(self, backend: Backend, concurrency: int) -> None:
        self.backend = backend
        self.name = backend.name
        self.simulated = backend.simulated
        self.enforces_timeout = getattr(backend, "enforces_timeout", False)
        self.timeout_s = getattr(backend, "timeout_s", None)
        self._slots = asyncio.Semaphore(concurrency)

    async def complete(self, request: ChatRequest) -> ChatResult:
        with waiting_turn():  # the engine's timeout counts from when a slot is free, not from here
            await self._slots.acquire()
        try:
            return await self.backend.complete(request)
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        await self.backend.aclose()


class SharedBucket(TokenBucket):
    """A token bucket kept by the :class:`RateLimiter` actor: the same budget for every worker."""

    def __init__(self, limiter: Any, model: str, kind: str) -> None:
        super().__init__(1.0, 1.0)
        self.limiter = limiter
        self.model = model
        self.kind = kind

    async def acquire(self, amount: float = 1.0) -> None:
        await self.limiter.acquire.remote(self.model, self.kind, amount)

    def settle(self, delta: float) -> None:
        if delta:
            self.limiter.settle.remote(self.model, self.kind, delta)


@ray.remote(max_restarts=3, max_task_retries=3)
class ModelWorker:
    """Answers batches of request groups for one model (see the module docstring)."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        backend = _materialise(spec.backend, spec.threads)
        self.backend = _Bounded(backend, spec.concurrency)
        self.parser = ResponseParser(spec.parse_profile)
        self.requests: SharedBucket | None = None
        self.tokens: SharedBucket | None = None
        limiter = ray.get_actor(spec.limiter) if spec.limiter is not None else None
        if limiter is not None and spec.request_limited:
            self.requests = SharedBucket(limiter, spec.model, "requests")
        if limiter is not None and spec.token_limited:
            self.tokens = SharedBucket(limiter, spec.model, "tokens")
        self.successes = 0
        #: a one-slot worker (the embedded model) answers its batches one after the other, in the order
        #: they were dealt: the second batch in flight waits here instead of interleaving its prompts
        #: with the first one's, which would break llama.cpp's reuse of the previous prompt's prefix
        self._in_order = asyncio.Lock() if spec.concurrency == 1 else None

    async def ready(self) -> tuple[int, float]:
        """The worker's pid and CPU seconds spent so far (starting up, loading the model)."""
        return os.getpid(), time.process_time()

    async def run_batch(self, groups: list[Group], successes: int, budget: float | None = None) -> BatchOutcome:
        """Send every group of the batch through the engine; return the rows it produced.

        ``budget`` (with --max-cost) is what the driver reserved for the batch: the engine holds the
        batch's retries and billed re-asks to it, as an in-process run holds them to --max-cost.
        """
        if self._in_order is None:
            return await self._run_batch(groups, successes, budget)
        async with self._in_order:  # asyncio locks are FIFO: batches run in the order they arrived
            return await self._run_batch(groups, successes, budget)

    async def _run_batch(self, groups: list[Group], successes: int, budget: float | None) -> BatchOutcome:
        spec = self.spec
        lane = Lane(
            model=spec.model, backend=self.backend, config_fp=spec.config_fp, work=Work(groups=groups),
            price=spec.price, request_bucket=self.requests, token_bucket=self.tokens,
        )
        lane.successes = max(self.successes, successes)
        collector = RowCollector()
        engine = Engine(
            [lane],
            config=spec.config,
            settings=EngineSettings(min(spec.concurrency, max(1, len(groups))), spec.timeout_s, budget, spec.retry,
                                    False),
            writer=collector,  # type: ignore[arg-type]  # the engine only adds rows and flushes
            parser=self.parser,
            redactor=spec.redactor,
            display=RunDisplay({}, mode="off"),
            run_id=spec.run_id,
        )
        status = await engine.run()
        self.successes = max(self.successes, lane.successes)
        return BatchOutcome(collector.rows, lane.counters.as_dict(), lane.fatal, os.getpid(), time.process_time(),
                            "max_cost" if status == "max_cost" else None, engine.budget.unsure)

    async def close(self) -> None:
        await self.backend.aclose()


def _materialise(backend: Backend | LocalModelSpec, threads: int) -> Backend:
    if isinstance(backend, LocalModelSpec):
        from counterbench.models.llamacpp import LlamaCppBackend

        return LlamaCppBackend(name=backend.name, model_path=backend.model_path, n_ctx=backend.n_ctx,
                               n_threads=threads, reuse_prefix=backend.reuse_prefix,
                               extra_buffers=backend.extra_buffers)
    return backend


def portable_backend(backend: Backend) -> Backend | LocalModelSpec:
    """What to send to the actors for ``backend``: itself, or how to rebuild the embedded model."""
    from counterbench.models.llamacpp import LlamaCppBackend

    if isinstance(backend, LlamaCppBackend):
        return LocalModelSpec(backend.name, backend.model_path, backend.n_ctx, backend.reuse_prefix,
                              backend.extra_buffers)
    return backend


class WindowLimit:
    """At most ``limit`` permits in any window of ``window_s`` seconds (a sliding log of start times).

    The log counts over ``window_s`` plus a guard (1% of it, at least 0.5 s), so requests that take
    longer than others to travel from the limiter through a worker to the provider still fall in
    windows the provider counts within the limit.
    """

    def __init__(self, limit: int, window_s: float) -> None:
        self.limit = max(1, limit)
        self.window_s = window_s + max(window_s * WINDOW_GUARD, WINDOW_GUARD_MIN_S)
        self.starts: collections.deque[float] = collections.deque()

    def wait_time(self) -> float:
        now = time.monotonic()
        starts = self.starts
        while starts and starts[0] <= now - self.window_s:
            starts.popleft()
        if len(starts) < self.limit:
            return 0.0
        # positive while full: in floating point ``starts[0] + window_s - now`` can be <= 0 while
        # ``starts[0] <= now - window_s`` is still false, which once let a 601st start through
        return max(starts[0] + self.window_s - now, 1e-6)

    def take(self) -> None:
        self.starts.append(time.monotonic())


class ModelLimits:
    """One model's cluster-wide request and token budgets, as the :class:`RateLimiter` actor keeps them.

    Requests: the engine's pacing (a token bucket refilled at rpm/60 per second, holding up to one
    second's worth) plus a :class:`WindowLimit` that never lets more than ``rpm × window_s / 60``
    requests start in any ``window_s`` (60 s by default: what a provider's per-minute limit counts).
    The bucket alone would let a window hold its burst on top of the rate (610 at ``--rpm 600``); the
    window log is what makes the per-minute count hold. Tokens: the engine's token bucket
    (reservations settled with the true counts). A plain class, so the guarantee can be checked
    without Ray and at the real 60-second scale on a simulated clock.
    """

    def __init__(self, rpm: float | None, tpm: float | None, largest_request: int, window_s: float = 60.0) -> None:
        rate = RateLimits(rpm=rpm, tpm=tpm)
        self.requests = rate.request_bucket()
        self.tokens = rate.token_bucket(largest_request)
        self.window = WindowLimit(int(rpm * window_s / 60.0), window_s) if rpm is not None else None
        self.lock = asyncio.Lock()

    async def acquire(self, kind: str, amount: float) -> None:
        if kind == "tokens":
            if self.tokens is not None:
                await self.tokens.acquire(amount)
            return
        async with self.lock:  # FIFO over both conditions
            if self.requests is not None:
                await self.requests.acquire(amount)
            window = self.window
            if window is not None:
                while (wait := window.wait_time()) > 0:
                    await asyncio.sleep(wait)
                window.take()

    def settle(self, kind: str, delta: float) -> None:
        bucket = self.tokens if kind == "tokens" else self.requests
        if bucket is not None:
            bucket.settle(delta)


@ray.remote(num_cpus=0, max_restarts=3, max_task_retries=3)
class RateLimiter:
    """Cluster-wide rpm/tpm budgets, one :class:`ModelLimits` per model (see :class:`SharedBucket`).

    Every worker of every model awaits its permits here, so the limits hold across all actors on all
    machines. A restarted limiter starts with full budgets.
    """

    def __init__(self, limits: dict[str, tuple[float | None, float | None, int]], window_s: float = 60.0) -> None:
        self.models = {model: ModelLimits(rpm, tpm, largest, window_s)
                       for model, (rpm, tpm, largest) in limits.items()}

    async def acquire(self, model: str, kind: str, amount: float) -> None:
        await self.models[model].acquire(kind, amount)

    async def settle(self, model: str, kind: str, delta: float) -> None:
        self.models[model].settle(kind, delta)
