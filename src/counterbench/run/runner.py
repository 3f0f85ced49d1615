"""``run_prompts``: the Python API behind ``counterbench run``.

Validate everything first (settings, models, keys, prompt table, store), then plan what is left
per model, then run the engine. A user mistake raises :class:`~counterbench.errors.UserError`
before any request is sent; whatever was answered is committed before this returns or raises.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.errors import UserError
from counterbench.models.base import Backend, GenerationConfig, endpoint_of
from counterbench.models.labels import model_spec
from counterbench.models.structured import structured_modes, structured_notices, watch_notices
from counterbench.options import RunOptions, check_repeats
from counterbench.run.costs import load_price_table
from counterbench.run.identity import check_endpoint, check_model_spec
from counterbench.run.lane import EngineSettings, Lane, lane_summary
from counterbench.run.limits import RateLimits
from counterbench.run.parsing import ResponseParser
from counterbench.run.plan import plan_repeats, prompt_items
from counterbench.run.progress import RunDisplay, sum_counters
from counterbench.run.prompt_ids import store_prompt_ids
from counterbench.run.redact import Redactor
from counterbench.run.store import Store, open_store, remove_store_files
from counterbench.run.summary import RunSummary
from counterbench.run.writer import DEFAULT_WINDOW_S, BatchWriter


def run_prompts(
    prompts: pd.DataFrame, models: Sequence[str | Backend], options: RunOptions | None = None, **keywords: Any
) -> RunSummary:
    """Send every prompt to every model and store the answers; works inside a running event loop.

    ``options`` (:class:`~counterbench.options.RunOptions`) says how, and ``keywords`` replace its
    fields: ``store``, ``concurrency``, ``timeout``, ... and the generation options flat (``temperature``,
    ``max_tokens``, ``seed``, ``reasoning_effort``, ``structured``, ``logprobs``). Without ``max_tokens``, a
    prompt's own ``requested_max_tokens`` is its limit (the rule of :mod:`counterbench.options`).
    ``models`` are model strings (``sim:biased``, ``openai:gpt-4o-mini``, ...) or ready
    :class:`~counterbench.models.base.Backend` objects. Re-running with the same prompts, models and
    generation options resumes: finished answers are never requested again.
    """
    from counterbench.run.sync import in_notebook, loop_running, run_sync

    opts = RunOptions.from_keywords(options, **keywords)
    if opts.handle_signals is None:
        in_thread = loop_running() or threading.current_thread() is not threading.main_thread()
        opts = dataclasses.replace(opts, handle_signals=not in_thread)
    if opts.progress is None and in_notebook():
        opts = dataclasses.replace(opts, progress="rich")
    return run_sync(arun_prompts(prompts, list(models), opts))


async def arun_prompts(
    prompts: pd.DataFrame, models: Sequence[str | Backend], options: RunOptions | None = None, **keywords: Any
) -> RunSummary:
    """Async form of :func:`run_prompts` (the same ``options`` and ``keywords``).

    ``retry_errors`` also re-sends stored ``truncated``/``filtered``/``empty`` answers; ``retry_max_tokens``
    sends the ``truncated`` ones with that larger token limit (stored under the run's config; the run
    records the limit). ``endpoint_moved`` says a model whose base URL changed since its stored answers
    is still the same model. ``ray`` (``True``, a cluster address or
    :class:`~counterbench.run.ray_exec.RayOptions`) answers the pending prompts on Ray actors (see
    :mod:`counterbench.run.ray_exec`); the store stays the one place answers are kept.

    The steps: settle the settings (:func:`_settle`), make the backends and check them against the prompts
    (:func:`_check_backends`), open the store and record the run, plan each model's lane (:func:`_plan_lanes`),
    drive the engine (:func:`_drive`), and say how it ended (:func:`_ended`).
    """
    opts = RunOptions.from_keywords(options, **keywords)
    setup = _settle(prompts, models, opts)
    backends = await _create_backends(models, setup.dotenv, opts.timeout, opts.env)
    if opts.batch:  # the batch engine is imported only for a batch run
        from counterbench.run.batch_lane import check_batch

        check_batch(opts, backends)  # a family without a batch API: one line, before the store
    store_path = Path(opts.store)
    created = not store_path.exists()
    state = _Kept()
    try:
        modes = _check_backends(backends, prompts, setup)
        store_obj = open_store(store_path)
        try:
            from counterbench.version import __version__

            run_config = _run_config(setup, backends, modes)
            safe_command = setup.redactor.redact(opts.command)
            # the lock first (one transaction), then the identity checks, the prompts and the plan
            run_id = store_obj.start_run("run", safe_command or "python: run_prompts", run_config, __version__)
            state.owned = True
            lanes, largest = _plan_lanes(store_obj, run_id, setup, backends, run_config)
            engine, writer, display = _engine(store_obj, run_id, setup, lanes, largest)
            status, totals, notes, unsaved = await _drive(engine, writer, display, store_obj, run_id, backends, lanes,
                                                          state)
            _ended(writer, lanes, status, totals, unsaved, store_obj.path)
            state.kept = True
            return RunSummary(
                store=store_obj.path, run_id=run_id, status=status,
                models={lane.model: lane_summary(lane) for lane in lanes}, totals=totals.as_dict(),
                elapsed_s=time.monotonic() - setup.started, resume_command=safe_command, unsaved_file=unsaved,
                notes=notes, config_fp=str(run_config["config_fp"]), cost_unsure_usd=round(engine.budget.unsure, 6),
                repeat_config_fps=tuple(run_config.get("repeat_config_fps", ())),
            )
        finally:
            store_obj.close()
            if created and state.owned and not state.kept:
                remove_store_files(store_path)  # a failed first run leaves nothing behind
    finally:
        for b in backends:
            with contextlib.suppress(Exception):
                await b.aclose()


@dataclass
class _Setup:
    """What the checks before any backend is made settle: the options, the generation config, the prompts."""

    opts: RunOptions
    ray_opts: Any
    started: float
    config: GenerationConfig
    items: list[Any]
    records: list[tuple[Any, ...]]
    bigger: GenerationConfig | None
    price_table: Any
    limits: RateLimits
    parser: ResponseParser
    redactor: Redactor
    dotenv: Path | None


@dataclass
class _Kept:
    """Whether this run owns the store's run row (it started one) and keeps the store (something is in it)."""

    owned: bool = False
    kept: bool = False


