"""``group_gaps_over_names``: group comparisons of a names-grouped design that generalise over names. Pure.

``outcome_gaps`` compares a group with the reference group inside matched slots, resampling slots: its
inference holds *for these names* — the names the study lists. This table treats the names of a group
as a sample of names like them (:mod:`counterbench.stats.name_sample`): each name's slot-adjusted mean,
the groups compared by Welch's t over names. A model that reacts to single names but not to groups has
a true gap of 0 here, and the table's interval covers it (``docs/analysis.md``, "Two kinds of group
inference", gives the simulation).

Decisions:

- One row per model × use case × language × group facet (a facet of kind ``group``) × group other than
  the facet's reference. A name is a value of the study's counterfactual column (``identifier``); its
  group is the facet's column. Only ``standard``-variant rows with status ``ok`` enter (``TableInputs.rows``).
- Slots are the study's slot columns without the facet's and the name's columns.
- A group with fewer than :data:`~counterbench.stats.name_sample.MIN_NAMES` names: the row is kept with
  its difference, no interval, no p, not testable, and ``note`` saying so.
- Marks: Benjamini–Hochberg q ≤ 0.05 within one model's rows of this table *and* the 95% interval
  excludes 0 (:func:`counterbench.stats.inference.earned_marks`, testable from 3 names per group).
- ``reference_mean`` / ``comparison_mean``: the mean of the group's names' plain means (each name weighs
  the same), in the measure's units; ``difference`` is in the kind's gap unit (for a ratio kind, % of
  the slot mean).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from counterbench.outcomes import get_kind
from counterbench.outcomes.base import OutcomeSpec, comparison_of
from counterbench.stats.inference import earned_marks
from counterbench.stats.name_sample import MIN_NAMES, name_sample_gap, slot_adjusted_name_means
from counterbench.studies.base import Facet

__all__ = ["COLUMNS", "DESCRIPTION", "EMPTY_REASON", "TITLE", "group_gaps_over_names", "names_sample_findings"]

_CELL = ["model", "use_case", "kind", "language"]
COLUMNS: tuple[str, ...] = (
    *_CELL, "facet", "reference", "comparison", "n_names_reference", "n_names_comparison", "n_slots",
    "reference_mean", "comparison_mean", "difference", "ci_low", "ci_high", "df", "p_value", "q_value", "testable",
    "significant", "difference_unit", "note")
DESCRIPTION = ("one group against the reference group over names like these: each name's slot-adjusted mean, "
               "the groups compared by Welch's t over names (names as a sample of their group)")
TITLE = "Groups over names like these (names as a sample)"
EMPTY_REASON = "only designs whose identifiers are names grouped into groups (axes with groups:) have it"


def group_gaps_over_names(rows: pd.DataFrame, facets: Sequence[Facet], slot_columns: Sequence[str],
                          name_column: str = "identifier") -> pd.DataFrame:
    """The table (see the module notes) of the measured rows ``rows`` (``TableInputs.rows``)."""
    groups = [f for f in facets if f.kind == "group" and f.column in rows.columns and name_column in rows.columns]
    if rows.empty or not groups:
        return pd.DataFrame(columns=list(COLUMNS))
    out: list[dict[str, Any]] = []
    for cell, part in rows.groupby(_CELL, sort=False, observed=True):
        base = dict(zip(_CELL, (str(c) for c in cell), strict=True))
        ratio = "gap_form" in part.columns and str(part["gap_form"].iloc[0]) == "ratio"
        unit = str(part["unit"].iloc[0]) if "unit" in part.columns else ""
        for facet in groups:
            out += _facet_rows(base, part, facet, slot_columns, name_column, ratio, unit)
    frame = pd.DataFrame(out, columns=[*COLUMNS, "_fewest"])
    if frame.empty:
        return frame.drop(columns="_fewest")
    frame = earned_marks(frame, n_col="_fewest", min_slots=MIN_NAMES)
    frame.loc[~frame["testable"].astype(bool), "p_value"] = np.nan
    return frame.drop(columns="_fewest").reindex(columns=list(COLUMNS))


def _facet_rows(base: dict[str, str], part: pd.DataFrame, facet: Facet, slot_columns: Sequence[str],
                name_column: str, ratio: bool, unit: str) -> list[dict[str, Any]]:
    rows = part
    if facet.axis is not None and "axis" in part.columns:
        rows = part[part["axis"].astype(str) == facet.axis]
    rows = rows[rows[facet.column].notna() & rows[name_column].notna()]
    if rows.empty:
        return []
    slot_cols = [c for c in slot_columns if c not in (facet.column, name_column) and c in rows.columns]
    slots = (rows[slot_cols].astype(str).groupby(slot_cols, sort=False, dropna=False).ngroup().to_numpy(np.int64)
             if slot_cols else np.zeros(len(rows), dtype=np.int64))
    name_codes, _ = pd.factorize(rows[name_column].astype(str), sort=False)
    y = rows["y"].to_numpy(np.float64)
    present, adjusted = slot_adjusted_name_means(y, slots, name_codes, ratio=ratio)
    group_of = rows.groupby(name_codes, sort=False)[facet.column].first().astype(str)
    plain = pd.Series(y).groupby(name_codes).mean()
    value = pd.Series(adjusted, index=present)
    member = {g: [int(c) for c in present if group_of.get(c) == g] for g in facet.levels}
    ref = member.get(facet.reference, [])
    if not ref:
        return []
    out = []
    for level in facet.levels:
        mine = member.get(level, [])
        if level == facet.reference or not mine:
            continue
        gap = name_sample_gap(value[mine].to_numpy(), value[ref].to_numpy())
        short = [f"{g} has {len(m)}" for g, m in ((level, mine), (facet.reference, ref)) if len(m) < MIN_NAMES]
        note = (f"too few names to generalise over names: {' and '.join(short)} ({MIN_NAMES} needed in each group)"
                if short else "")
        out.append({**base, "facet": facet.name, "reference": facet.reference, "comparison": level,
                    "n_names_reference": len(ref), "n_names_comparison": len(mine), "n_slots": int(slots.max()) + 1,
                    "reference_mean": float(plain[ref].mean()), "comparison_mean": float(plain[mine].mean()),
                    "difference": gap.difference, "ci_low": gap.ci_low, "ci_high": gap.ci_high, "df": gap.df,
                    "p_value": gap.p_value, "difference_unit": unit, "note": note,
                    "_fewest": min(len(ref), len(mine))})
    return out


def names_sample_findings(table: pd.DataFrame | None, labels: Mapping[str, str] | None = None,
                          outcomes: Mapping[str, OutcomeSpec] | None = None) -> list[str]:
    """One sentence per marked row: the group gap over names like these, in the kind's words."""
    from counterbench.analyses.flags import truthy

    if table is None or table.empty:
        return []
    names = dict(labels or {})
    out = []
    for r in table[[truthy(v) for v in table["significant"]]].to_dict("records"):
        spec = (outcomes or {}).get(str(r["use_case"]))
        if spec is None:
            continue
        compare = comparison_of(get_kind(spec.kind), spec)
        model = str(r["model"])
        words = compare.words(model, str(r["comparison"]), str(r["reference"]), float(r["difference"]))
        out.append(f"{words}, over names like these (names as a sample of their group; {r['facet']}; "
                   f"{names.get(str(r['use_case']), r['use_case'])}, {names.get(str(r['language']), r['language'])}; "
                   f"95% CI {compare.format(float(r['ci_low']))} to {compare.format(float(r['ci_high']))}; "
                   f"{int(r['n_names_comparison'])} and {int(r['n_names_reference'])} names, each name one "
                   "observation).")
    return out
