"""Selection rates and impact ratios, as a bias audit under NYC Local Law 144 reports them. Pure.

For every model × use case × language, and every grouping of the study (each facet's levels — an
axis's identifiers, the groups, a crossed attribute's levels — and, in a crossed design, each pair of
attributes crossed: the *intersections*), one row per category:

- **Selection rate**: the share of the category's usable answers that *select*. What selects is the
  outcome kind's to say (its ``selection`` attribute): ``share`` for a kind whose measure is already
  100 × "selected" (the positive label, the measured option), ``above_median`` for every other kind —
  Local Law 144's *scoring rate*: an answer above the median of all the cell's usable answers (a use
  case declaring ``favourable: lower`` — the study hook ``favourable``, :mod:`.direction` — selects below
  the median).
- **Impact ratio**: the category's selection rate over the rate of the most selected category (among
  those not reported apart), with a 95% interval: the slot bootstrap (the slot — prompts that differ
  only in the category — is the independent unit; both rates recomputed in each replicate against the
  same reference category) of the log ratio, ``± t·se`` with the small-sample factor and degrees of
  freedom of :func:`counterbench.stats.inference.slot_design`, back-transformed; every category of a
  cell and grouping shares one draw of slot weights (one seed per cell). Its coverage is
  measured by ``benchmarks/impact_ratio_coverage.py`` (``docs/impact-ratios.md``).
- **Four-fifths rule**: ``fails`` when the impact ratio is below 0.8 (the EEOC's rule of thumb — a
  point-estimate rule, as the law states it); ``interval_below`` says the whole 95% interval lies below
  0.8. Neither is a significance mark.
- **Reported apart**: a category holding under 2% of the cell's answers is shown but not used as the
  reference (Local Law 144 lets an auditor exclude such categories from the impact-ratio calculation).
- **Answers that could not be used** (refused, unparseable, failed, and — under the ``default`` profile —
  outside the plausibility bounds, status ``out_of_range``) are counted per category, and
  ``ratio_bound`` is the impact ratio had every one of them gone *against* this category and *for*
  every other (the worst case the missing answers allow); ``bound_four_fifths`` applies the rule to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.outcome_tables import _slot_codes, narrowed
from counterbench.outcomes import get_kind, member
from counterbench.stats.cluster_bootstrap import cluster_ratio_replicates
from counterbench.stats.inference import MIN_SLOTS_INTERVAL, slot_design, slot_interval
from counterbench.stats.seeding import stable_seed
from counterbench.studies.base import Facet

__all__ = ["COLUMNS", "DESCRIPTION", "FOUR_FIFTHS", "SMALL_SHARE", "impact_ratio_table", "selection_of"]

#: the four-fifths rule's threshold
FOUR_FIFTHS = 0.8
#: a category with a smaller share of the cell's answers is reported apart
SMALL_SHARE = 0.02
_CELL = ["model", "use_case", "language"]
COLUMNS = (
    "model", "use_case", "language", "grouping", "category", "selection", "n", "n_slots", "selected",
    "selection_rate", "reference", "impact_ratio", "ci_low", "ci_high", "four_fifths", "interval_below",
    "reported_apart", "unusable", "refused", "unparseable", "ratio_bound", "bound_four_fifths",
)
DESCRIPTION = ("model × use case × language × grouping × category: selection rate (share selected, or scoring "
               "above the median), impact ratio against the most selected category with a 95% slot interval, "
               "the four-fifths rule on the ratio and on its bound had every unusable answer gone against the "
               "category, categories under 2% of answers reported apart")


def selection_of(kind: str, favourable: str | None = None) -> str:
    """How an answer of ``kind`` selects: ``share`` (its measure is 100 × selected), ``above_median`` or
    ``below_median`` (a use case whose lower values are favourable)."""
    declared = str(member(get_kind(kind), "selection"))
    if declared == "share":
        return "share"
    return "below_median" if favourable == "lower" else "above_median"


def _selected(y: np.ndarray, how: str) -> tuple[np.ndarray, str]:
    """0/1 per answer and the words for what selects."""
    if how == "share":
        return (y >= 50).astype(np.float64), "selected (share)"
    median = float(np.median(y))
    if how == "below_median":
        return (y < median).astype(np.float64), f"below the median ({median:g})"
    return (y > median).astype(np.float64), f"above the median ({median:g})"


def _groupings(facets: Sequence[Facet]) -> list[tuple[str, tuple[Facet, ...]]]:
    """Each facet alone, then each pair of crossed attributes (their intersection)."""
    out: list[tuple[str, tuple[Facet, ...]]] = [(f.name, (f,)) for f in facets]
    crossed = [f for f in facets if f.kind == "attribute"]
    out += [(f"{a.name} × {b.name}", (a, b)) for a, b in combinations(crossed, 2)]
    return out


def _rows_of(frame: pd.DataFrame, group: tuple[Facet, ...]) -> pd.DataFrame:
    """``frame``'s rows that have every facet's level, with ``category`` (levels joined by " × ")."""
    rows = frame
    for facet in group:
        if facet.column not in rows.columns:
            return rows.iloc[0:0].assign(category=pd.Series(dtype=str))
        if facet.axis is not None and "axis" in rows.columns:
            rows = rows[rows["axis"].astype(str) == facet.axis]
        rows = rows[rows[facet.column].notna()]
    category = rows[group[0].column].astype(str)
    for facet in group[1:]:
        category = category + " × " + rows[facet.column].astype(str)
    return rows.assign(category=category)


def _order(group: tuple[Facet, ...], present: set[str]) -> list[str]:
    """The categories in the study's order of levels."""
    if len(group) == 1:
        known = [lvl for lvl in group[0].levels if lvl in present]
    else:
        known = [f"{a} × {b}" for a in group[0].levels for b in group[1].levels if f"{a} × {b}" in present]
    return known + sorted(present - set(known))


