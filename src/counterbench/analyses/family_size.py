"""How many rows one model's family of marks holds for a design, before any answer: power's m.

:mod:`.families` puts every tested row of every table in :data:`~.families.MARKING` into one
Benjamini–Hochberg family per model. ``counterbench power`` tests at α / m with m that family's size,
so it counts, from the prompt table and the study alone (every prompt answered), the rows each of those
tables would test — one counter per table of :data:`~.families.MARKING` (:data:`COUNTERS`; a table added
there without a counter here fails at import), each with its table's own rule for a tested row:

- ``outcome_gaps``: per use case × language × facet, every level against the facet's reference with
  ≥ ``MIN_SLOTS`` matched slots (the study's slot columns, less the facet's own);
- ``language_gaps`` (two or more languages): the same rows, the first language against each other one,
  on slots matched in both languages;
- ``probability_gaps`` / ``probability_language_gaps``: none of their own — a use case read with
  log-probabilities is measured twice and only its primary measure enters the family, so each of its
  contrasts counts once (above), whichever measure is primary;
- amount use cases only: ``cpg`` (language × use case × canonical pair with ≥ ``MIN_SLOTS`` matched
  profile × question variant slots), ``cpg_overall`` (language × pair, use cases with ≥ 2 matched slots
  pooled), ``kendalls_w`` (language × use case × axis with ≥ 2 profiles and 2 identifiers),
  ``kendalls_w_axis`` (language × axis), ``kendalls_w_model`` (language), ``language_moderation`` (two or
  more languages: each other language × axis, slots with a pair in both languages) and
  ``fairness_ablation`` (prompts of the fairness variant: per language, slots of both prompts).

A study with its own analysis (an ``analyze_tables`` hook) marks its other use cases by its own rules:
only the amount tables count. ``tests/analyses/test_family_size.py`` checks the count against the rows
an analysis of simulated answers puts in the family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from counterbench.analyses.families import MARKING
from counterbench.analyses.slot_keys import joined_keys
from counterbench.outcomes import has_pair_tables, kind_of_answer_type
from counterbench.stats.inference import MIN_SLOTS
from counterbench.studies.base import Facet, Study
from counterbench.studies.hooks import hook

__all__ = ["COUNTERS", "design_family_size", "family_rows"]

SLOT = ["use_case", "axis", "profile_id", "question_variant"]


@dataclass(frozen=True)
class _Design:
    study: Study
    standard: pd.DataFrame  # the standard prompts
    amount: pd.DataFrame  # the standard prompts of amount use cases
    fairness: pd.DataFrame  # the fairness prompts of amount use cases
    languages: list[str]  # the languages present, in study order
    own_analysis: bool  # the study marks its non-amount use cases by its own rules


def _facet_levels(part: pd.DataFrame, facet: Facet) -> pd.DataFrame:
    column, axis = facet.column, facet.axis
    if column not in part.columns:
        return part.iloc[0:0].assign(level=pd.Series(dtype=str))
    rows = part if axis is None or "axis" not in part.columns else part[part["axis"].astype(str) == str(axis)]
    return rows[rows[column].notna()].assign(level=lambda f: f[column].astype(str))


def _gap_rows(d: _Design) -> int:
    if d.own_analysis:
        return 0
    total = 0
    for _, part in d.standard.groupby(["use_case", "language"], sort=False, observed=True):
        for facet in d.study.facets:
            rows = _facet_levels(part, facet)
            slots = joined_keys(rows, [c for c in d.study.slot_columns if c != facet.column])
            ref = set(slots[rows["level"] == facet.reference])
            total += sum(len(ref & set(slots[rows["level"] == level])) >= MIN_SLOTS
                         for level in facet.levels if level != facet.reference)
    return total


def _language_gap_rows(d: _Design) -> int:
    if d.own_analysis or len(d.languages) < 2:
        return 0
    first, total = d.languages[0], 0
    for _, part in d.standard.groupby("use_case", sort=False, observed=True):
        for facet in d.study.facets:
            rows = _facet_levels(part, facet)
            slots = joined_keys(rows, [c for c in d.study.slot_columns if c not in (facet.column, "language")])
            lang = rows["language"].astype(str)

            def at(level: str, language: str, rows: pd.DataFrame = rows, slots: pd.Series = slots,
                   lang: pd.Series = lang) -> set[str]:
                return set(slots[(rows["level"] == level) & (lang == language)])

            for other in d.languages[1:]:
                ref = at(facet.reference, first) & at(facet.reference, other)
                total += sum(len(ref & at(level, first) & at(level, other)) >= MIN_SLOTS
                             for level in facet.levels if level != facet.reference)
    return total


def _pair_slots(frame: pd.DataFrame, axis: str, pair: tuple[str, str]) -> pd.Series:
    """Per language × use case: the profile × question variant slots with both identities of ``pair``."""
    column = axis if axis in frame.columns and axis not in ("axis", "identifier") else "identifier"
    rows = frame if column != "identifier" else frame[frame["axis"].astype(str) == axis]
    rows = rows[rows[column].astype(str).isin(pair)]
    both = rows.groupby(["language", "use_case", "profile_id", "question_variant"], observed=True)[column].nunique()
    return (both == 2).groupby(level=["language", "use_case"], observed=True).sum()


def _cpg_rows(d: _Design) -> int:
    return sum(int((_pair_slots(d.amount, a, p) >= MIN_SLOTS).sum()) for a, p in d.study.canonical_pairs.items())


def _cpg_overall_rows(d: _Design) -> int:
    total = 0
    for axis, pair in d.study.canonical_pairs.items():
        n = _pair_slots(d.amount, axis, pair)
        total += int((n[n >= 2].groupby(level="language").sum() >= MIN_SLOTS).sum())
    return total


def _w_cells(d: _Design) -> pd.DataFrame:
    """Per language × use case × axis: whether Kendall's W is computed (≥ 2 profiles, ≥ 2 identifiers)."""
    if d.amount.empty:
        return pd.DataFrame(columns=["language", "use_case", "axis", "ok"])
    size = d.amount.groupby(["language", "use_case", "axis"], observed=True).agg(
        profiles=("profile_id", "nunique"), ids=("identifier", "nunique")).reset_index()
    return size.assign(ok=(size["profiles"] >= 2) & (size["ids"] >= 2))