def _settle(prompts: pd.DataFrame, models: Sequence[str | Backend], opts: RunOptions) -> _Setup:
    """Every check that needs no backend and no store: Ray reachable, the options, the prompts, the prices."""
    from counterbench.run.ray_exec import ray_options, require_ray
    from counterbench.run.ray_setup import probe_address

    ray_opts = ray_options(opts.ray)
    if ray_opts is not None:
        if ray_opts.address is not None:
            probe_address(ray_opts.address)  # before anything slow: nobody there is one line at once
        require_ray()
    started = time.monotonic()
    opts.check()
    config = opts.generation_config(models)
    check_repeats(opts.generation.repeats)
    if opts.generation.repeats > 1 and (opts.batch or ray_opts is not None):
        raise UserError("--repeats goes with the engine on this machine only, not with --batch or --ray")
    items, records = prompt_items(prompts)
    if config.prompt_max_tokens and all(item.max_tokens is None for item in items):
        config = dataclasses.replace(config, prompt_max_tokens=False)  # nothing to honour: the plain fingerprint
    bigger = _bigger_config(config, opts.retry_max_tokens, opts.retry_errors)
    price_table = load_price_table(opts.prices)
    if not models:
        raise UserError("give at least one model (--model)")
    dotenv = Path(opts.env_file) if opts.env_file is not None else None
    return _Setup(opts, ray_opts, started, config, items, records, bigger, price_table,
                  RateLimits(rpm=opts.rpm, tpm=opts.tpm), ResponseParser(opts.parse_profile),
                  Redactor.from_environment(opts.env, dotenv), dotenv)


def _engine_for(setup: _Setup) -> Callable[..., Any]:
    """The run's engine class: the batch engine (imported only then) with ``--batch``."""
    from counterbench.run.ray_exec import engine_class

    if not setup.opts.batch:
        return engine_class(setup.ray_opts)
    from counterbench.run.batch_engine import engine_for

    return engine_for(setup.opts, engine_class(setup.ray_opts))


def _check_backends(backends: list[Backend], prompts: pd.DataFrame, setup: _Setup) -> dict[str, Any]:
    """Each model's structured-output mode (also refusing a mode its family lacks); a simulated model's file
    checked against the prompts; a price for each model under ``--max-cost``."""
    modes = structured_modes(backends, setup.config)
    if any(b.simulated for b in backends):  # (the simulated model is not imported for a run without one)
        from counterbench.models.simulated import SimulatedBackend

        for b in backends:
            if isinstance(b, SimulatedBackend):
                b.check_prompts(prompts)  # a sim:FILE.yaml's effects name columns and identities of these prompts
    if setup.opts.max_cost is not None:
        for b in backends:
            if setup.price_table.lookup(model_spec(b), batch=setup.opts.batch) is None:
                raise UserError(f"--max-cost needs a price for {b.name}; add a pattern for it to a price file "
                                "and pass --prices FILE")
    return dict(modes)


