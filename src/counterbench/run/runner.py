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
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.errors import UserError
from counterbench.models.base import Backend, GenerationConfig, endpoint_of
from counterbench.models.labels import model_spec
from counterbench.models.simulated import SimulatedBackend
from counterbench.models.structured import structured_modes, structured_notices, watch_notices
from counterbench.options import RunOptions
from counterbench.run.batch_engine import check_batch, engine_for
from counterbench.run.costs import load_price_table
from counterbench.run.lane import EngineSettings, Lane, lane_summary
from counterbench.run.limits import RateLimits
from counterbench.run.parsing import ResponseParser
from counterbench.run.plan import plan_model, prompt_items
from counterbench.run.progress import RunDisplay, sum_counters
from counterbench.run.prompt_ids import store_prompt_ids
from counterbench.run.redact import Redactor
from counterbench.run.store import Store, open_store, remove_store_files
from counterbench.run.writer import DEFAULT_WINDOW_S, BatchWriter


@dataclass
class RunSummary:
    """What a run did. ``status``: ``completed``, ``interrupted``, ``max_cost`` or ``failed``."""

    store: Path
    run_id: int
    status: str
    models: dict[str, dict[str, Any]]
    totals: dict[str, Any]
    elapsed_s: float
    resume_command: str | None = None
    unsaved_file: Path | None = None
    notes: list[str] = field(default_factory=list)
    #: fingerprint of the generation config the answers are stored under
    config_fp: str = ""
    #: with --max-cost: USD that attempts of unknown bill (timeouts, dropped connections) may have cost
    #: at worst, counted against the budget next to ``totals["cost_usd"]``
    cost_unsure_usd: float = 0.0

    @property
    def complete(self) -> bool:
        return self.status == "completed"


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
    """
    from counterbench.run.ray_exec import configure_ray, engine_class, ray_options, require_ray
    from counterbench.run.ray_setup import probe_address

    opts = RunOptions.from_keywords(options, **keywords)
    ray_opts = ray_options(opts.ray)
    if ray_opts is not None:
        if ray_opts.address is not None:
            probe_address(ray_opts.address)  # before anything slow: nobody there is one line at once
        require_ray()
    started = time.monotonic()
    opts.check()
    config = opts.generation_config(models)
    parse_profile, retry_errors, no_cache = opts.parse_profile, opts.retry_errors, opts.no_cache
    limits = RateLimits(rpm=opts.rpm, tpm=opts.tpm)
    parser = ResponseParser(parse_profile)
    items, records = prompt_items(prompts)
    if config.prompt_max_tokens and all(item.max_tokens is None for item in items):
        config = dataclasses.replace(config, prompt_max_tokens=False)  # nothing to honour: the plain fingerprint
    bigger = _bigger_config(config, opts.retry_max_tokens, retry_errors)
    price_table = load_price_table(opts.prices)
    if not models:
        raise UserError("give at least one model (--model)")
    dotenv = Path(opts.env_file) if opts.env_file is not None else None
    redactor = Redactor.from_environment(opts.env, dotenv)
    backends = await _create_backends(models, dotenv, opts.timeout, opts.env)
    check_batch(opts, backends)  # a family without a batch API: one line, before the store
    store_path = Path(opts.store)
    created = not store_path.exists()
    owned = kept = False
    try:
        modes = structured_modes(backends, config)  # also rejects a mode a model's family lacks
        for b in backends:
            if isinstance(b, SimulatedBackend):
                b.check_prompts(prompts)  # a sim:FILE.yaml's effects name columns and identities of these prompts
        if opts.max_cost is not None:
            for b in backends:
                if price_table.lookup(model_spec(b), batch=opts.batch) is None:
                    raise UserError(
                        f"--max-cost needs a price for {b.name}; add a pattern for it to a price file "
                        "and pass --prices FILE"
                    )
        store_obj = open_store(store_path)
        try:
            endpoints = {b.name: endpoint_of(b) for b in backends}
            config_fp = config.fingerprint()
            run_config = {
                "models": [b.name for b in backends],
                "model_specs": {b.name: model_spec(b) for b in backends},
                "endpoints": endpoints,
                "generation": config.as_dict(),
                "config_fp": config_fp,
                "prompts": len(items),
                "concurrency": opts.concurrency,
                "rpm": opts.rpm,
                "tpm": opts.tpm,
                "timeout_s": opts.timeout,
                "max_cost": opts.max_cost,
                "no_cache": no_cache,
                "retry_errors": retry_errors,
                "retry_max_tokens": opts.retry_max_tokens,
                "parse_profile": parse_profile,
                "structured_modes": modes,
                "batch": opts.batch,
            }
            if ray_opts is not None:
                run_config["ray"] = {"address": ray_opts.address, "actors": ray_opts.actors,
                                     "threads": ray_opts.threads}
            from counterbench.version import __version__

            safe_command = redactor.redact(opts.command)
            # the lock first (one transaction), then the identity checks, the prompts and the plan
            run_id = store_obj.start_run("run", safe_command or "python: run_prompts", run_config, __version__)
            owned = True
            status = "failed"
            try:
                for b in backends:
                    if not opts.endpoint_moved:
                        _check_endpoint(store_obj, b.name, endpoints[b.name])
                    if not opts.same_model:  # a moved endpoint is the endpoint check's: URLs are not compared
                        check_model_spec(store_obj, b.name, model_spec(b))
                store_obj.save_config(config_fp, config.as_dict())
                records = store_prompt_ids(store_obj, items, records)  # unique per study in this store
                new_prompts = _new_prompts(store_obj, records)  # committed while the first requests are in flight
                largest = max(i.est_input_tokens + config.for_prompt(i.max_tokens).max_tokens for i in items)
                largest = max(largest, max(i.est_input_tokens for i in items) + (bigger.max_tokens if bigger else 0))
                lanes = [
                    Lane(
                        model=b.name,
                        backend=b,
                        config_fp=config_fp,
                        work=plan_model(store_obj, items, b.name, config_fp, no_cache=no_cache,
                                        retry_errors=retry_errors, bigger_config=bigger, config=config),
                        price=price_table.lookup(model_spec(b), batch=opts.batch),
                        request_bucket=limits.request_bucket(),
                        token_bucket=limits.token_bucket(largest),
                    )
                    for b in backends
                ]
            except BaseException:
                with contextlib.suppress(UserError):
                    store_obj.finish_run(run_id, "failed", {})
                raise
            for lane in lanes:
                lane.counters.total = lane.work.n_prompts
                lane.counters.skipped = lane.work.already_done
            window = DEFAULT_WINDOW_S if opts.commit_window is None else opts.commit_window
            writer = BatchWriter(store_obj, max_rows=opts.batch_rows, window=window)
            writer.save_prompts(new_prompts)  # in chunks once the engine runs; an answer brings its own
            parser.warm_up((item.use_case, item.answer_type) for item in items)  # not on the first reply
            display = RunDisplay({lane.model: lane.counters for lane in lanes}, mode=opts.progress or "off")
            engine = engine_for(opts, engine_class(ray_opts))(
                lanes,
                config=config,
                settings=EngineSettings(opts.concurrency, opts.timeout, opts.max_cost, opts.retry,
                                        opts.handle_signals is not False),
                writer=writer,
                parser=parser,
                redactor=redactor,
                display=display,
                run_id=run_id,
            )
            configure_ray(engine, ray_opts, parse_profile, opts.rpm, opts.tpm, largest)
            display.start()
            watch_notices(backends, display.message)
            # the set-up's objects (prompt table, plan) move to the permanent generation: a full garbage
            # collection over them stalled the event loop for 10-20 ms, holding replies back from their commit
            # (no collection first: one took 60-200 ms before the first request)
            gc.freeze()
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
                            store_obj.execute_write_params(
                                "UPDATE runs SET config = json_set(config, '$.notes', json(?)) WHERE run_id = ?",
                                (json.dumps(notes), run_id),
                            )
                        store_obj.finish_run(run_id, status, totals.as_dict())
                kept = writer.written > 0 or writer.vanished or unsaved is not None
            if writer.failure is not None:
                raise UserError(_failure_message(writer.failure, unsaved, len(writer.unsaved)))
            fatal = next((lane.fatal for lane in lanes if lane.fatal), None)
            if fatal is not None:
                got = int(totals.done)
                kept_note = f"the {got:,} answers received are stored, rerun to resume" if got else "nothing was stored"
                raise UserError(f"{fatal}; {kept_note}")
            if status == "failed":
                raise UserError(f"writing to store {store_obj.path} failed for a while, so the run stopped; "
                                "every answer received was saved in the end — rerun to resume")
            kept = True
            return RunSummary(
                store=store_obj.path,
                run_id=run_id,
                status=status,
                models={lane.model: lane_summary(lane) for lane in lanes},
                totals=totals.as_dict(),
                elapsed_s=time.monotonic() - started,
                resume_command=safe_command,
                unsaved_file=unsaved,
                notes=notes,
                config_fp=config_fp,
                cost_unsure_usd=round(engine.budget.unsure, 6),
            )
        finally:
            store_obj.close()
            if created and owned and not kept:
                remove_store_files(store_path)  # a failed first run leaves nothing behind
    finally:
        for b in backends:
            with contextlib.suppress(Exception):
                await b.aclose()


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


def _check_endpoint(store: Store, model: str, endpoint: str | None) -> None:
    """Refuse to add answers from another endpoint to a model's stored answers (unless the user says so)."""
    others = sorted((e or "the provider's default URL") for e in store.endpoints_of(model) if e != endpoint)
    if others:
        here = endpoint or "the provider's default URL"
        raise UserError(
            f"the store holds {model} answers from {others[0]}, but this run sends to {here}; the same name "
            "on another endpoint may be another model: use another --store, or pass --endpoint-moved if it is "
            "the same model"
        )


