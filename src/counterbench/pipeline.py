"""The notebook-friendly Python API: ``run_prompts`` that works inside a running event loop, and ``audit``.

``counterbench.run_prompts(table, models, temperature=0.2, max_tokens=32)`` takes the generation options
as keywords and works the same in a script and in Jupyter (whose event loop is already running: the
run then happens on a worker thread with its own loop, and the call still returns the summary).
``counterbench.audit(study, models, ...)`` is the CLI's ``audit``: prompts -> run -> analysis -> report,
returning an :class:`Audit` that displays as HTML in a notebook.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.analyses.rupeebias import AnalysisResult
    from counterbench.models.base import Backend
    from counterbench.report.api import ReportFiles
    from counterbench.run.runner import RunSummary

T = TypeVar("T")
GENERATION_KEYS = ("temperature", "max_tokens", "seed", "reasoning_effort", "structured")


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion; on a worker thread with its own loop when a loop is already running."""
    if not _loop_running():
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as err:  # re-raised in the caller's thread
            box["error"] = err

    thread = threading.Thread(target=work, name="counterbench-run", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and "ZMQ" in type(shell).__name__


def run_prompts(prompts: pd.DataFrame, models: Sequence[str | Backend], **options: Any) -> RunSummary:
    """Send every prompt to every model and store the answers (see :func:`counterbench.run.runner.arun_prompts`).

    Generation options may be given as keywords (``temperature``, ``max_tokens``, ``seed``,
    ``reasoning_effort``, ``structured``) instead of a ``config``; without ``max_tokens``, a prompt's
    own ``requested_max_tokens`` is its limit. Works inside a running event loop.
    """
    from counterbench.errors import UserError
    from counterbench.models.base import GenerationConfig
    from counterbench.run.runner import arun_prompts

    generation = {k: options.pop(k) for k in GENERATION_KEYS if k in options and options[k] is not None}
    for k in GENERATION_KEYS:
        options.pop(k, None)
    if generation:
        if options.get("config") is not None:
            raise UserError("give generation options either as keywords or as config=, not both")
        # without max_tokens, prompts that request their own limit get it (an explicit max_tokens wins)
        options["config"] = GenerationConfig(**generation, prompt_max_tokens="max_tokens" not in generation)
    in_thread = _loop_running() or threading.current_thread() is not threading.main_thread()
    options.setdefault("handle_signals", not in_thread)
    if "progress" not in options and _in_notebook():
        options["progress"] = "rich"
    return run_sync(arun_prompts(prompts, list(models), **options))


@dataclass
class Audit:
    """What :func:`audit` did: the run summary, the analysis and the report files."""

    run: RunSummary
    analysis: AnalysisResult
    report: ReportFiles

    def _repr_html_(self) -> str:
        return (f"<p>counterbench audit: {self.run.status}; report at <code>{self.report.html}</code></p>"
                + self.analysis._repr_html_())


def audit(
    study: Any,
    models: Sequence[str | Backend],
    *,
    out: Path | str = "counterbench-report",
    store: Path | str = "counterbench.db",
    bootstrap: int = 2000,
    bootstrap_seed: int = 0,
    parse_profile: str = "default",
    tau: float = 10.0,
    title: str | None = None,
    samples: bool = True,
    **options: Any,
) -> Audit:
    """Run ``study`` on ``models``, analyse the answers and write the report, like ``counterbench audit``.

    ``options``: prompt filters (``language=["en"]``, ``preset="quick"``, ``sample_slots=...``) and run
    options (``concurrency``, generation keywords such as ``temperature``). Writes ``OUT/report.html``,
    ``OUT/report.md`` and the tables in ``OUT/analysis``.
    """
    from dataclasses import fields

    from counterbench.errors import UserError
    from counterbench.prompts import PromptFilters, prompts
    from counterbench.report.api import audit_report
    from counterbench.report.context import load_analysis_dir

    filter_names = {f.name for f in fields(PromptFilters)} | {"from_release"}
    filters = {k: options.pop(k) for k in list(options) if k in filter_names}
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"out={out_dir} is a file; give a folder for the report and the analysis tables")
    table = prompts(study, **filters)
    summary = run_prompts(table, models, store=store, parse_profile=parse_profile, **options)
    files = audit_report(Path(store), list(summary.models), table, summary.config_fp, out_dir,
                         parse_profile=parse_profile, bootstrap=bootstrap, seed=bootstrap_seed, tau=tau,
                         samples=samples, title=title, study=study)
    data = load_analysis_dir(out_dir / "analysis")
    from counterbench.analyses.rupeebias import AnalysisResult

    return Audit(summary, AnalysisResult(data.tables, data.summary), files)
