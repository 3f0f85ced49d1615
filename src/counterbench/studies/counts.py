"""How big a study's prompt table is, without building it: its prompts, use cases and identifiers.

``counterbench studies`` lists every registered study with these numbers. Building the whole table for them
writes every prompt's text (tens of thousands of resumes or explanations); a study that knows its design
counts them from the design instead, through the optional hook ``prompt_counts``
(:class:`counterbench.studies.hooks.StudyHooks`). :func:`prompt_counts` asks that hook, else counts the
table :meth:`~counterbench.studies.base.Study.expand` builds, so every study has counts and a study's own
always equal its table's (``tests/studies/test_prompt_counts.py`` checks each registered study).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class PromptCounts:
    """What a study's standard prompt table (``expand()``) holds: its number of rows, and the distinct values
    of its ``use_case`` and ``identifier`` columns (missing values left out, as ``nunique`` does)."""

    prompts: int
    use_cases: frozenset[Any]
    identifiers: frozenset[Any]

    @classmethod
    def of(cls, table: pd.DataFrame) -> PromptCounts:
        """The counts of a built prompt table."""
        return cls(len(table), frozenset(table["use_case"].dropna()), frozenset(table["identifier"].dropna()))

    @classmethod
    def of_rows(cls, prompts: int, use_cases: Iterable[Any], identifiers: Iterable[Any]) -> PromptCounts:
        """The counts of ``prompts`` rows holding these use cases and identifiers (repeats and missing values
        are dropped)."""
        return cls(prompts, _present(use_cases), _present(identifiers))


def _present(values: Iterable[Any]) -> frozenset[Any]:
    """The distinct values but ``None`` and a float NaN (what ``dropna`` leaves out of a prompt table's column)."""
    return frozenset(v for v in values if v is not None and not (isinstance(v, float) and v != v))


def prompt_counts(study: Any) -> PromptCounts:
    """``study``'s counts (:class:`PromptCounts`): from its ``prompt_counts`` hook, else from its expanded table.

    A study that cannot expand (it needs its data: ``--data FILE``) raises what its ``expand`` raises."""
    from counterbench.studies.hooks import hook

    own = hook(study, "prompt_counts")
    if own is not None:
        counts: PromptCounts = own()
        return counts
    return PromptCounts.of(study.expand())
