"""The async engine: send the planned requests, retry, rate-limit, parse, and commit every answer.

One *lane* per model: ``concurrency`` worker coroutines pull request groups from a shared iterator
(cheaper than one task per request), so each backend has its own bound. A request is retried on
retryable :class:`~counterbench.models.base.BackendError`\\ s (408/409/429/5xx, timeouts,
connection errors, malformed replies): after the server's ``Retry-After`` when it sent one (capped),
else after an exponential backoff with jitter. Only the refused request waits; when the provider
signals overload (429/503/529) the lane's :class:`~counterbench.run.limits.AdaptiveLimit` also
lowers how many requests are in flight, and raises it again as answers come back. Non-retryable
failures and exhausted retries are stored as ``error`` rows (re-sent with ``--retry-errors``),
except failures that show the backend cannot work at all — HTTP 401/403, or no request of the
lane ever succeeding and the first one failing with a connection error or 404 — which stop the
run with a :class:`~counterbench.errors.UserError` instead of filling the store with errors.

Stopping: ``stop()`` (first Ctrl-C/SIGTERM, ``--max-cost`` reached, a fatal backend, a store that
can no longer be written) lets in-flight requests finish but starts no new ones and wakes every
waiting retry, cooldown and rate-limit wait at once; a second Ctrl-C cancels in-flight requests.
Whatever happens, every answer received is committed (or kept for the recovery file) before
returning.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

from counterbench.models.base import Backend, BackendError, ChatRequest, ChatResult, GenerationConfig
from counterbench.outcomes.logprobs import answer_logprobs_json
from counterbench.run.costs import Price
from counterbench.run.limits import AdaptiveLimit, RetryPolicy, TokenBucket
from counterbench.run.parsing import Parsed, ResponseParser
from counterbench.run.plan import PromptItem, Work
from counterbench.run.progress import Counters, RunDisplay
from counterbench.run.redact import Redactor
from counterbench.run.writer import BatchWriter, Row

_FATAL_ALWAYS = frozenset({401, 403})
_FATAL_BEFORE_SUCCESS = frozenset({404})
#: statuses by which a provider says it is overloaded: they also shrink the lane's concurrency
_OVERLOAD = frozenset({429, 503, 529})
_TIMEOUT_GRACE_S = 2.0
_FINAL_EMPTY = frozenset({"length", "content_filter"})
_ATTEMPTS_BEFORE_ANY_SUCCESS = 3


@dataclass
class Lane:
    """One model's share of the run."""

    model: str
    backend: Backend
    config_fp: str
    work: Work
    price: Price | None
    request_bucket: TokenBucket | None = None
    token_bucket: TokenBucket | None = None
    counters: Counters = field(default_factory=Counters)
    limit: AdaptiveLimit | None = None
    successes: int = 0
    fatal: str | None = None
    groups: Iterator[list[tuple[PromptItem, str]]] = field(default_factory=lambda: iter(()))

    @property
    def simulated(self) -> int:
        return 1 if getattr(self.backend, "simulated", False) else 0


@dataclass
class EngineSettings:
    concurrency: int = 16
    timeout_s: float = 60.0
    max_cost: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    handle_signals: bool = True


