"""``--ray``: send the pending prompts through a Ray cluster; the driver commits every answer.

The driver plans exactly as without Ray (only prompts not yet stored become work), then
:class:`RayEngine` — the run engine with another ``run()`` — deals the planned request groups out
in small batches to :class:`~counterbench.run.ray_actors.ModelWorker` actors (N per model; each
runs the ordinary async engine on its batch) and commits the rows of every finished batch through
the same :class:`~counterbench.run.writer.BatchWriter` as an in-process run, as they arrive. Rate
limits live in one :class:`~counterbench.run.ray_actors.RateLimiter` actor, so they hold across
every actor. ``--max-cost`` is enforced by the driver: a batch is sent only when its estimated
cost fits next to what is spent and what the batches in flight may still spend, and the actor holds
the batch (retries and billed re-asks included) to that reservation.

Faults: a killed actor is restarted by Ray and its batch re-run (the batch's rows never reached
the driver, so nothing is stored twice); a killed driver takes its actors with it and the same
command resumes from the store; the first Ctrl-C stops dealing batches and waits for the ones in
flight, a second cancels them. The actors are killed when the run ends, and a local Ray instance
this process started is shut down.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import time
import uuid
from collections.abc import Iterator
from typing import Any

from counterbench.errors import UserError
from counterbench.run.engine import Engine
from counterbench.run.lane import Lane
from counterbench.run.plan import Group
from counterbench.run.ray_setup import RayConnection, RayOptions, ray_options, require_ray

__all__ = ["RayEngine", "RayOptions", "configure_ray", "engine_class", "ray_options", "require_ray"]

#: batches in flight per actor (one answering, one waiting), so an actor never idles between batches
BATCHES_PER_ACTOR = 2
READY_TIMEOUT_S = 120.0
#: request groups per batch: twice a worker's concurrency, within these bounds (a Ray task costs ~1 ms)
MIN_BATCH, MAX_BATCH = 8, 256


def engine_class(options: RayOptions | None) -> type[Engine]:
    """The engine class for a run: :class:`RayEngine` with Ray, else the in-process engine."""
    return Engine if options is None else RayEngine


def configure_ray(engine: Engine, options: RayOptions | None, parse_profile: str, rpm: float | None,
                  tpm: float | None, largest_request: int) -> None:
    if isinstance(engine, RayEngine) and options is not None:
        engine.configure(options, parse_profile, rpm, tpm, largest_request)


class RayEngine(Engine):
    """The run engine with the requests answered by Ray actors (see the module docstring)."""

    ray_options: RayOptions = RayOptions()
    parse_profile: str = "default"

    def configure(self, options: RayOptions, parse_profile: str, rpm: float | None, tpm: float | None,
                  largest_request: int) -> RayEngine:
        self.ray_options = options
        self.parse_profile = parse_profile
        self._rpm, self._tpm, self._largest = rpm, tpm, largest_request
        self._inflight: set[Any] = set()
        self._actors: list[Any] = []
        self._limiter: Any = None
        self._limiter_name: str | None = None
        self._sizes: dict[str, int] = {}
        #: worker pid -> [CPU seconds when ready, CPU seconds at its latest batch]
        self._cpu: dict[int, list[float]] = {}
        self._batches_done = 0
        self._timing: dict[str, float] = {}
        self._batch_iters: dict[str, Iterator[list[Group]]] = {}
        return self

    def _on_signal(self) -> None:
        self._signals += 1
        if self._signals == 1:
            self.stop("interrupted")
            self.display.message("Stopping: waiting for the batches in flight and saving "
                                 "(Ctrl-C again to cancel them)…")
        else:
            import ray

            for ref in list(self._inflight):
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

    async def run(self) -> str:
        with RayConnection(self.ray_options):
            return await self._run()

    async def _run(self) -> str:
        import ray

        try:
            async with self._session():
                for lane in self.lanes:
                    self.recorder.serve_from_cache(lane)
                busy = [lane for lane in self.lanes if lane.work.groups]
                if busy:
                    started = time.perf_counter()
                    self._start_limiter(busy)
                    # every model's workers start at once (each lane creates its actors before awaiting them)
                    pools = await asyncio.gather(*[self._start_actors(lane, len(busy)) for lane in busy])
                    self._timing["startup_s"] = time.perf_counter() - started
                    drivers = [
                        self._drive(lane, actor, self._batches(lane))
                        for lane, pool in zip(busy, pools, strict=True)
                        for actor in pool
                        for _ in range(BATCHES_PER_ACTOR)
                    ]
                    # every slot of a lane pulls from the lane's one batch iterator (shared generator)
                    answering = time.perf_counter()
                    results = await asyncio.gather(*drivers, return_exceptions=True)
                    self._timing["answering_s"] = time.perf_counter() - answering
                    errors = [r for r in results if isinstance(r, BaseException)
                              and not isinstance(r, asyncio.CancelledError)]
                    if errors:
                        raise errors[0]
        finally:
            self._report()
            for actor in [*self._actors, self._limiter]:
                if actor is not None:
                    with contextlib.suppress(Exception):
                        ray.kill(actor)
            self.writer.flush()
            self.display.refresh()
        return self.stop_reason or "completed"

    def _report(self) -> None:
        stats = self.ray_options.stats
        if stats is None:
            return
        stats.update({
            "workers": len(self._actors),
            "batches": self._batches_done,
            "batch_sizes": dict(self._sizes),
            "worker_pids": len(self._cpu),
            "restarts_seen": max(0, len(self._cpu) - len(self._actors)),
            "worker_cpu_s": sum(last - first for first, last in self._cpu.values()),
            **self._timing,
        })

    # -- setting up ------------------------------------------------------------------------------

    def _start_limiter(self, lanes: list[Lane]) -> None:
        if self._rpm is None and self._tpm is None:
            return
        from counterbench.run.ray_actors import RateLimiter

        limits = {lane.model: (self._rpm, self._tpm, self._largest) for lane in lanes}
        self._limiter_name = f"counterbench-limiter-{uuid.uuid4().hex}"
        limiter_cls = RateLimiter.options(  # type: ignore[attr-defined]  # a Ray actor class
            name=self._limiter_name, max_restarts=self.ray_options.max_restarts)
        self._limiter = limiter_cls.remote(limits, self.ray_options.rate_window_s)

    def _actor_count(self, lane: Lane, n_models: int, per_actor_cpus: float) -> int:
        import ray

        if self.ray_options.actors is not None:
            return self.ray_options.actors
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        fit = int(cpus // (per_actor_cpus * n_models)) if per_actor_cpus > 0 else 1
        groups = len(lane.work.groups)
        return max(1, min(8, fit, groups))

    async def _start_actors(self, lane: Lane, n_models: int) -> list[Any]:
        import ray

        from counterbench.run.ray_actors import ModelWorker, WorkerSpec, portable_backend

        options = self.ray_options
        backend = portable_backend(lane.backend)
        local = backend is not lane.backend
        cpus = float(options.threads) if local else 1.0
        n = self._actor_count(lane, n_models, cpus)
        concurrency = max(1, math.ceil(self.settings.concurrency / n))
        spec = WorkerSpec(
            model=lane.model, backend=backend, config=self.config, config_fp=lane.config_fp,
            concurrency=1 if local else concurrency, timeout_s=self.settings.timeout_s, retry=self.settings.retry,
            parse_profile=self.parse_profile, redactor=self.redactor, run_id=self.run_id, price=lane.price,
            threads=options.threads, limiter=self._limiter_name, request_limited=self._rpm is not None,
            token_limited=self._tpm is not None,
        )
        # no runtime_env: Ray sets OMP_NUM_THREADS to the actor's num_cpus itself, and an actor with
        # a runtime_env of its own cannot use the worker processes Ray has already started
        actor_cls = ModelWorker.options(  # type: ignore[attr-defined]  # a Ray actor class
            num_cpus=cpus, max_restarts=options.max_restarts, max_task_retries=options.max_restarts,
        )
        pool = [actor_cls.remote(spec) for _ in range(n)]
        self._actors.extend(pool)
        try:  # raises if a worker could not be built (e.g. counterbench missing on a node)
            ready = await asyncio.wait_for(asyncio.gather(*[actor.ready.remote() for actor in pool]), READY_TIMEOUT_S)
        except TimeoutError:
            total = ray.cluster_resources().get("CPU", 0)
            raise UserError(
                f"Ray could not start {n} workers for {lane.model} within {READY_TIMEOUT_S:g} s "
                f"(each needs {cpus:g} CPU; the cluster has {total:g}); lower --ray-actors or --ray-threads"
            ) from None
        except ray.exceptions.RayError as err:
            raise UserError(f"a Ray worker for {lane.model} could not start: {_reason(err)}") from None
        for pid, cpu in ready:
            self._cpu[int(pid)] = [float(cpu), float(cpu)]
        # the embedded model takes ~0.5 s a prompt: batches of 2 keep the workers' shares even to the end
        self._sizes[lane.model] = options.batch or (2 if local else max(MIN_BATCH, min(MAX_BATCH, 2 * concurrency)))
        return pool

    # -- dealing batches -------------------------------------------------------------------------

    def _batches(self, lane: Lane) -> Iterator[list[Group]]:
        """The lane's groups in batches; one iterator per lane, shared by its actors' slots."""
        cached = self._batch_iters.get(lane.model)
        if cached is None:
            groups = lane.work.iter_groups()
            size = self._sizes[lane.model]
            cached = self._batch_iters[lane.model] = iter(lambda: list(itertools.islice(groups, size)), [])
        return cached

    def _take_budget(self, lane: Lane, batch: list[Group]) -> tuple[list[Group], float]:
        """With --max-cost: the part of ``batch`` whose estimated cost still fits (the rest is dropped)."""
        max_cost = self.settings.max_cost
        if max_cost is None:
            return batch, 0.0
        kept: list[Group] = []
        reserved = 0.0
        for group in batch:
            estimate = self._worst_case(lane, group[0][0])
            if not self.budget.fits(reserved + estimate):
                self.stop("max_cost")
                break
            kept.append(group)
            reserved += estimate
        self.budget.reserved += reserved
        return kept, reserved

    async def _drive(self, lane: Lane, actor: Any, batches: Iterator[list[Group]]) -> None:
        import ray

        for batch in batches:
            if self.writer.failure is not None:
                self.stop("failed")
            if self.stop_reason is not None or lane.fatal is not None:
                return
            batch, reserved = self._take_budget(lane, batch)
            if not batch:
                return
            budget = reserved if self.settings.max_cost is not None else None
            ref = actor.run_batch.remote(batch, lane.successes, budget)
            self._inflight.add(ref)
            try:
                outcome = await ref
            except ray.exceptions.TaskCancelledError:
                return
            except ray.exceptions.RayActorError as err:
                lane.fatal = (f"a Ray worker of {lane.model} failed more than {self.ray_options.max_restarts} times "
                              f"({_reason(err)})")
                self.stop("failed")
                return
            except ray.exceptions.RayTaskError as err:
                if not isinstance(getattr(err, "cause", None), UserError):
                    raise  # a bug: shown as such
                lane.fatal = str(err.cause)
                self.stop("failed")
                return
            finally:
                self._inflight.discard(ref)
                self.budget.reserved -= reserved
            self._commit(lane, outcome)

    def _commit(self, lane: Lane, outcome: Any) -> None:
        self._batches_done += 1
        seen = self._cpu.setdefault(int(outcome.pid), [0.0, 0.0])  # a restarted worker: a new pid
        seen[1] = max(seen[1], float(outcome.cpu_s))
        add = self.writer.add
        for row in outcome.rows:
            add(row)
        counts = outcome.counters
        c = lane.counters
        for name in ("done", "sent", "cached", "ok", "refused", "unparseable", "errors", "retries"):
            setattr(c, name, getattr(c, name) + int(counts.get(name, 0)))
        cost = float(counts.get("cost_usd", 0.0))
        c.cost_usd += cost
        self.budget.pay(cost)
        self.budget.unsure += float(getattr(outcome, "unsure", 0.0))
        for reason, n in counts.get("finish_reasons", {}).items():
            c.finish_reasons[reason] = c.finish_reasons.get(reason, 0) + n
        lane.successes += int(counts.get("sent", 0)) - int(counts.get("errors", 0))
        if outcome.fatal and lane.fatal is None:
            lane.fatal = outcome.fatal
            self.stop("failed")
        if getattr(outcome, "stopped", None) == "max_cost":  # its share of the budget ran out
            self.stop("max_cost")


def _reason(err: BaseException) -> str:
    """One line about a Ray error: its cause's message when it has one."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException) and str(cause).strip():
        err = cause
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else type(err).__name__

