"""Each analysis table in isolation: a table that fails is named with its reason, the others still come out.

A run is paid for before it is analysed; a bug in one table must not lose the report. Every table
(or every group of tables one function builds together) is computed through :func:`isolated`: an
exception other than a user's mistake (:class:`~counterbench.errors.UserError`, which still stops the
command with its one line) is caught, the table is left empty, and :class:`FailedTables` records its
name with a one-line reason (the exception's type and first line). The summary's ``failed_tables``
carries them to the report (a red banner naming each), the CLI (one line each, exit code 1) and the
gate; ``counterbench analyze`` / ``report --store`` recompute them from the store at no model cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from counterbench.errors import UserError

__all__ = ["FailedTables", "failure_reason", "isolated", "merge_failures"]

T = TypeVar("T")
#: the summary key of the failed tables (name → one-line reason)
FAILED_KEY = "failed_tables"
_MAX_REASON = 240


def failure_reason(error: BaseException) -> str:
    """One line: the exception's type and the first line of its message, shortened."""
    lines = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"


class FailedTables:
    """The tables of one analysis that failed: name → one-line reason, in the order they failed."""

    def __init__(self) -> None:
        self.reasons: dict[str, str] = {}

    def add(self, names: Iterable[str], error: BaseException) -> None:
        reason = failure_reason(error)
        for name in names:
            self.reasons.setdefault(name, reason)

    def __bool__(self) -> bool:
        return bool(self.reasons)


def isolated(names: str | Iterable[str], build: Callable[[], T], fallback: Callable[[], T],
             failed: FailedTables) -> T:
    """``build()``, or ``fallback()`` with ``names`` recorded in ``failed`` when it raises (a
    :class:`UserError` is the user's to fix and is raised as usual)."""
    try:
        return build()
    except UserError:
        raise
    except Exception as error:  # the point: one table's bug must not lose the others
        failed.add([names] if isinstance(names, str) else list(names), error)
        return fallback()


def merge_failures(summary: dict[str, Any], failed: FailedTables | Mapping[str, str]) -> None:
    """Add ``failed``'s tables to ``summary[failed_tables]`` (kept out of ``unsupported``: a failure is
    not a design that cannot support a table)."""
    reasons = failed.reasons if isinstance(failed, FailedTables) else dict(failed)
    if not reasons and FAILED_KEY not in summary:
        return
    merged = summary.setdefault(FAILED_KEY, {})
    for name, reason in reasons.items():
        merged.setdefault(name, reason)
    unsupported = summary.get("unsupported")
    if isinstance(unsupported, dict):
        for name in merged:
            unsupported.pop(name, None)