class Engine:
    def __init__(
        self,
        lanes: list[Lane],
        *,
        config: GenerationConfig,
        settings: EngineSettings,
        writer: BatchWriter,
        parser: ResponseParser,
        redactor: Redactor,
        display: RunDisplay,
        run_id: int,
    ) -> None:
        self.lanes = lanes
        self.config = config
        self.settings = settings
        self.writer = writer
        self.parser = parser
        self.redactor = redactor
        self.display = display
        self.run_id = run_id
        self.stop_reason: str | None = None
        self.spent = 0.0
        self.reserved = 0.0
        self._stop_event: asyncio.Event | None = None
        self._workers: list[asyncio.Task[None]] = []
        #: requests waiting to be retried (they hold no worker and no slot while they wait)
        self._retries: set[asyncio.Task[None]] = set()
        self._signals = 0

    # -- control --------------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        if self.stop_reason is None or reason == "failed":
            self.stop_reason = reason
        if self._stop_event is not None:
            self._stop_event.set()
        for lane in self.lanes:
            if lane.limit is not None:
                lane.limit.close()

    @property
    def stopping(self) -> bool:
        return self.stop_reason is not None

    def _on_signal(self) -> None:
        self._signals += 1
        if self._signals == 1:
            self.stop("interrupted")
            self.display.message(
                "Stopping: letting in-flight requests finish and saving (press Ctrl-C again to abandon them)…"
            )
        else:
            for task in [*self._workers, *self._retries]:
                task.cancel()

    # -- main loop -----------------------------------------------------------------------------

    async def run(self) -> str:
        """Run every lane to completion or until stopped; return ``completed``/``interrupted``/... ."""
        self._stop_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        installed = self._install_signal_handlers(loop)
        self.writer.attach(loop)
        ticker = asyncio.create_task(self._tick()) if self.display.mode != "off" else None
        try:
            for lane in self.lanes:
                self._serve_from_cache(lane)
                lane.groups = lane.work.iter_groups()
                n = min(self.settings.concurrency, len(lane.work.groups))
                lane.limit = AdaptiveLimit(self.settings.concurrency)
                for _ in range(n):
                    task = asyncio.create_task(self._worker(lane))
                    task.add_done_callback(self._worker_done)
                    self._workers.append(task)
            results = await asyncio.gather(*self._workers, return_exceptions=True)
            while self._retries:  # the workers are done; wait for the retries still pending
                results += await asyncio.gather(*list(self._retries), return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
            if errors:
                raise errors[0]
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            for sig in installed:
                loop.remove_signal_handler(sig)
            self.writer.attach(None)
            self.writer.flush()
            self.display.refresh()
        return self.stop_reason or "completed"

    def _install_signal_handlers(self, loop: asyncio.AbstractEventLoop) -> list[signal.Signals]:
        """Ctrl-C and SIGTERM stop the run (when the settings ask for it); the signals handled, to remove later."""
        installed: list[signal.Signals] = []
        if self.settings.handle_signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, self._on_signal)
                    installed.append(sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        return installed

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.stop("failed")  # a bug or a store failure: stop the others, then re-raise

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.3)
            self.display.refresh()

    async def _worker(self, lane: Lane) -> None:
        max_cost = self.settings.max_cost
        writer = self.writer
        for group in lane.groups:
            if writer.failure is not None:
                self.stop("failed")
            if self.stop_reason is not None or lane.fatal is not None:
                return
            estimate = 0.0
            if max_cost is not None:
                item = group[0][0]
                estimate = lane.price.cost(item.est_input_tokens, self.config.max_tokens) if lane.price else 0.0
                if self.spent + self.reserved + estimate > max_cost:
                    self.stop("max_cost")
                    return
                self.reserved += estimate
            try:
                await self._process(lane, group)
            finally:
                self.reserved -= estimate

    def _retry_later(
        self, lane: Lane, group: list[tuple[PromptItem, str]], attempts: int, started: float, delay: float
    ) -> None:
        """Send ``group`` again after ``delay`` seconds, from its own task: the worker moves on meanwhile."""
        lane.counters.retries += 1
        task = asyncio.create_task(self._wait_and_process(lane, group, attempts, started, delay))
        self._retries.add(task)
        task.add_done_callback(self._retry_done)

    def _retry_done(self, task: asyncio.Task[None]) -> None:
        self._retries.discard(task)
        self._worker_done(task)

    async def _wait_and_process(
        self, lane: Lane, group: list[tuple[PromptItem, str]], attempts: int, started: float, delay: float
    ) -> None:
        if await self._sleep_unless_stopped(delay):
            return  # abandoned: still pending, the next run sends it
        if lane.fatal is None:
            await self._process(lane, group, attempts, started)

    async def _process(
        self, lane: Lane, group: list[tuple[PromptItem, str]], attempts: int = 0, started: float | None = None
    ) -> None:
        item = group[0][0]
        config = self.config
        if lane.work.bigger_tokens is not None and item.prompt_id in lane.work.bigger_tokens:
            config = lane.work.bigger_config or config
        request = ChatRequest(item.prompt_id, item.system, item.user, config, item.answer_type, item.metadata)
        started = time.time() if started is None else started
        policy = self.settings.retry
        timeout = self._timeout_for(lane.backend)
        limit = lane.limit
        attempts += 1
        tokens = item.est_input_tokens + config.max_tokens
        throttled = lane.request_bucket is not None or lane.token_bucket is not None
        if throttled and await self._unless_stopped(self._throttle(lane, tokens)):
            return
        if limit is not None:
            await limit.acquire()
            if self.stop_reason is not None:
                limit.release()
                return  # not sent: still pending, the next run sends it
        try:
            if timeout is None:
                result = await lane.backend.complete(request)
            else:
                async with asyncio.timeout(timeout):
                    result = await lane.backend.complete(request)
        except BaseException as exc:
            if limit is not None:
                limit.release()
            if isinstance(exc, BackendError):
                error = exc
            elif isinstance(exc, TimeoutError):
                error = BackendError(f"{lane.model}: no answer within {self.settings.timeout_s:g} s",
                                     retryable=True)
            else:
                raise
        else:
            if limit is not None:
                limit.release()
                limit.on_success()
            if lane.token_bucket is not None and result.input_tokens is not None:
                lane.token_bucket.settle((result.input_tokens + (result.output_tokens or 0)) - tokens)
            if (
                attempts < policy.max_attempts
                and self.stop_reason is None
                and result.finish_reason not in _FINAL_EMPTY
                and not (result.text or "").strip()
            ):
                # an empty reply is almost always a transient glitch: ask again (status `empty` if it persists)
                self._retry_later(lane, group, attempts, started, policy.delay(attempts))
                return
            self._record_result(lane, group, result, attempts, started)
            return
        if limit is not None and error.status in _OVERLOAD:
            limit.on_overload()
        limit_n = policy.max_attempts
        if lane.successes == 0 and error.status is None:
            limit_n = min(limit_n, _ATTEMPTS_BEFORE_ANY_SUCCESS)  # likely unreachable: say so quickly
        if not error.retryable or attempts >= limit_n:
            self._record_failure(lane, group, error, attempts, started)
            return
        if self.stop_reason is not None:
            return  # abandoned: still pending, the next run sends it
        self._retry_later(lane, group, attempts, started, policy.delay(attempts, error.retry_after))
        return

    def _timeout_for(self, backend: Backend) -> float | None:
        """The engine's own deadline per attempt, or ``None`` when the backend enforces one as strict.

        A backend with ``enforces_timeout`` bounds each whole request itself (the HTTP client's total
        timeout), so a second timer per request would only cost CPU.
        """
        own = getattr(backend, "timeout_s", None) if getattr(backend, "enforces_timeout", False) else None
        if isinstance(own, int | float) and 0 < own <= self.settings.timeout_s:
            return None
        return self.settings.timeout_s + _TIMEOUT_GRACE_S

    async def _throttle(self, lane: Lane, tokens: int) -> None:
        if lane.request_bucket is not None:
            await lane.request_bucket.acquire(1.0)
        if lane.token_bucket is not None:
            await lane.token_bucket.acquire(float(tokens))

    async def _unless_stopped(self, wait: Coroutine[Any, Any, None]) -> bool:
        """Await ``wait`` unless the run stops first; return True if it stopped (``wait`` is cancelled)."""
        event = self._stop_event
        if event is None:
            await wait
            return False
        if event.is_set():
            wait.close()
            return True
        task = asyncio.ensure_future(wait)
        stopper = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait((task, stopper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pending in (task, stopper):
                if not pending.done():
                    pending.cancel()
        if task.done() and not task.cancelled():
            task.result()
            return False
        return True

    async def _sleep_unless_stopped(self, delay: float) -> bool:
        """Sleep ``delay`` seconds; return True (at once) if the run is being stopped."""
        event = self._stop_event
        if event is None:
            await asyncio.sleep(delay)
            return False
        if event.is_set():
            return True
        try:
            await asyncio.wait_for(event.wait(), timeout=delay)
        except TimeoutError:
            return False
        return True

    # -- recording ------------------------------------------------------------------------------

    def _record_result(
        self, lane: Lane, group: list[tuple[PromptItem, str]], result: ChatResult, attempts: int, started: float
    ) -> None:
        lane.successes += 1
        counters = lane.counters
        counters.sent += 1
        text = self.redactor.redact(result.text)
        reported = getattr(result, "cost_usd", None)
        if reported is not None:
            cost: float | None = float(reported)
        elif lane.price is not None and (result.input_tokens is not None or result.output_tokens is not None):
            cost = lane.price.cost(result.input_tokens, result.output_tokens)
        else:
            cost = None
        if cost:
            self.spent += cost
            counters.cost_usd += cost
        reason = result.finish_reason
        if reason is not None:
            counters.finish_reasons[reason] = counters.finish_reasons.get(reason, 0) + 1
        finished = time.time()
        model_reported = self.redactor.redact(result.model_reported)
        parse_key = self.parser.key_for
        tokens = getattr(result, "token_logprobs", None)
        for index, (item, fp) in enumerate(group):
            parsed = self.parser.parse(text, reason, parse_key(item.use_case, item.answer_type))
            first = index == 0
            self.writer.add(
                self._row(
                    lane, item, fp, parsed, text, reason, result.input_tokens, result.output_tokens,
                    cost if first else 0.0, result.latency_ms, attempts if first else 0, None,
                    0 if first else 1, model_reported, started, finished,
                    answer_logprobs_json(item.answer_type, tokens) if tokens else None,
                )
            )
            counters.done += 1
            counters.count_status(parsed.status)
        counters.cached += len(group) - 1

    def _record_failure(
        self, lane: Lane, group: list[tuple[PromptItem, str]], error: BackendError, attempts: int, started: float
    ) -> None:
        message = self.redactor.redact(str(error)) or type(error).__name__
        if error.status in _FATAL_ALWAYS:
            lane.fatal = f"{message} (the server refused the credentials: check the API key)"
        elif getattr(error, "fatal", False):  # e.g. a refused structured-output constraint, --structured-fallback stop
            lane.fatal = message
        elif lane.successes == 0 and (error.status is None or error.status in _FATAL_BEFORE_SUCCESS):
            lane.fatal = f"{message} (could not use this model: check its name, URL and network)"
        if lane.fatal is not None:
            self.stop("failed")
            return
        finished = time.time()
        failed = Parsed("error")
        for item, fp in group:
            self.writer.add(
                self._row(lane, item, fp, failed, None, None, None, None, None, None, attempts, message, 0, None,
                          started, finished)
            )
            lane.counters.done += 1
            lane.counters.errors += 1
        lane.counters.sent += 1

    def _serve_from_cache(self, lane: Lane) -> None:
        """Store copies of identical requests answered before (no call, no cost)."""
        now = time.time()
        for item, fp, stored in lane.work.from_cache:
            text, reason, n_in, n_out, latency, reported, _simulated, logprobs = stored
            parsed = self.parser.parse(text, reason, self.parser.key_for(item.use_case, item.answer_type))
            self.writer.add(
                self._row(lane, item, fp, parsed, text, reason, n_in, n_out, 0.0, latency, 0, None, 1, reported,
                          now, now, logprobs)
            )
            lane.counters.done += 1
            lane.counters.cached += 1
            lane.counters.count_status(parsed.status)

    def _row(
        self, lane: Lane, item: PromptItem, fp: str, parsed: Parsed, text: str | None, reason: str | None,
        n_in: int | None, n_out: int | None, cost: float | None, latency: float | None, attempts: int,
        error: str | None, cached: int, reported: str | None, started: float, finished: float,
        logprobs: str | None = None,
    ) -> Row:
        return (
            item.prompt_id, item.prompt_hash, lane.model, lane.config_fp, fp, lane.simulated, parsed.status,
            text, reason, parsed.value, parsed.unit, parsed.release_value, parsed.release_unit,
            parsed.is_range, parsed.out_of_range, parsed.reason, self.parser.profile, n_in, n_out, cost,
            latency, attempts, error, cached, reported, "run", started, finished, self.run_id, logprobs,
        )


def lane_summary(lane: Lane) -> dict[str, Any]:
    out = lane.counters.as_dict()
    out["already_done"] = lane.work.already_done
    out["stored_errors"] = lane.work.stored_errors
    out["simulated"] = bool(lane.simulated)
    return out
