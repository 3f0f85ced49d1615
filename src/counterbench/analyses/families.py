"""One family of marks per model: which tables mark, which only describe, and the one correction they share. Pure.

Several tables ask the same question of the same answers: the gap table (``outcome_gaps``) and the
canonical pair gaps (``cpg``) test the same matched pairs of a use case; the crossed regression tests the
gap table's contrasts again, adjusted for the other attributes; ``probability_*`` test the sampled
answers' contrasts again on p(yes). Corrected each in a family of its own, a model with no effect
anywhere would be marked somewhere in 4–7% of audits (``benchmarks/generated_studies.py``), though each
table says 5%. So:

- **One family per model.** Every row of every table in :data:`MARKING` that its own rule tests (it has
  a q-value there: enough matched slots, a finite p) enters one Benjamini–Hochberg correction per model;
  a row is marked when its q in that family is ≤ 0.05 and — for a table with an interval — the 95%
  interval excludes 0, as before. Under no effect anywhere this keeps the chance of *any* mark of the
  model at or below 5% (Simes' inequality: the p-values of these tables are positively dependent or
  independent), which is the rate the report states. ``q_value`` is the shared family's q.
- **One measure per model × use case.** A yes/no or multiple-choice use case whose answers were read
  with log-probabilities is measured twice: only its primary measure (``decision_measures.primary``,
  :mod:`.decision_primary`) enters the family; the other measure's rows keep their p and are not marked.
- **Descriptive tables** (:data:`DESCRIPTIVE`): the crossed regression and its p(yes) twin test the gap
  table's contrasts again; they keep ``p_value`` and carry no q and no mark, and the report says why.

Kendall's W per cell, per axis and per model, the language tables, the fairness ablation and the canonical
pair gaps over use cases answer questions of their own, but a null model's chance of some mark counts them
all, so they share the family too. A study with its own analysis (an ``analyze_tables`` hook) keeps its own rules.

The ``power`` table's level follows the family: α / m with m the rows the model's family tested
(:func:`family_sizes`; :mod:`.family_size` counts the same rows from a design before any answer).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from counterbench.stats.inference import ALPHA
from counterbench.stats.multiple_testing import benjamini_hochberg

__all__ = ["DESCRIPTIVE", "FAMILY", "MARKING", "Marking", "families_summary", "family_sizes", "mark_families"]


@dataclass(frozen=True)
class Marking:
    """How a marking table's rows enter the family: its p column, and its interval (``None``: none)."""

    p_col: str = "p_value"
    interval: tuple[str, str] | None = ("ci_low", "ci_high")


#: the tables whose rows share one family per model
MARKING: dict[str, Marking] = {
    "outcome_gaps": Marking(),
    "probability_gaps": Marking(),
    "language_gaps": Marking(),
    "probability_language_gaps": Marking(),
    "cpg": Marking(),
    "cpg_overall": Marking(),
    "language_moderation": Marking("shift_p_value"),
    "fairness_ablation": Marking(),
    "kendalls_w": Marking(interval=None),
    "kendalls_w_axis": Marking("p_fisher", None),
    "kendalls_w_model": Marking("p_fisher", None),
}
#: table -> why it carries no mark
DESCRIPTIVE: dict[str, str] = {
    "crossed_regression": "descriptive: it tests the gap table's contrasts again (adjusted for the other "
                          "attributes), so its p-values are shown and the marks are the gap table's",
    "probability_regression": "descriptive: it tests the p(yes) gaps' contrasts again (adjusted for the other "
                              "attributes), so its p-values are shown and the marks are the gap tables'",
}
#: the family, in words (summary ``marks``, report)
FAMILY = ("one family per model: every tested row of " + ", ".join(f"`{n}`" for n in MARKING)
          + " (on the primary measure of each yes/no or choice use case) under one Benjamini–Hochberg correction")

#: the tables measured twice: table -> whether its rows are the decision probability's
_MEASURED = {"outcome_gaps": False, "language_gaps": False, "probability_gaps": True,
             "probability_language_gaps": True}