def _run_config(setup: _Setup, backends: list[Backend], modes: Mapping[str, Any]) -> dict[str, Any]:
    """The run's settings as the store records them."""
    opts, config = setup.opts, setup.config
    run_config = {
        "models": [b.name for b in backends], "model_specs": {b.name: model_spec(b) for b in backends},
        "endpoints": {b.name: endpoint_of(b) for b in backends}, "generation": config.as_dict(),
        "config_fp": config.fingerprint(), "prompts": len(setup.items), "concurrency": opts.concurrency,
        "rpm": opts.rpm, "tpm": opts.tpm, "timeout_s": opts.timeout, "max_cost": opts.max_cost,
        "no_cache": opts.no_cache, "retry_errors": opts.retry_errors, "retry_max_tokens": opts.retry_max_tokens,
        "parse_profile": opts.parse_profile, "structured_modes": dict(modes),
        "batch": opts.batch,
    }
    if opts.generation.repeats > 1:  # a run without repeats records its settings as before
        run_config["repeats"] = opts.generation.repeats
        run_config["repeat_config_fps"] = [config.for_repeat(k).fingerprint()
                                           for k in range(1, opts.generation.repeats)]
    if opts.stopping is not None:
        run_config["stopping"] = opts.stopping.as_dict()
    if setup.ray_opts is not None:
        ray = setup.ray_opts
        run_config["ray"] = {"address": ray.address, "actors": ray.actors, "threads": ray.threads}
    return run_config


def _plan_lanes(store: Store, run_id: int, setup: _Setup, backends: list[Backend],
                run_config: Mapping[str, Any]) -> tuple[list[Lane], int]:
    """Check each model's identity against its stored answers, store the prompts' ids, and plan what is left
    per model (a lane each); also the largest request in tokens. A failure here marks the run failed."""
    opts, config, items = setup.opts, setup.config, setup.items
    config_fp = str(run_config["config_fp"])
    try:
        for b in backends:
            if not opts.endpoint_moved:
                check_endpoint(store, b.name, run_config["endpoints"][b.name])
            if not opts.same_model:  # a moved endpoint is the endpoint check's: URLs are not compared
                check_model_spec(store, b.name, model_spec(b))
        store.save_config(config_fp, config.as_dict())
        for k in range(1, opts.generation.repeats):
            store.save_config(config.for_repeat(k).fingerprint(), config.for_repeat(k).as_dict())
        setup.records = store_prompt_ids(store, items, setup.records)  # unique per study in this store
        largest = max(i.est_input_tokens + config.for_prompt(i.max_tokens).max_tokens for i in items)
        largest = max(largest, max(i.est_input_tokens for i in items) + (setup.bigger.max_tokens if setup.bigger
                                                                          else 0))
        lanes = [
            Lane(model=b.name, backend=b, config_fp=config_fp,
                 work=plan_repeats(store, items, b.name, config, opts.generation.repeats, no_cache=opts.no_cache,
                                   retry_errors=opts.retry_errors, bigger_config=setup.bigger),
                 price=setup.price_table.lookup(model_spec(b), batch=setup.opts.batch),
                 request_bucket=setup.limits.request_bucket(),
                 token_bucket=setup.limits.token_bucket(largest))
            for b in backends
        ]
    except BaseException:
        with contextlib.suppress(UserError):
            store.finish_run(run_id, "failed", {})
        raise
    for lane in lanes:
        lane.counters.total = lane.work.n_prompts
        lane.counters.skipped = lane.work.already_done
    return lanes, largest


def _engine(store: Store, run_id: int, setup: _Setup, lanes: list[Lane],
            largest: int) -> tuple[Any, BatchWriter, RunDisplay]:
    """The engine (local, or on Ray) over the lanes, with its writer (the new prompts queued first)."""
    from counterbench.run.ray_exec import configure_ray

    opts = setup.opts
    new_prompts = _new_prompts(store, setup.records)  # committed while the first requests are in flight
    window = DEFAULT_WINDOW_S if opts.commit_window is None else opts.commit_window
    writer = BatchWriter(store, max_rows=opts.batch_rows, window=window,
                         model_specs={lane.model: model_spec(lane.backend) for lane in lanes})
    writer.save_prompts(new_prompts)  # in chunks once the engine runs; an answer brings its own
    setup.parser.warm_up((item.use_case, item.answer_type) for item in setup.items)  # not on the first reply
    display = RunDisplay({lane.model: lane.counters for lane in lanes}, mode=opts.progress or "off",
                         plain_every_s=opts.progress_every)
    engine = _engine_for(setup)(
        lanes, config=setup.config,
        settings=EngineSettings(opts.concurrency, opts.timeout, opts.max_cost, opts.retry,
                                opts.handle_signals is not False),
        writer=writer, parser=setup.parser, redactor=setup.redactor, display=display, run_id=run_id,
    )
    configure_ray(engine, setup.ray_opts, opts.parse_profile, opts.rpm, opts.tpm, largest)
    return engine, writer, display