_URL = re.compile(r"https?://[^/\s,]+(?:/[^:\s,]*)?")


def _without_urls(spec: str) -> str:
    """A model string without its server addresses (``vllm:http://h:8000/v1:M`` -> ``vllm::M``)."""
    return _URL.sub("", spec)


def check_model_spec(store: Store, model: str, spec: str, what: str = "this run") -> None:
    """Refuse to add answers to a label's stored answers from another model string (unless the user says so);
    ``what`` names the adding command in the message (a run, an import)."""
    others = sorted(str(s) for s in store.recorded_for(model, "model_specs")
                    if s is not None and _without_urls(str(s)) != _without_urls(spec))
    if others:
        raise UserError(
            f"the store holds answers labelled {model} from model {others[0]}, but {what} gives {model}={spec}; "
            "a label names one model: use another label or --store, or pass --same-model if it is the same model"
        )


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


def format_summary(summary: RunSummary) -> str:
    """A few human lines about a finished (or stopped) run."""
    lines = []
    for model, c in summary.models.items():
        sim = " [simulated]" if c.get("simulated") else ""
        lines.append(
            f"{model}{sim}: {c['done']:,} answered now ({c['sent']:,} requests, {c['cached']:,} from cache), "
            f"{c['already_done']:,} already stored · ok {c['ok']:,} · refused {c['refused']:,} · "
            f"unparseable {c['unparseable']:,} · unfinished {c.get('unfinished', 0):,} · errors {c['errors']:,} · "
            f"retries {c['retries']:,} · "
            f"${c['cost_usd']:.4f}" + (" at batch price" if c.get("batch") else "")
        )
        if c.get("batch_jobs_open"):
            lines.append(f"  {c['batch_jobs_open']} batch job(s) still open at the provider: rerun to collect them")
        reasons = c.get("finish_reasons") or {}
        odd = {k: v for k, v in reasons.items() if k not in ("stop", "end_turn", "eos")}
        if odd:
            lines.append("  finish reasons: " + ", ".join(f"{k} {v:,}" for k, v in sorted(odd.items())))
    lines.extend(f"warning: {note}" for note in summary.notes)
    lines.append(f"store: {summary.store} (run {summary.run_id}, {summary.elapsed_s:.1f} s)")
    earlier = sum(int(c.get("stored_errors", 0)) for c in summary.models.values())
    if summary.totals.get("errors") or earlier:
        failed = int(summary.totals.get("errors", 0)) + earlier
        lines.append(f"{failed:,} request(s) failed or did not finish (truncated, filtered, empty); rerun with "
                     "--retry-errors to send only those again")
    return "\n".join(lines)
