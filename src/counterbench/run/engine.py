"""The async engine: send the planned requests, retry, rate-limit, parse, and commit every answer.

One *lane* per model: ``concurrency`` worker coroutines pull request groups from a shared iterator
(cheaper than one task per request), so each backend has its own bound — never more than the
backend's own ``max_concurrency`` (the embedded model: 1). The per-request timeout counts from when
the backend starts on a request (a backend that queues wraps the wait in ``waiting_turn``), not from
when the request joined its queue. A request is retried on
retryable :class:`~counterbench.models.base.BackendError`\\ s (408/409/429/5xx, timeouts,
connection errors, malformed replies): after the server's ``Retry-After`` when it sent one (capped),
else after an exponential backoff with jitter. Only the refused request waits; when the provider
signals overload (429/503/529) the lane's :class:`~counterbench.run.limits.AdaptiveLimit` also
lowers how many requests are in flight, and raises it again as answers come back. Non-retryable
failures and exhausted retries are stored as ``error`` rows (re-sent with ``--retry-errors``),
except failures that show the backend cannot work at all — HTTP 401/403, or no request of the
lane ever succeeding and the first one failing with a connection error or 404 — which stop the
run with a :class:`~counterbench.errors.UserError` instead of filling the store with errors.

Budget (``--max-cost``, :mod:`counterbench.run.budget`): each request holds its worst case from its
first attempt until it is stored or abandoned, through every retry and wait; a billed attempt asked
again (an empty reply) is paid — and added to the stored row's cost — and an attempt of unknown bill
(a timeout, a dropped connection, a garbled reply) counts at its worst case, and a retry is sent only
if the budget still holds it. So what the provider can bill never exceeds ``--max-cost`` as long as
the estimate is an upper bound.

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
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from counterbench.models.base import (
    Backend,
    BackendError,
    ChatRequest,
    ChatResult,
    GenerationConfig,
    backend_concurrency,
    on_queue_wait,
)
from counterbench.outcomes.logprobs import answer_logprobs_json
from counterbench.run.budget import Budget, Hold
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
        self.budget = Budget(settings.max_cost)
        self._stop_event: asyncio.Event | None = None
        self._workers: list[asyncio.Task[None]] = []
        #: requests waiting to be retried (they hold no worker and no slot while they wait)
        self._retries: set[asyncio.Task[None]] = set()
        self._signals = 0
        #: the run's config with each prompt-requested token limit (see ``GenerationConfig.prompt_max_tokens``)
        self._prompt_configs: dict[int, GenerationConfig] = {}

    def _prompt_config(self, max_tokens: int) -> GenerationConfig:
        config = self._prompt_configs[max_tokens] = self.config.for_prompt(max_tokens)
        return config

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

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[None]:
        """A run's frame: the stop event, the Ctrl-C/SIGTERM handlers, the writer on this event loop and
        the progress ticker; all undone on leaving (the caller then flushes the writer)."""
        self._stop_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        installed = self._install_signal_handlers(loop)
        self.writer.attach(loop)
        ticker = asyncio.create_task(self._tick()) if self.display.mode != "off" else None
        try:
            yield
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            for sig in installed:
                loop.remove_signal_handler(sig)
            self.writer.attach(None)

    async def run(self) -> str:
        """Run every lane to completion or until stopped; return ``completed``/``interrupted``/... ."""
        try:
            async with self._session():
                for lane in self.lanes:
                    self._serve_from_cache(lane)
                    lane.groups = lane.work.iter_groups()
                    cap = min(self.settings.concurrency, backend_concurrency(lane.backend) or self.settings.concurrency)
                    n = min(cap, len(lane.work.groups))
                    lane.limit = AdaptiveLimit(cap)
                    for _ in range(n):
                        task = asyncio.create_task(self._worker(lane))
                        task.add_done_callback(self._worker_done)
                        self._workers.append(task)
                results = await asyncio.gather(*self._workers, return_exceptions=True)
                while self._retries:  # the workers are done; wait for the retries still pending
                    results += await asyncio.gather(*list(self._retries), return_exceptions=True)
                errors = [r for r in results
                          if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
                if errors:
                    raise errors[0]
        finally:
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
        budget = self.budget
        writer = self.writer
        for group in lane.groups:
            if writer.failure is not None:
                self.stop("failed")
            if self.stop_reason is not None or lane.fatal is not None:
                return
            hold = budget.hold(self._worst_case(lane, group[0][0]) if budget.max_cost is not None else 0.0)
            if hold is None:
                self.stop("max_cost")
                return
            await self._process(lane, group, hold=hold)

    def _worst_case(self, lane: Lane, item: PromptItem) -> float:
        """The most one attempt of ``item`` can cost: estimated input tokens plus the whole token limit."""
        if lane.price is None:
            return 0.0
        return lane.price.cost(item.est_input_tokens, self._config_for(lane, item).max_tokens)

    def _config_for(self, lane: Lane, item: PromptItem) -> GenerationConfig:
        """The config ``item`` is sent with: --retry-max-tokens, else the prompt's own limit, else the run's."""
        work = lane.work
        if work.bigger_tokens is not None and item.prompt_id in work.bigger_tokens:
            return work.bigger_config or self.config  # --retry-max-tokens wins over a prompt's own limit
        if item.max_tokens is not None and self.config.prompt_max_tokens:
            return self._prompt_configs.get(item.max_tokens) or self._prompt_config(item.max_tokens)
        return self.config

    def _retry_later(
        self, lane: Lane, group: list[tuple[PromptItem, str]], attempts: int, started: float, delay: float,
        hold: Hold,
    ) -> None:
        """Send ``group`` again after ``delay`` seconds, from its own task: the worker moves on meanwhile."""
        lane.counters.retries += 1
        task = asyncio.create_task(self._wait_and_process(lane, group, attempts, started, delay, hold))
        self._retries.add(task)
        task.add_done_callback(self._retry_done)

    def _retry_done(self, task: asyncio.Task[None]) -> None:
        self._retries.discard(task)
        self._worker_done(task)

    async def _wait_and_process(
        self, lane: Lane, group: list[tuple[PromptItem, str]], attempts: int, started: float, delay: float,
        hold: Hold,
    ) -> None:
        if await self._sleep_unless_stopped(delay) or lane.fatal is not None:
            self._release(lane, group, hold)  # abandoned: still pending, the next run sends it
            return
        await self._process(lane, group, attempts, started, hold=hold)

    def _release(self, lane: Lane, group: list[tuple[PromptItem, str]], hold: Hold) -> None:
        """The request is stored or abandoned: give its reservation back, and keep a reply it paid for."""
        self.budget.release(hold)
        if hold.last is not None:  # abandoned after a billed reply: store that reply and its cost
            result, attempts, started = hold.last
            self._record_result(lane, group, replace(result, cost_usd=0.0), attempts, started, hold)

    async def _process(
        self, lane: Lane, group: list[tuple[PromptItem, str]], attempts: int = 0, started: float | None = None,
        *, hold: Hold | None = None,
    ) -> None:
        """Send ``group`` once; store the answer or the failure, or hand it to a retry (with its ``hold``)."""
        if hold is None:
            hold = Hold(0.0)
        try:
            if await self._attempt(lane, group, attempts, started, hold):
                return  # a retry task holds the reservation now
        except BaseException:
            self._release(lane, group, hold)
            raise
        self._release(lane, group, hold)

    async def _attempt(
        self, lane: Lane, group: list[tuple[PromptItem, str]], attempts: int, started: float | None, hold: Hold
    ) -> bool:
        """One attempt; True when a retry was scheduled (it then owns ``hold``)."""
        item = group[0][0]
        config = self._config_for(lane, item)
        request = ChatRequest(item.prompt_id, item.system, item.user, config, item.answer_type, item.metadata)
        started = time.time() if started is None else started
        policy = self.settings.retry
        timeout = self._timeout_for(lane.backend)
        limit = lane.limit
        attempts += 1
        tokens = item.est_input_tokens + config.max_tokens
        throttled = lane.request_bucket is not None or lane.token_bucket is not None
        if throttled and await self._unless_stopped(self._throttle(lane, tokens)):
            return False
        if limit is not None:
            await limit.acquire()
            if self.stop_reason is not None:
                limit.release()
                return False  # not sent: still pending, the next run sends it
        try:
            result = await self._call(lane.backend, request, timeout)
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
                and self._paid_before_retry(lane, result, hold, attempts, started)
            ):
                # an empty reply is almost always a transient glitch: ask again (status `empty` if it persists)
                self._retry_later(lane, group, attempts, started, policy.delay(attempts), hold)
                return True
            self._record_result(lane, group, result, attempts, started, hold)
            return False
        if limit is not None and error.status in _OVERLOAD:
            limit.on_overload()
        if error.status is None or error.status == 200:
            # no HTTP error status (a timeout, a dropped connection, a garbled reply): it may have been billed
            self.budget.may_have_paid(hold)
        limit_n = policy.max_attempts
        if lane.successes == 0 and error.status is None:
            limit_n = min(limit_n, _ATTEMPTS_BEFORE_ANY_SUCCESS)  # likely unreachable: say so quickly
        if not error.retryable or attempts >= limit_n:
            self._record_failure(lane, group, error, attempts, started, hold)
            return False
        if self.stop_reason is not None or not self._can_afford_retry(0.0):
            return False  # abandoned: still pending, the next run sends it
        self._retry_later(lane, group, attempts, started, policy.delay(attempts, error.retry_after), hold)
        return True

    def _paid_before_retry(self, lane: Lane, result: ChatResult, hold: Hold, attempts: int, started: float) -> bool:
        """Pay a billed attempt that is asked again (True), or leave it to be stored as it is (False: the
        retry would no longer fit in --max-cost, and the run stops)."""
        cost = self._cost_of(lane, result) or 0.0
        if not self._can_afford_retry(cost):
            return False
        self.budget.pay(cost, hold)
        lane.counters.cost_usd += cost
        hold.last = (result, attempts, started)
        return True

    def _can_afford_retry(self, cost: float) -> bool:
        """Whether a retry still fits after an attempt billed ``cost`` (the request's hold is still reserved)."""
        if self.budget.fits(cost):
            return True
        self.stop("max_cost")
        return False

    @staticmethod
    async def _call(backend: Backend, request: ChatRequest, timeout: float | None) -> ChatResult:
        """``backend.complete(request)`` within ``timeout`` seconds of work on it.

        Time the backend spends waiting for its turn (reported by
        :func:`~counterbench.models.base.waiting_turn`) does not count: the deadline is lifted for the
        wait and set again, ``timeout`` seconds ahead, when the backend starts on the request.
        """
        if timeout is None:
            return await backend.complete(request)
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout) as deadline:

            def on_wait(waiting: bool) -> None:
                deadline.reschedule(None if waiting else loop.time() + timeout)

            with on_queue_wait(on_wait):
                return await backend.complete(request)

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

    @staticmethod
    def _cost_of(lane: Lane, result: ChatResult) -> float | None:
        """What the provider bills for ``result``: its own figure, else tokens × price; None when unknown."""
        reported = getattr(result, "cost_usd", None)
        if reported is not None:
            return float(reported)
        if lane.price is not None and (result.input_tokens is not None or result.output_tokens is not None):
            return lane.price.cost(result.input_tokens, result.output_tokens)
        return None

    def _record_result(
        self, lane: Lane, group: list[tuple[PromptItem, str]], result: ChatResult, attempts: int, started: float,
        hold: Hold | None = None,
    ) -> None:
        lane.successes += 1
        counters = lane.counters
        counters.sent += 1
        text = self.redactor.redact(result.text)
        cost = self._cost_of(lane, result)
        if cost:
            self.budget.pay(cost)
            counters.cost_usd += cost
        if hold is not None:
            hold.last = None
            if hold.paid:
                cost = (cost or 0.0) + hold.paid  # the row carries what every attempt of it was billed
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
        self, lane: Lane, group: list[tuple[PromptItem, str]], error: BackendError, attempts: int, started: float,
        hold: Hold | None = None,
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
        paid = None
        if hold is not None:
            hold.last = None
            paid = hold.paid or None  # earlier attempts that were billed
        for index, (item, fp) in enumerate(group):
            self.writer.add(
                self._row(lane, item, fp, failed, None, None, None, None, paid if index == 0 else None, None,
                          attempts, message, 0, None, started, finished)
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