def _w_rows(d: _Design) -> int:
    return int(_w_cells(d)["ok"].sum())


def _w_axis_rows(d: _Design) -> int:
    cells = _w_cells(d)
    return len(cells[cells["ok"].astype(bool)].groupby(["language", "axis"]))


def _w_model_rows(d: _Design) -> int:
    cells = _w_cells(d)
    return int(cells[cells["ok"].astype(bool)]["language"].nunique())


def _paired_slots(frame: pd.DataFrame, columns: list[str]) -> set[str]:
    """The slots (``columns``) holding a pair: two identifiers of one axis."""
    counts = frame.groupby(columns, observed=True)["identifier"].nunique()
    return {"\x1f".join(map(str, k if isinstance(k, tuple) else (k,))) for k in counts[counts >= 2].index}


def _moderation_rows(d: _Design) -> int:
    if len(d.languages) < 2 or d.amount.empty:
        return 0
    first = d.amount[d.amount["language"].astype(str) == d.languages[0]]
    total = 0
    for other in d.languages[1:]:
        second = d.amount[d.amount["language"].astype(str) == other]
        for axis in first["axis"].astype(str).unique():
            a, b = (f[f["axis"].astype(str) == axis] for f in (first, second))
            total += len(_paired_slots(a, SLOT) & _paired_slots(b, SLOT)) >= MIN_SLOTS if len(b) else 0
    return total


def _fairness_rows(d: _Design) -> int:
    if d.fairness.empty:
        return 0
    cols = ["use_case", "profile_id", "question_variant"]
    total = 0
    for lang in d.languages:
        arms = [f[f["language"].astype(str) == lang] for f in (d.amount, d.fairness)]
        if all(len(a) for a in arms):
            slots = [{s.rsplit("\x1f", 1)[0] for s in _paired_slots(a, [*cols, "axis"])} for a in arms]
            total += len(slots[0] & slots[1]) >= MIN_SLOTS
    return total


def _none(d: _Design) -> int:
    return 0  # the other measure of a use case counted above: one measure per use case enters the family


#: table of :data:`~.families.MARKING` -> its rows per model for a design
COUNTERS: dict[str, Callable[[_Design], int]] = {
    "outcome_gaps": _gap_rows, "probability_gaps": _none, "language_gaps": _language_gap_rows,
    "probability_language_gaps": _none, "cpg": _cpg_rows, "cpg_overall": _cpg_overall_rows,
    "language_moderation": _moderation_rows, "fairness_ablation": _fairness_rows, "kendalls_w": _w_rows,
    "kendalls_w_axis": _w_axis_rows, "kendalls_w_model": _w_model_rows,
}
if set(COUNTERS) != set(MARKING):  # pragma: no cover - a table added to the family must be counted here
    raise RuntimeError(f"family_size.COUNTERS and families.MARKING differ: {sorted(set(COUNTERS) ^ set(MARKING))}")


def _design(prompts: pd.DataFrame, study: Study) -> _Design:
    variant = prompts["variant"].astype(str) if "variant" in prompts.columns else pd.Series("standard",
                                                                                             index=prompts.index)
    if "answer_type" in prompts.columns:
        flags = {a: has_pair_tables(kind_of_answer_type(a)) for a in prompts["answer_type"].dropna().unique()}
        amount = prompts["answer_type"].map(lambda a: flags.get(a, has_pair_tables(None))).astype(bool)
    else:
        amount = pd.Series(has_pair_tables(None), index=prompts.index)
    present = set(prompts["language"].astype(str))
    languages = [c for c in study.languages if c in present] + sorted(present - set(study.languages))
    return _Design(study, prompts[variant == "standard"], prompts[(variant == "standard") & amount],
                   prompts[(variant == "fairness") & amount], languages,
                   callable(hook(study, "analyze_tables")))


def family_rows(prompts: pd.DataFrame, study: Study) -> dict[str, int]:
    """Per table of the family: the rows one model's analysis tests if every prompt is answered."""
    design = _design(prompts, study)
    return {name: int(count(design)) for name, count in COUNTERS.items()}


def design_family_size(prompts: pd.DataFrame, study: Study) -> int:
    """The size of one model's family of marks for ``prompts`` (every variant the run sends) — power's m."""
    return max(sum(family_rows(prompts, study).values()), 1)
