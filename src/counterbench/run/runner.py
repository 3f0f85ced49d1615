"""``run_prompts``: the Python API behind ``counterbench run``.

Validate everything first (settings, models, keys, prompt table, store), then plan what is left
per model, then run the engine. A user mistake raises :class:`~counterbench.errors.UserError`
before any request is sent; whatever was answered is committed before this returns or raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.errors import UserError
from counterbench.models.base import Backend, GenerationConfig
from counterbench.run.costs import load_price_table
from counterbench.run.engine import EngineSettings, Lane, lane_summary
from counterbench.run.limits import RateLimits, RetryPolicy
from counterbench.run.parsing import ResponseParser
from counterbench.run.plan import plan_model, prompt_items
from counterbench.run.progress import RunDisplay, sum_counters
from counterbench.run.redact import Redactor
from counterbench.run.store import DEFAULT_STORE, open_store
from counterbench.run.writer import BatchWriter


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

    @property
    def complete(self) -> bool:
        return self.status == "completed"


def run_prompts(prompts: pd.DataFrame, models: Sequence[str | Backend], **options: Any) -> RunSummary:
    """Send every prompt of ``prompts`` to every model and store the answers (see :func:`arun_prompts`)."""
    return asyncio.run(arun_prompts(prompts, models, **options))


async def arun_prompts(
    prompts: pd.DataFrame,
    models: Sequence[str | Backend],
    *,
    store: Path | str = DEFAULT_STORE,
    config: GenerationConfig | None = None,
    concurrency: int = 16,
    rpm: float | None = None,
    tpm: float | None = None,
    timeout: float = 60.0,
    max_cost: float | None = None,
    no_cache: bool = False,
    retry_errors: bool = False,
    env_file: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    prices: Path | str | None = None,
    parse_profile: str = "default",
    retry: RetryPolicy | None = None,
    progress: str = "off",
    command: str | None = None,
    batch_rows: int = 256,
    batch_seconds: float = 0.1,
    handle_signals: bool = True,
    ray: Any = None,
) -> RunSummary:
    """Async form of :func:`run_prompts`.

    ``models`` are model strings (``sim:biased``, ``openai:gpt-4o-mini``, ...) or ready
    :class:`~counterbench.models.base.Backend` objects. Re-running with the same prompts, models
    and ``config`` resumes: finished answers are never requested again. ``ray`` (``True``, a cluster
    address or :class:`~counterbench.run.ray_exec.RayOptions`) answers the pending prompts on Ray actors
    (see :mod:`counterbench.run.ray_exec`); the store stays the one place answers are kept.
    """
    from counterbench.run.ray_exec import configure_ray, engine_class, ray_options, require_ray

    ray_opts = ray_options(ray)
    if ray_opts is not None:
        require_ray()
    started = time.monotonic()
    _check_settings(concurrency, timeout, max_cost, batch_rows, batch_seconds)
    config = config or GenerationConfig()
    _check_config(config)
    limits = RateLimits(rpm=rpm, tpm=tpm)
    parser = ResponseParser(parse_profile)
    items, records = prompt_items(prompts)
    price_table = load_price_table(prices)
    if not models:
        raise UserError("give at least one model (--model)")
    dotenv = Path(env_file) if env_file is not None else None
    redactor = Redactor.from_environment(env, dotenv)
    backends = await _create_backends(models, dotenv, timeout, env)
    try:
        if max_cost is not None:
            for b in backends:
                if price_table.lookup(b.name) is None:
                    raise UserError(
                        f"--max-cost needs a price for {b.name}; add a pattern for it to a price file "
                        "and pass --prices FILE"
                    )
        store_obj = open_store(store)
        try:
            config_fp = config.fingerprint()
            store_obj.save_config(config_fp, config.as_dict())
            largest = max(i.est_input_tokens for i in items) + config.max_tokens
            lanes = [
                Lane(
                    model=b.name,
                    backend=b,
                    config_fp=config_fp,
                    work=plan_model(store_obj, items, b.name, config_fp, no_cache=no_cache, retry_errors=retry_errors),
                    price=price_table.lookup(b.name),
                    request_bucket=limits.request_bucket(),
                    token_bucket=limits.token_bucket(largest),
                )
                for b in backends
            ]
            for lane in lanes:
                lane.counters.total = lane.work.n_prompts
                lane.counters.skipped = lane.work.already_done
            run_config = {
                "models": [b.name for b in backends],
                "generation": config.as_dict(),
                "config_fp": config_fp,
                "prompts": len(items),
                "concurrency": concurrency,
                "rpm": rpm,
                "tpm": tpm,
                "timeout_s": timeout,
                "max_cost": max_cost,
                "no_cache": no_cache,
                "retry_errors": retry_errors,
                "parse_profile": parse_profile,
            }
            if ray_opts is not None:
                run_config["ray"] = {"address": ray_opts.address, "actors": ray_opts.actors,
                                     "threads": ray_opts.threads}
            from counterbench import __version__

            safe_command = redactor.redact(command)
            run_id = store_obj.start_run("run", safe_command or "python: run_prompts", run_config, __version__)
            writer = BatchWriter(store_obj, max_rows=batch_rows, max_seconds=batch_seconds)
            writer.save_prompts(records)  # on the writer thread, while the first requests are out
            display = RunDisplay({lane.model: lane.counters for lane in lanes}, mode=progress)
            engine = engine_class(ray_opts)(
                lanes,
                config=config,
                settings=EngineSettings(concurrency, timeout, max_cost, retry or RetryPolicy(), handle_signals),
                writer=writer,
                parser=parser,
                redactor=redactor,
                display=display,
                run_id=run_id,
            )
            configure_ray(engine, ray_opts, parse_profile, rpm, tpm, largest)
            display.start()
            status = "failed"
            try:
                status = await engine.run()
            finally:
                display.stop()
                writer.close()
                unsaved = writer.rescue()
                totals = sum_counters([lane.counters for lane in lanes])
                with contextlib.suppress(UserError):
                    store_obj.finish_run(run_id, status, totals.as_dict())
            if writer.failure is not None:
                where = f"; the unsaved answers are in {unsaved} (load them with `counterbench import`)"
                where = where if unsaved else ""
                raise UserError(f"{writer.failure}{where}")
            fatal = next((lane.fatal for lane in lanes if lane.fatal), None)
            if fatal is not None:
                got = int(totals.done)
                kept = f"the {got:,} answers received are stored, rerun to resume" if got else "nothing was stored"
                raise UserError(f"{fatal}; {kept}")
            if status == "failed":
                raise UserError(f"writing to store {store_obj.path} failed for a while, so the run stopped; "
                                "every answer received was saved in the end — rerun to resume")
            return RunSummary(
                store=store_obj.path,
                run_id=run_id,
                status=status,
                models={lane.model: lane_summary(lane) for lane in lanes},
                totals=totals.as_dict(),
                elapsed_s=time.monotonic() - started,
                resume_command=safe_command,
                unsaved_file=unsaved,
            )
        finally:
            store_obj.close()
    finally:
        for b in backends:
            with contextlib.suppress(Exception):
                await b.aclose()


def _check_settings(concurrency: int, timeout: float, max_cost: float | None, rows: int, seconds: float) -> None:
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise UserError(f"--concurrency must be a whole number of at least 1, got {concurrency!r}")
    if not timeout > 0:
        raise UserError(f"--timeout must be greater than 0 seconds, got {timeout!r}")
    if max_cost is not None and not max_cost >= 0:
        raise UserError(f"--max-cost must be 0 or more (USD), got {max_cost!r}")
    if rows < 1 or not seconds > 0:
        raise UserError("the store batch size and interval must be positive")


def _check_config(config: GenerationConfig) -> None:
    if config.max_tokens < 1:
        raise UserError(f"--max-tokens must be at least 1, got {config.max_tokens}")
    if config.temperature < 0:
        raise UserError(f"--temperature must not be negative, got {config.temperature:g}")


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
            f"unparseable {c['unparseable']:,} · errors {c['errors']:,} · retries {c['retries']:,} · "
            f"${c['cost_usd']:.4f}"
        )
        reasons = c.get("finish_reasons") or {}
        odd = {k: v for k, v in reasons.items() if k not in ("stop", "end_turn", "eos")}
        if odd:
            lines.append("  finish reasons: " + ", ".join(f"{k} {v:,}" for k, v in sorted(odd.items())))
    lines.append(f"store: {summary.store} (run {summary.run_id}, {summary.elapsed_s:.1f} s)")
    earlier = sum(int(c.get("stored_errors", 0)) for c in summary.models.values())
    if summary.totals.get("errors") or earlier:
        failed = int(summary.totals.get("errors", 0)) + earlier
        lines.append(f"{failed:,} request(s) failed; rerun with --retry-errors to send only those again")
    return "\n".join(lines)