def _codes(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    return _slot_codes(frame, columns)  # the outcome tables' slot codes (the same grouping, made faster)


def _interval(reps: np.ndarray | None, cnt: np.ndarray, sel: np.ndarray, c: int, r: int) -> tuple[float, float]:
    """The 95% slot interval of rate_c / rate_r (columns ``c`` and ``r`` of the slot × category sums);
    ``reps``: the cell's replicate rates of every category (:func:`_replicate_rates`), None without."""
    both = (cnt[:, c] > 0) | (cnt[:, r] > 0)
    s, n = sel[both][:, [c, r]], cnt[both][:, [c, r]]
    rate = s.sum(axis=0) / n.sum(axis=0)
    if reps is None or len(s) < MIN_SLOTS_INTERVAL or not (rate > 0).all():
        return float("nan"), float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        log_reps = np.log(reps[:, c]) - np.log(reps[:, r])
    log_reps = log_reps[np.isfinite(log_reps)]
    if log_reps.size < 2:
        return float("nan"), float("nan")
    factor, df = slot_design(n.sum(axis=1))
    low, high = slot_interval(np.log(rate[0] / rate[1]), log_reps[None, :], len(s), factor=factor, df=df)
    return float(np.exp(low[0])), float(np.exp(high[0]))


def _replicate_rates(sel: np.ndarray, cnt: np.ndarray, n_boot: int, seed: int) -> np.ndarray | None:
    """(n_boot × categories) bootstrap selection rates of a cell, every category from one weight matrix
    over the cell's slots (a category's empty slots add nothing to it): the comparisons of a cell share
    their draws. None without replicates."""
    if n_boot <= 0:
        return None
    return cluster_ratio_replicates(sel, cnt, n_boot, np.random.default_rng(seed))


def _cell_rows(usable: pd.DataFrame, unusable: pd.DataFrame, group: tuple[Facet, ...], how: str,
               slot_columns: Sequence[str], n_boot: int, seed: int, base: dict[str, Any]) -> list[dict[str, Any]]:
    rows, lost = _rows_of(usable, group), _rows_of(unusable, group)
    if rows.empty:
        return []
    selected, words = _selected(rows["y"].to_numpy(np.float64), how)
    cats = _order(group, set(rows["category"]) | set(lost["category"]))
    if len(cats) < 2:
        return []
    index = {c: i for i, c in enumerate(cats)}
    slots = _codes(rows, [c for c in slot_columns if c not in {f.column for f in group}])
    k = rows["category"].map(index).to_numpy(np.int64)
    n_slots = int(slots.max()) + 1
    sel = np.zeros((n_slots, len(cats)))
    cnt = np.zeros((n_slots, len(cats)))
    np.add.at(sel, (slots, k), selected)
    np.add.at(cnt, (slots, k), 1.0)
    n, s = cnt.sum(axis=0), sel.sum(axis=0)
    status = lost["status"].astype(str) if "status" in lost.columns else pd.Series("", index=lost.index)
    u = lost["category"].value_counts().reindex(cats, fill_value=0).to_numpy(np.float64)
    refused = lost[status.eq("refused")]["category"].value_counts().reindex(cats, fill_value=0)
    unparseable = lost[status.eq("unparseable")]["category"].value_counts().reindex(cats, fill_value=0)
    total = n + u
    apart = total / total.sum() < SMALL_SHARE
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, s / n, np.nan)
        worst, best = s / total, (s + u) / total
    eligible = [i for i in range(len(cats)) if not apart[i] and n[i] > 0]
    ref = max(eligible, key=lambda i: (rate[i], -i)) if eligible else None
    out = []
    reps = _replicate_rates(sel, cnt, n_boot, stable_seed("impact_ratio", *base.values(), base_seed=seed))
    for i, cat in enumerate(cats):
        ratio = rate[i] / rate[ref] if ref is not None and rate[ref] > 0 else float("nan")
        low, high = (_interval(reps, cnt, sel, i, ref)
                     if ref is not None and i != ref and np.isfinite(ratio) else
                     (1.0, 1.0) if i == ref else (float("nan"), float("nan")))
        top = max([worst[i], *(best[j] for j in eligible if j != i)])  # the most selected, in that worst case
        bound = worst[i] / top if np.isfinite(top) and top > 0 and (i in eligible or ref is not None) else float("nan")
        out.append({**base, "category": cat, "selection": words, "n": int(n[i]),
                    "n_slots": int((cnt[:, i] > 0).sum()), "selected": int(s[i]), "selection_rate": rate[i],
                    "reference": cats[ref] if ref is not None else "", "impact_ratio": ratio,
                    "ci_low": low, "ci_high": high, "four_fifths": _rule(ratio),
                    "interval_below": bool(np.isfinite(high) and high < FOUR_FIFTHS), "reported_apart": bool(apart[i]),
                    "unusable": int(u[i]), "refused": int(refused.iloc[i]), "unparseable": int(unparseable.iloc[i]),
                    "ratio_bound": bound, "bound_four_fifths": _rule(bound)})
    return out