def _not_primary(name: str, frame: pd.DataFrame, measures: pd.DataFrame | None) -> np.ndarray:
    """Rows of ``frame`` (a table measured twice) on the model × use case's other measure."""
    out = np.zeros(len(frame), dtype=bool)
    if measures is None or measures.empty or not {"model", "use_case", "primary"} <= set(measures.columns) \
            or not {"model", "use_case"} <= set(frame.columns):
        return out if not _MEASURED[name] else ~out  # no verdict: the sampled answers are primary
    on_p = {(str(m), str(u)): str(p) != "sampled" for m, u, p in
            zip(measures["model"], measures["use_case"], measures["primary"], strict=True)}
    keys = zip(frame["model"].astype(str), frame["use_case"].astype(str), strict=True)
    return np.array([on_p.get(k, False) != _MEASURED[name] for k in keys], dtype=bool)


def family_sizes(tables: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """Per model: how many rows its one family holds (the tested rows of :data:`MARKING`'s tables)."""
    sizes: dict[str, int] = {}
    for _, models, _, tested in _family_rows(tables):
        for model, n in pd.Series(tested).groupby(models).sum().items():
            sizes[str(model)] = sizes.get(str(model), 0) + int(n)
    return sizes


def _family_rows(tables: Mapping[str, pd.DataFrame]) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Per marking table present: its name, each row's model, p and whether the row is in the family."""
    measures = tables.get("decision_measures")
    parts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []  # table, models, p, in the family
    for name, how in MARKING.items():
        frame = tables.get(name)
        if frame is None or frame.empty or not {"model", "q_value", how.p_col} <= set(frame.columns):
            continue
        p = pd.to_numeric(frame[how.p_col], errors="coerce").to_numpy(np.float64)
        tested = pd.to_numeric(frame["q_value"], errors="coerce").notna().to_numpy() & np.isfinite(p)
        if name in _MEASURED:
            tested &= ~_not_primary(name, frame, measures)
        parts.append((name, frame["model"].astype(str).to_numpy(), p, tested))
    return parts


def mark_families(tables: MutableMapping[str, pd.DataFrame], alpha: float = ALPHA) -> None:
    """Re-mark ``tables`` in place: one Benjamini–Hochberg family per model over :data:`MARKING`'s tested rows,
    the other measure's rows and :data:`DESCRIPTIVE` tables unmarked (module notes); the ``power`` table's
    level and detectable gaps at each model's family size."""
    from counterbench.analyses.power import with_family

    parts = _family_rows(tables)
    if parts:
        models = np.concatenate([m for _, m, _, _ in parts])
        p_all = np.concatenate([np.where(t, p, np.nan) for _, _, p, t in parts])
        q_all = np.full(len(p_all), np.nan)
        codes, _ = pd.factorize(models)
        order = np.argsort(codes, kind="stable")  # each model's rows together, in their order
        for rows in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
            q_all[rows] = benjamini_hochberg(p_all[rows])[0]
        start = 0
        for name, _, _, _ in parts:
            frame = tables[name].copy()
            q = q_all[start:start + len(frame)]
            start += len(frame)
            marked = np.nan_to_num(q, nan=1.0) <= alpha
            interval = MARKING[name].interval
            if interval is not None and set(interval) <= set(frame.columns):
                low = pd.to_numeric(frame[interval[0]], errors="coerce").to_numpy(np.float64)
                high = pd.to_numeric(frame[interval[1]], errors="coerce").to_numpy(np.float64)
                marked &= (low > 0) | (high < 0)
            frame["q_value"], frame["significant"] = q, marked
            tables[name] = frame
    power_table = tables.get("power")
    if power_table is not None and not power_table.empty:
        tables["power"] = with_family(power_table, family_sizes(tables), alpha=alpha)
    for name in DESCRIPTIVE:
        described = tables.get(name)
        if described is not None and not described.empty and "significant" in described.columns:
            tables[name] = described.assign(q_value=np.nan, significant=False)


def families_summary(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """The summary's ``marks.families`` entries of the tables present: the shared family, or why none."""
    out = {name: FAMILY for name in MARKING if name in tables}
    out.update({name: why for name, why in DESCRIPTIVE.items() if name in tables})
    return out