async def _drive(engine: Any, writer: BatchWriter, display: RunDisplay, store: Store, run_id: int,
                 backends: list[Backend], lanes: list[Lane], state: _Kept) -> tuple[str, Any, list[str], Path | None]:
    """Run the engine, then flush the writer and record how the run ended: its status, the totals, the notes
    on structured output and the recovery file of answers the store could not take."""
    display.start()
    watch_notices(backends, display.message)
    # the set-up's objects (prompt table, plan) move to the permanent generation: a full garbage
    # collection over them stalled the event loop for 10-20 ms, holding replies back from their commit
    # (no collection first: one took 60-200 ms before the first request)
    gc.freeze()
    status = "failed"
    try:
        status = await engine.run()
    finally:
        gc.unfreeze()
        display.stop()
        watch_notices(backends, None)
        writer.close()
        unsaved = writer.rescue()
        totals = sum_counters([lane.counters for lane in lanes])
        notes = structured_notices(backends)
        if not writer.vanished:
            with contextlib.suppress(UserError):
                if notes:  # recorded with the run's settings: some answers were sent without the constraint
                    store.execute_write_params(
                        "UPDATE runs SET config = json_set(config, '$.notes', json(?)) WHERE run_id = ?",
                        (json.dumps(notes), run_id),
                    )
                store.finish_run(run_id, status, totals.as_dict())
        state.kept = writer.written > 0 or writer.vanished or unsaved is not None
    return status, totals, notes, unsaved


def _ended(writer: BatchWriter, lanes: list[Lane], status: str, totals: Any, unsaved: Path | None,
           store: Path) -> None:
    """A run that did not end well is one line: the store failing, a model's fatal error, a stalled writer."""
    if writer.failure is not None:
        raise UserError(_failure_message(writer.failure, unsaved, len(writer.unsaved)))
    fatal = next((lane.fatal for lane in lanes if lane.fatal), None)
    if fatal is not None:
        got = int(totals.done)
        kept_note = f"the {got:,} answers received are stored, rerun to resume" if got else "nothing was stored"
        raise UserError(f"{fatal}; {kept_note}")
    if status == "failed":
        raise UserError(f"writing to store {store} failed for a while, so the run stopped; "
                        "every answer received was saved in the end — rerun to resume")


def _failure_message(failure: UserError, unsaved: Path | None, n_unsaved: int) -> str:
    if unsaved is not None:
        return (f"{failure}; the {n_unsaved:,} answers not in the store are in {unsaved} "
                "(load them with `counterbench import`, then rerun to resume)")
    if n_unsaved:
        return f"{failure}; {n_unsaved:,} answers could not be saved anywhere (no writable folder)"
    return f"{failure}; every answer received is in the store — rerun to resume"


def _new_prompts(store: Store, records: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The prompt rows the store lacks (a resumed run has none)."""
    known = store.prompt_hashes()
    return [rec for rec in records if rec[1] not in known.get(rec[0], ())]


def _bigger_config(
    config: GenerationConfig, retry_max_tokens: int | None, retry_errors: bool
) -> GenerationConfig | None:
    if retry_max_tokens is None:
        return None
    if not retry_errors:
        raise UserError("--retry-max-tokens applies to re-sent truncated answers: add --retry-errors")
    if isinstance(retry_max_tokens, bool) or not isinstance(retry_max_tokens, int) or \
            retry_max_tokens <= config.max_tokens:
        raise UserError(
            f"--retry-max-tokens must be a whole number above --max-tokens ({config.max_tokens}), "
            f"got {retry_max_tokens!r}"
        )
    return dataclasses.replace(config, max_tokens=retry_max_tokens, prompt_max_tokens=False)


async def _create_backends(
    models: Sequence[str | Backend], dotenv: Path | None, timeout: float, env: Mapping[str, str] | None
) -> list[Backend]:
    from counterbench.models.registry import create_backend

    backends: list[Backend] = []
    seen: set[str] = set()
    try:
        for model in models:
            if isinstance(model, str):
                backend = create_backend(model, dotenv_path=dotenv, timeout_s=timeout, env=env)
            else:
                backend = model
            backends.append(backend)
            if backend.name in seen:
                raise UserError(f"model {backend.name} is given twice")
            seen.add(backend.name)
    except BaseException:
        for b in backends:
            with contextlib.suppress(Exception):
                await b.aclose()
        raise
    return backends
