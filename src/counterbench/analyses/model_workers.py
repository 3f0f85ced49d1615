"""Models analysed side by side: each model's share of a by-model analysis in its own worker process.

Every model's tables depend on that model's answers alone (each cell has its own bootstrap stream, keyed
by the cell, :mod:`counterbench.families.amount.by_model`), so the models can be analysed at the same time
and combined afterwards; the numbers are the same to the bit as one after another. The workers are forked
copies of the analysing process (they inherit the study, the options and the open store's path, and open
their own store connection); each returns its model's tables, pickled. The analysis itself runs on one
core (:func:`counterbench.stats.blas.one_blas_thread`), so ``workers`` up to the machine's cores cut the
wall time of a many-model store almost in proportion (``docs/scale.md``); memory grows by one model's
answers per worker.

``workers``: 1 analyses in this process; None (the default) picks :func:`auto_workers`. Where the
platform cannot fork (Windows), models are analysed one after another.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple, TypeVar

import pandas as pd

from counterbench.analyses.model_summaries import ModelSummary
from counterbench.cpus import usable_cpus
from counterbench.errors import UserError

__all__ = ["AUTO_FROM_ANSWERS", "ModelShare", "auto_workers", "checked_workers", "map_in_workers"]

T = TypeVar("T")
R = TypeVar("R")

#: a store with fewer answers than this is analysed in one process (starting workers would cost more)
AUTO_FROM_ANSWERS = 100_000


class ModelShare(NamedTuple):
    """What one model's answers add to a study's by-model analysis beside its family's tables."""

    checks: pd.DataFrame  # the answer checks of every answer, usable or not
    specs: dict[str, str]  # model label -> the model string it ran as
    records: dict[str, dict[str, Any]]  # the test record's entries
    summary: ModelSummary  # the slot summaries model comparisons use (empty when it failed)


_TASK: Callable[[int], Any] | None = None  # the forked workers' task (set before the fork, inherited)


def _call(index: int) -> Any:
    assert _TASK is not None
    return _TASK(index)


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _ray_running() -> bool:
    """Whether this process is a Ray driver (after ``--ray``): its gRPC threads are better not forked."""
    ray = sys.modules.get("ray")
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


def auto_workers(answers: int, models: int) -> int:
    """One worker per core (at most one per model) for a store of at least :data:`AUTO_FROM_ANSWERS`
    answers; 1 below that, and in a process that drives Ray."""
    if answers < AUTO_FROM_ANSWERS or not can_fork() or _ray_running():
        return 1
    return max(1, min(usable_cpus(), models))


def checked_workers(workers: object) -> int | None:
    """``workers`` as given by a user: None or a whole number ≥ 1 (one clear line otherwise)."""
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UserError(f"--workers must be a whole number ≥ 1, got {workers!r}")
    return workers


def map_in_workers(task: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``[task(item) for item in items]``, in up to ``workers`` forked processes when that is more than one;
    the results in the order of ``items`` (each must pickle). An exception in a worker is raised here."""
    global _TASK
    if workers <= 1 or len(items) < 2 or not can_fork():
        return [task(item) for item in items]
    if _TASK is not None:  # already inside a map (a worker's own analysis): no workers of workers
        return [task(item) for item in items]
    _TASK = lambda k: task(items[k])  # noqa: E731 — inherited by the forked workers
    try:
        with ProcessPoolExecutor(min(workers, len(items)), mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_call, range(len(items))))
    except BrokenProcessPool:  # a worker died (killed, out of memory): say so in one line
        raise UserError(f"a worker process analysing models stopped unexpectedly (out of memory?); "
                        f"analyse with fewer at once: --workers {max(1, workers // 2)}") from None
    finally:
        _TASK = None
