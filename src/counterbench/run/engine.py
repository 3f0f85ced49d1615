"""The async engine: send the planned requests, retry, rate-limit, parse, and commit every answer.

One *lane* per model: ``concurrency`` worker coroutines pull request groups from a shared iterator
(cheaper than one task per request), so each backend has its own bound — never more than the
backend's own ``max_concurrency`` (the embedded model: 1) or a llama.cpp server's slots (``/props``).
The per-request timeout counts from when the backend starts on a request (a backend that queues wraps
the wait in ``waiting_turn``), not from when the request joined its queue. A request is retried on
retryable :class:`~counterbench.models.base.BackendError`\\ s (408/409/429/5xx, timeouts,
connection errors, malformed replies): after the server's ``Retry-After`` when it sent one (capped),
else after an exponential backoff with jitter. Only the refused request waits; when the provider
signals overload (429/503/529) the lane's :class:`~counterbench.run.limits.AdaptiveLimit` also
lowers how many requests are in flight, and raises it again as answers come back — and when
refusals with a ``Retry-After`` outnumber the answers (a server-wide ``Retry-After``), the whole
lane sends nothing until that wait is over. Non-retryable
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

The run's frame (the config a request is sent with, stopping) is :mod:`counterbench.run.session`,
its lanes and settings :mod:`counterbench.run.lane`; the rows written are
:mod:`counterbench.run.recorder`'s; the stop-aware waits and the per-attempt deadline are
:mod:`counterbench.run.waits`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from counterbench.models.base import (
    Backend,
    BackendError,
    ChatRequest,
    ChatResult,
    backend_concurrency,
)
from counterbench.models.server_slots import slot_cap
from counterbench.run.budget import Hold
from counterbench.run.lane import EngineSettings, Lane, lane_summary
from counterbench.run.limits import AdaptiveLimit
from counterbench.run.plan import Group, PromptItem
from counterbench.run.recorder import cost_of
from counterbench.run.session import RunSession
from counterbench.run.waits import call_within, sleep_unless_stopped, unless_stopped

__all__ = ["Engine", "EngineSettings", "Lane", "lane_summary"]

_FATAL_ALWAYS = frozenset({401, 403})
_FATAL_BEFORE_SUCCESS = frozenset({404})
#: statuses by which a provider says it is overloaded: they also shrink the lane's concurrency
_OVERLOAD = frozenset({429, 503, 529})
_TIMEOUT_GRACE_S = 2.0
_FINAL_EMPTY = frozenset({"length", "content_filter"})
_ATTEMPTS_BEFORE_ANY_SUCCESS = 3


def raise_first_error(results: list[Any]) -> None:
    """Raise the first exception among gathered workers' ``results`` (a cancelled worker is not an error)."""
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


class Engine(RunSession):
    """The in-process engine: one lane of worker coroutines per model (see the module docstring)."""

    # -- main loop -----------------------------------------------------------------------------

    async def run(self) -> str:
        """Run every lane to completion or until stopped; return ``completed``/``interrupted``/... ."""
        try:
            async with self._session():
                for lane in self.lanes:
                    await self._start_lane(lane)
                results = await asyncio.gather(*self._workers, return_exceptions=True)
                while self._retries:  # the workers are done; wait for the retries still pending
                    results += await asyncio.gather(*list(self._retries), return_exceptions=True)
                raise_first_error(results)
        finally:
            self.writer.flush()
            self.display.refresh()
        return self.stop_reason or "completed"

    async def _start_lane(self, lane: Lane) -> None:
        """Start ``lane``'s workers (:meth:`run` waits for them): the answers the store holds are served first,
        then one worker per concurrent request the backend allows, at most one per request group."""
        self.recorder.serve_from_cache(lane)
        lane.groups = lane.work.iter_groups()
        cap = min(self.settings.concurrency, backend_concurrency(lane.backend) or self.settings.concurrency)
        slots, line = await slot_cap(lane.backend, cap)  # a llama.cpp server's own slot count
        if slots is not None:
            cap = slots
            self.display.message(line)
        n = min(cap, len(lane.work.groups))
        lane.limit = AdaptiveLimit(cap)
        for _ in range(n):
            self._add_worker(self._worker(lane))

    def _add_worker(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as one of the run's workers (a worker that fails stops the run)."""
        task = asyncio.create_task(work)
        task.add_done_callback(self._worker_done)
        self._workers.append(task)

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

    def _retry_later(self, lane: Lane, group: Group, attempts: int, started: float, delay: float, hold: Hold) -> None:
        """Send ``group`` again after ``delay`` seconds, from its own task: the worker moves on meanwhile."""
        lane.counters.retries += 1
        task = asyncio.create_task(self._wait_and_process(lane, group, attempts, started, delay, hold))
        self._retries.add(task)
        task.add_done_callback(self._retry_done)

    def _retry_done(self, task: asyncio.Task[None]) -> None:
        self._retries.discard(task)
        self._worker_done(task)

    async def _wait_and_process(
        self, lane: Lane, group: Group, attempts: int, started: float, delay: float, hold: Hold
    ) -> None:
        if await sleep_unless_stopped(self._stop_event, delay) or lane.fatal is not None:
            self._release(lane, group, hold)  # abandoned: still pending, the next run sends it
            return
        await self._process(lane, group, attempts, started, hold=hold)

    def _release(self, lane: Lane, group: Group, hold: Hold) -> None:
        """The request is stored or abandoned: give its reservation back, and keep a reply it paid for."""
        self.budget.release(hold)
        if hold.last is not None:  # abandoned after a billed reply: store that reply and its cost
            result, attempts, started = hold.last
            self.recorder.record_result(lane, group, replace(result, cost_usd=0.0), attempts, started, hold)

    async def _process(
        self, lane: Lane, group: Group, attempts: int = 0, started: float | None = None, *, hold: Hold | None = None
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

    async def _attempt(self, lane: Lane, group: Group, attempts: int, started: float | None, hold: Hold) -> bool:
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
        if throttled and await unless_stopped(self._stop_event, self._throttle(lane, tokens)):
            return False
        if limit is not None:
            await limit.acquire()
            if self.stop_reason is not None:
                limit.release()
                return False  # not sent: still pending, the next run sends it
        try:
            result = await call_within(lane.backend, request, timeout)
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
            self.recorder.record_result(lane, group, result, attempts, started, hold)
            return False
        if limit is not None and error.status in _OVERLOAD:
            limit.on_overload(None if error.retry_after is None else min(error.retry_after, policy.max_retry_after))
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
        cost = cost_of(lane, result) or 0.0
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

    # -- recording ------------------------------------------------------------------------------

    def _record_failure(
        self, lane: Lane, group: Group, error: BackendError, attempts: int, started: float, hold: Hold | None = None,
    ) -> None:
        """Store a failed request as ``error`` rows, or stop the run when it shows the backend cannot work."""
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
        self.recorder.record_failure(lane, group, message, attempts, started, hold)
