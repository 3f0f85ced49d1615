"""An analysis runs with one BLAS thread and gives it back (:mod:`counterbench.stats.blas`)."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from counterbench.stats.blas import one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [int(d["num_threads"]) for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"]


def test_one_thread_inside_and_the_limits_restored_after() -> None:
    before = _blas_threads()
    seen: list[list[int]] = []

    @one_blas_thread
    def work(x: int, *, y: int) -> int:
        seen.append(_blas_threads())
        return x + y

    assert work(1, y=2) == 3 and work.__name__ == "work"
    assert seen and all(n == 1 for n in seen[0])
    assert _blas_threads() == before


def test_without_threadpoolctl_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_threadpoolctl(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "threadpoolctl":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_threadpoolctl)
    assert one_blas_thread(lambda: _blas_threads())() == _blas_threads()
