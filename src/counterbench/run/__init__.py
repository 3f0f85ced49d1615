"""Running prompts against models: the async engine, the SQLite store, retries, limits and costs.

Python API::

    from counterbench.run import run_prompts
    from counterbench.run.results import load_results

    summary = run_prompts(prompts_df, ["sim:biased"], store="counterbench.db")
    results = load_results("counterbench.db")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from counterbench.run.runner import arun_prompts, run_prompts
    from counterbench.run.summary import RunSummary

__all__ = ["RunSummary", "arun_prompts", "load_results", "run_prompts"]


def __getattr__(name: str) -> Any:  # lazy: importing counterbench.run stays cheap
    if name == "RunSummary":
        from counterbench.run.summary import RunSummary

        return RunSummary
    if name in ("arun_prompts", "run_prompts"):
        from counterbench.run import runner

        return getattr(runner, name)
    if name == "load_results":
        from counterbench.run.results import load_results

        return load_results
    raise AttributeError(name)