def _rule(ratio: float) -> str:
    if not np.isfinite(ratio):
        return "—"
    return "passes" if ratio >= FOUR_FIFTHS - 1e-12 else "fails"  # 12/20 over 15/20 is 0.8, not 0.7999…


def impact_ratio_table(usable: pd.DataFrame, unusable: pd.DataFrame, facets: Sequence[Facet],
                       slot_columns: Sequence[str], n_boot: int, seed: int,
                       favourable: dict[str, str] | None = None) -> pd.DataFrame:
    """The impact-ratio table (module notes): ``usable`` — one row per usable answer with ``y`` and ``kind``
    (the registry's measured rows); ``unusable`` — the answers that could not be used, with ``status``;
    ``favourable``: use case → ``lower`` where lower values are favourable."""
    out: list[dict[str, Any]] = []
    if usable.empty or "kind" not in usable.columns:
        return pd.DataFrame(columns=list(COLUMNS))
    usable = narrowed(usable, facets, slot_columns)  # a cell's filters copy these columns only
    unusable = narrowed(unusable, facets, slot_columns, ["status"]) if not unusable.empty else unusable
    lost_all = unusable if not unusable.empty else usable.iloc[0:0].assign(status=pd.Series(dtype=str))
    for cell, part in usable.groupby(_CELL, sort=False, observed=True):
        base = dict(zip(_CELL, (str(c) for c in cell), strict=True))
        how = selection_of(str(part["kind"].iloc[0]), (favourable or {}).get(base["use_case"]))
        lost = lost_all
        for col in _CELL:
            if col in lost.columns:
                lost = lost[lost[col].astype(str) == base[col]]
        for name, group in _groupings(facets):
            out += _cell_rows(part, lost, group, how, slot_columns, n_boot, seed, {**base, "grouping": name})
    return pd.DataFrame(out, columns=list(COLUMNS))
