"""``--batch``: the planned requests submitted to the provider's batch API, polled, and stored as they end.

Per model (lane): the requests still to send are cut into jobs within the provider's limits (and
``batch_size``), each job is recorded in the store before it is submitted and its provider id as soon as
it is known (:mod:`counterbench.run.batch_jobs`), then every open job is polled — first after
``first_poll_s``, then at growing intervals up to ``poll_s`` — with the provider's progress and an
estimated time left shown. When a job ends its results are committed to ``responses`` exactly as the
same answers sent one at a time would be (the family's own request bodies and reply parser), then the job
is marked collected.

A request the job did not answer (expired, cancelled, a server error, missing from the results, or an
empty reply) goes into a later job, up to ``--max-attempts`` attempts; other failures, and the last
attempt's, are stored as ``error`` rows, as the one-at-a-time engine stores them. Answers are priced at
the batch price (the price table's ``batch`` share), and ``--max-cost`` holds each job's worst case
from its submission until it is collected: a job is submitted only while it fits.

Stopping (Ctrl-C, a store failure) leaves the open jobs running at the provider: the next run with the
same model and generation config polls them and collects their results — nothing is submitted twice, and
a request in an open job is never sent again. A job that also answers prompts the run neither plans nor
has stored (a run on part of the prompts) is left open for a run that has them, and its prompts wait for
it; open jobs submitted to another base URL stop the run (unless ``--endpoint-moved``); a job the provider
no longer has (404) is marked ``gone`` and its requests submitted again. After ``--max-cost`` is reached,
nothing more is submitted, but the open jobs (already billed) are still polled and collected.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any

from counterbench.models.base import BackendError, ChatRequest, endpoint_of
from counterbench.run.batch_jobs import BatchJobs, StoredJob, new_key
from counterbench.run.batch_lane import BatchSettings, LaneBatch, check_batch, show_progress
from counterbench.run.budget import Hold
from counterbench.run.engine import Engine
from counterbench.run.lane import Lane
from counterbench.run.plan import Group, PromptItem
from counterbench.run.waits import sleep_unless_stopped

__all__ = ["BatchEngine", "BatchSettings", "check_batch", "engine_for"]

#: what a job call returns when the provider answers 404: the job is gone
GONE: Any = object()
#: bytes a JSONL line adds around a request body (custom id, method, url)
_LINE_OVERHEAD = 200


def engine_for(options: Any, default: type[Engine]) -> Callable[..., Engine]:
    """The engine a run uses: :class:`BatchEngine` with ``options.batch``, else ``default``."""
    if not getattr(options, "batch", False):
        return default
    return functools.partial(BatchEngine, batch=BatchSettings(options.batch_size, options.batch_poll,
                                                              min(1.0, options.batch_poll), options.endpoint_moved))


class BatchEngine(Engine):
    """The run engine for ``--batch`` (see the module docstring)."""

    def __init__(self, *args: Any, batch: BatchSettings | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batch = batch or BatchSettings()

    async def _start_lane(self, lane: Lane) -> None:
        """One worker per lane: it submits the lane's jobs, polls them and collects their results."""
        self._add_worker(self._lane(lane))

    # -- one lane --------------------------------------------------------------------------------

    async def _lane(self, lane: Lane) -> None:
        from counterbench.models.batch_families import batch_api_for

        api = batch_api_for(lane.backend)
        try:
            self.recorder.serve_from_cache(lane)
            jobs = BatchJobs(self.writer.store, api.provider, lane.model, lane.config_fp, endpoint_of(lane.backend),
                             self.run_id)
            state = LaneBatch(api, jobs, {group[0][0].prompt_id: group for group in lane.work.groups})
            lane.batch = {"batch": True, "batch_jobs_open": 0}
            await self._resume(lane, state)
            delay = self.batch.first_poll_s
            while lane.fatal is None and self.writer.failure is None and not self._interrupted():
                while state.todo and self.stop_reason is None and lane.fatal is None:
                    if not await self._submit_next(lane, state):
                        break
                if not state.open:
                    break
                if await self._wait(delay):
                    continue
                delay = min(delay * 1.5, self.batch.poll_s)
                await self._poll(lane, state)
            lane.batch["batch_jobs_open"] = len(state.open) + state.left_open
            if self.writer.failure is not None:
                self.stop("failed")
        finally:
            await api.aclose()

    def _interrupted(self) -> bool:
        """Ctrl-C or a failure: leave the open jobs to the next run (after --max-cost they are still collected,
        until a Ctrl-C)."""
        return self._signals > 0 or (self.stop_reason is not None and self.stop_reason != "max_cost")

    async def _wait(self, delay: float) -> bool:
        """Sleep before the next poll; True when the run was interrupted meanwhile."""
        if self.stop_reason == "max_cost":  # the stop event is set, but open jobs are still collected
            loop = asyncio.get_running_loop()
            end = loop.time() + delay
            while not self._interrupted() and loop.time() < end:
                await asyncio.sleep(min(0.25, end - loop.time()))
            return self._interrupted()
        return await sleep_unless_stopped(self._stop_event, delay) and self._interrupted()

    async def _resume(self, lane: Lane, state: LaneBatch) -> None:
        """Take up the jobs an earlier run left open, and queue the planned requests no job holds."""
        held: set[str] = set()
        jobs = state.jobs.open_jobs()
        elsewhere = [job for job in jobs if job.endpoint != state.jobs.endpoint]
        if elsewhere and not self.batch.endpoint_moved:
            here = state.jobs.endpoint or "the provider's default URL"
            lane.fatal = (f"the store holds {len(elsewhere)} open batch job(s) of {lane.model} submitted to "
                          f"{elsewhere[0].endpoint or 'the provider default URL'}, but this run sends to {here}; "
                          "rerun with that endpoint to collect them, or pass --endpoint-moved if it is the same "
                          "provider")
            self.stop("failed")
            return
        for job in jobs:
            if job.state == "submitting":  # killed around the submission: did the provider get it?
                claimed = state.jobs.claimed_ids()
                found = await self._call(lane, functools.partial(state.api.find, job.key, job.created_at,
                                                                 job.n_requests, claimed))
                if lane.fatal is not None:
                    return
                if found is None:
                    state.jobs.close(job, "abandoned", "not found at the provider: submitted again")
                    continue
                state.jobs.submitted(job, found)
            firsts = [pids[0] for pids, _ in job.requests.values()]
            held.update(firsts)
            if self._holds_other_prompts(lane, state, firsts):
                state.left_open += 1
                self.display.message(f"{lane.model}: batch job {job.job_id} also answers prompts this run does not "
                                     "include; it is left open for a run that does (its prompts here wait for it)")
                continue
            state.open.append(job)
            state.holds[job.key] = self._hold_open(lane, state, job)
        state.todo = [(group, 1) for pid, group in state.planned.items() if pid not in held]

    def _holds_other_prompts(self, lane: Lane, state: LaneBatch, firsts: list[str]) -> bool:
        """Whether a job answers prompts neither planned by this run nor stored: collecting it now would lose
        those answers (this run has no prompt rows for them)."""
        outside = [pid for pid in firsts if pid not in state.planned]
        if not outside:
            return False
        if state.stored is None:
            state.stored = set(self.writer.store.existing_responses(lane.model, lane.config_fp))
        return any(pid not in state.stored for pid in outside)

    def _hold_open(self, lane: Lane, state: LaneBatch, job: StoredJob) -> Hold:
        """An open job from an earlier run will be billed: its worst case is reserved, fitting or not."""
        amount = sum(self._worst_case(lane, state.planned[pids[0]][0][0])
                     for pids, _ in job.requests.values() if pids[0] in state.planned)
        self.budget.reserved += amount
        return Hold(amount)

    # -- submitting ------------------------------------------------------------------------------

    def _request(self, lane: Lane, item: PromptItem) -> ChatRequest:
        return ChatRequest(item.prompt_id, item.system, item.user, self._config_for(lane, item), item.answer_type,
                           item.metadata)

    async def _submit_next(self, lane: Lane, state: LaneBatch) -> bool:
        """Submit the next job from ``state.todo``; False when nothing more can be submitted now."""
        api = state.api
        most = min(self.batch.size or api.max_requests, api.max_requests)
        chunk: list[tuple[Group, int, dict[str, Any]]] = []
        size = worst = 0.0
        for group, attempt in state.todo:
            item = group[0][0]
            body = api.body(self._request(lane, item))
            nbytes = len(json.dumps(body, ensure_ascii=False).encode()) + _LINE_OVERHEAD
            cost = self._worst_case(lane, item) if self.budget.max_cost is not None else 0.0
            if chunk and (len(chunk) >= most or size + nbytes > api.max_bytes):
                break
            if not self.budget.fits(worst + cost):
                break
            chunk.append((group, attempt, body))
            size += nbytes
            worst += cost
        if not chunk:
            self.stop("max_cost")
            return False
        hold = self.budget.hold(worst) or Hold(0.0)
        del state.todo[: len(chunk)]
        key = new_key()
        job = state.jobs.begin(key, {f"{key}-{i}": ([it.prompt_id for it, _ in group], attempt)
                                     for i, (group, attempt, _) in enumerate(chunk)})
        items = [(f"{key}-{i}", body) for i, (_, _, body) in enumerate(chunk)]
        job_id = await self._call(lane, functools.partial(api.submit, key, items),
                                  lambda: api.find(key, job.created_at, len(items), state.jobs.claimed_ids()))
        if job_id is None:  # the lane stopped (fatal) or the run was interrupted: nothing was submitted
            state.jobs.close(job, "abandoned", lane.fatal)
            self.budget.release(hold)
            state.todo[:0] = [(group, attempt) for group, attempt, _ in chunk]
            return False
        state.jobs.submitted(job, job_id)
        state.open.append(job)
        state.holds[key] = hold
        self.display.message(f"{lane.model}: submitted batch job {job_id} ({len(items):,} requests)")
        return True

    async def _call(self, lane: Lane, call: Callable[[], Any], found: Callable[[], Any] | None = None, *,
                    job: bool = False) -> Any:
        """``call()`` with the run's retry policy; before each retry, ``found()`` may say it went through.
        ``None`` (and ``lane.fatal`` set) when it cannot succeed; ``None`` too when the run is interrupted.
        With ``job``, a 404 (the provider no longer has the job) returns :data:`GONE`."""
        policy = self.settings.retry
        attempt = 0
        while True:
            attempt += 1
            try:
                return await call()
            except BackendError as error:
                if job and error.status == 404:
                    return GONE
                message = self.redactor.redact(str(error)) or type(error).__name__
                if not error.retryable or attempt >= policy.max_attempts:
                    lane.fatal = message
                    self.stop("failed")
                    return None
                if await sleep_unless_stopped(self._stop_event, policy.delay(attempt, error.retry_after)) \
                        and self._interrupted():
                    return None
                if found is not None:
                    try:
                        adopted = await found()
                    except BackendError:
                        adopted = None
                    if adopted is not None:
                        return adopted

    # -- polling and collecting ------------------------------------------------------------------

    async def _poll(self, lane: Lane, state: LaneBatch) -> None:
        for job in list(state.open):
            if self._interrupted() or lane.fatal is not None:
                return
            status = await self._status(lane, state, job)
            if lane.fatal is not None:
                return
            if status is None:
                continue  # a passing failure: the job is polled again next time
            if status is GONE:
                self._gone(lane, state, job)
                continue
            state.jobs.progress(job, status.provider_status, status.processed)
            if status.ended:
                await self._collect(lane, state, job, status.error or f"job {status.provider_status}")
        show_progress(self.display, lane.model, state)

    async def _status(self, lane: Lane, state: LaneBatch, job: StoredJob) -> Any:
        """The job's status, :data:`GONE`, or ``None`` after a retryable failure (polling goes on however long
        the provider is unreachable: a job may take a day); a failure that cannot pass stops the lane."""
        try:
            return await state.api.status(str(job.job_id))
        except BackendError as error:
            if error.status == 404:
                return GONE
            message = self.redactor.redact(str(error)) or type(error).__name__
            if not error.retryable:
                lane.fatal = message
                self.stop("failed")
            else:
                self.display.message(f"{message}; polling {job.job_id} again later")
            return None

    async def _collect(self, lane: Lane, state: LaneBatch, job: StoredJob, ended: str) -> None:
        outcomes = await self._call(lane, functools.partial(state.api.results, str(job.job_id)), job=True)
        if outcomes is None:
            return
        if outcomes is GONE:
            self._gone(lane, state, job)
            return
        by_id = {o.custom_id: o for o in outcomes}
        started = job.submitted_at or job.created_at
        max_attempts = self.settings.retry.max_attempts
        for cid, (pids, attempt) in job.requests.items():
            group = state.planned.pop(pids[0], None)
            if group is None:
                continue  # answered by an earlier run, or not planned by this one
            outcome = by_id.get(cid)
            error: BackendError | None
            if outcome is None:
                error = BackendError(f"{lane.model}: the batch job ended without this request ({ended})",
                                     retryable=True)
            elif outcome.body is not None:
                try:
                    result = state.api.result(self._request(lane, group[0][0]), outcome.body)
                except BackendError as exc:
                    error = exc
                else:
                    paid = state.paid.pop(pids[0], 0.0)
                    empty = not (result.text or "").strip() and result.finish_reason not in ("length", "content_filter")
                    if empty and attempt < max_attempts:
                        cost = self._pay(lane, result)
                        state.paid[pids[0]] = paid + cost
                        self._requeue(lane, state, group, attempt)
                        continue
                    self.recorder.record_result(lane, group, result, attempt, started, Hold(0.0, paid=paid))
                    continue
            else:
                error = outcome.error
            if error is not None and error.retryable and attempt < max_attempts:
                self._requeue(lane, state, group, attempt)
                continue
            message = self.redactor.redact(str(error)) if error is not None else "no result"
            self.recorder.record_failure(lane, group, message or "error", attempt, started,
                                         Hold(0.0, paid=state.paid.pop(pids[0], 0.0)))
        self.writer.flush()
        if self.writer.failure is not None:
            self.stop("failed")
            return
        state.jobs.close(job, "collected")
        state.open.remove(job)
        self.budget.release(state.holds.pop(job.key, Hold(0.0)))

    def _gone(self, lane: Lane, state: LaneBatch, job: StoredJob) -> None:
        """The provider no longer has ``job`` (deleted, or its results expired): its requests are sent again."""
        self.display.message(f"{lane.model}: batch job {job.job_id} is gone at the provider; its requests are "
                             "submitted again")
        queued = {id(group) for group, _ in state.todo}
        for pids, attempt in job.requests.values():
            group = state.planned.get(pids[0])
            if group is not None and id(group) not in queued:
                state.todo.append((group, attempt))
        state.jobs.close(job, "gone", "not found at the provider")
        state.open.remove(job)
        self.budget.release(state.holds.pop(job.key, Hold(0.0)))

    def _pay(self, lane: Lane, result: Any) -> float:
        from counterbench.run.recorder import cost_of

        cost = cost_of(lane, result) or 0.0
        self.budget.pay(cost)
        lane.counters.cost_usd += cost
        return cost

    def _requeue(self, lane: Lane, state: LaneBatch, group: Group, attempt: int) -> None:
        state.planned[group[0][0].prompt_id] = group
        state.todo.append((group, attempt + 1))
        lane.counters.retries += 1
