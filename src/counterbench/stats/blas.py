"""One BLAS thread for an analysis: its matrix products are many and small, and OpenBLAS's thread hand-off
costs more than it saves.

An analysis makes tens of thousands of products of a few thousand rows at most (bootstrap weights ×
slot statistics, swap arrangements × differences). OpenBLAS splits each one above a small size over
its threads; the hand-off costs tens of microseconds on an idle machine and milliseconds on a loaded
one, where the threads then spin waiting for a core. Measured on the 9-model store analysis
(``benchmarks/analysis_speed.py``, 2 cores, load average 5–8): 62 s of CPU and 115 s of wall time
with OpenBLAS's 2 threads, 51 s and 84 s with one.

:func:`one_blas_thread` limits the BLAS libraries numpy loaded to one thread while a function runs
(``threadpoolctl``, when it is installed; otherwise it changes nothing) and restores them after. Results
do not depend on it: OpenBLAS splits a product's output between threads, never the sum behind one
element, as they cannot depend on a machine's number of cores (every table of the golden store was
compared bit for bit under 1 and 2 threads).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["one_blas_thread"]

P = ParamSpec("P")
R = TypeVar("R")


def one_blas_thread(func: Callable[P, R]) -> Callable[P, R]:
    """``func`` run with one BLAS thread (see the module notes); nested calls keep the outer limit."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # not installed: BLAS keeps its threads
            return func(*args, **kwargs)
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper
