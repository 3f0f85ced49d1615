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

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.outcome_tables import _slot_codes
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


def _order(group: tuple[Facet, ...], present: set[str]) -> list[str]:
    """The categories in the study's order of levels."""
    if len(group) == 1:
        known = [lvl for lvl in group[0].levels if lvl in present]
    else:
        known = [f"{a} × {b}" for a in group[0].levels for b in group[1].levels if f"{a} × {b}" in present]
    return known + sorted(present - set(known))


def _intervals(reps: np.ndarray | None, cnt: np.ndarray, sel: np.ndarray, cats: Sequence[int], r: int,
               designs: dict[bytes, tuple[float, float]]) -> dict[int, tuple[float, float]]:
    """The 95% slot interval of rate_c / rate_r for each ``c`` in ``cats`` (columns of the slot × category
    sums): of the log ratio, its replicates the finite differences of the categories' log replicate rates
    (``reps``: the cell's, :func:`_replicate_rates`; None without). Comparisons with as many finite replicates
    go to :func:`slot_interval` together (its rows are independent: the same numbers as one at a time);
    ``designs`` keeps :func:`slot_design` by slot sizes."""
    out = {c: (float("nan"), float("nan")) for c in cats}
    has = cnt > 0
    with np.errstate(divide="ignore", invalid="ignore"):  # whole numbers: the sums over any slots are exact
        rates = sel.sum(axis=0) / cnt.sum(axis=0)
    both = has[:, list(cats)] | has[:, [r]]  # per comparison, the slots of either category
    n_slots = both.sum(axis=0)
    ok = [(j, c) for j, c in enumerate(cats) if n_slots[j] >= MIN_SLOTS_INTERVAL and rates[c] > 0 and rates[r] > 0]
    if reps is None or not ok:
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        log_r = np.log(reps[:, r])
        diffs = np.column_stack([np.log(reps[:, c]) - log_r for _, c in ok])
    finite = np.isfinite(diffs)
    batches: dict[int, list[tuple[int, Any, np.ndarray, int, float, float]]] = {}
    for col, ((j, c), kept) in enumerate(zip(ok, finite.sum(axis=0), strict=True)):
        if kept < 2:
            continue
        log_reps = diffs[:, col] if kept == len(diffs) else diffs[finite[:, col], col]
        sizes = cnt[both[:, j], c] + cnt[both[:, j], r]
        key = sizes.tobytes()
        if key not in designs:
            designs[key] = slot_design(sizes)
        factor, df = designs[key]
        estimate = np.log(rates[c] / rates[r])
        batches.setdefault(int(kept), []).append((c, estimate, log_reps, int(n_slots[j]), factor, df))
    for batch in batches.values():
        low, high = slot_interval(np.array([b[1] for b in batch]), np.vstack([b[2] for b in batch]),
                                  np.array([b[3] for b in batch]), factor=np.array([b[4] for b in batch]),
                                  df=np.array([b[5] for b in batch]))
        for i, b in enumerate(batch):
            out[b[0]] = (float(np.exp(low[i])), float(np.exp(high[i])))
    return out


def _replicate_rates(sel: np.ndarray, cnt: np.ndarray, n_boot: int, seed: int) -> np.ndarray | None:
    """(n_boot × categories) bootstrap selection rates of a cell, every category from one weight matrix
    over the cell's slots (a category's empty slots add nothing to it): the comparisons of a cell share
    their draws. None without replicates."""
    if n_boot <= 0:
        return None
    return cluster_ratio_replicates(sel, cnt, n_boot, np.random.default_rng(seed))


def _cell_rows(y: np.ndarray, cat: np.ndarray, slot_key: np.ndarray, lost: np.ndarray, lost_status: np.ndarray,
               label: Callable[[int], str], group: tuple[Facet, ...], how: str, n_boot: int, seed: int,
               base: dict[str, Any], designs: dict[bytes, tuple[float, float]]) -> list[dict[str, Any]]:
    """A cell's rows of one grouping: ``y``, ``cat`` (category codes) and ``slot_key`` of its usable answers
    with every facet's level, ``lost``/``lost_status`` the category codes and statuses of its unusable ones."""
    if not y.size:
        return []
    selected, words = _selected(y, how)
    present = np.unique(np.concatenate([cat, lost]))
    labels = {int(c): label(int(c)) for c in present}
    cats = _order(group, set(labels.values()))
    if len(cats) < 2:
        return []
    index = {c: i for i, c in enumerate(cats)}
    lut = np.zeros(int(present.max()) + 1, dtype=np.int64)
    for c, text in labels.items():
        lut[c] = index[text]
    slots = np.asarray(pd.factorize(slot_key)[0], dtype=np.int64)  # as the outcome tables' slot codes
    k, kl, m = lut[cat], lut[lost], len(cats)
    n_slots = int(slots.max()) + 1
    flat = slots * m + k
    sel = np.bincount(flat, weights=selected, minlength=n_slots * m).reshape(n_slots, m)  # whole numbers: exact
    cnt = np.bincount(flat, minlength=n_slots * m).reshape(n_slots, m).astype(np.float64)
    n, s = cnt.sum(axis=0), sel.sum(axis=0)
    u = np.bincount(kl, minlength=m).astype(np.float64)
    refused = np.bincount(kl[lost_status == "refused"], minlength=m)
    unparseable = np.bincount(kl[lost_status == "unparseable"], minlength=m)
    total = n + u
    apart = total / total.sum() < SMALL_SHARE
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, s / n, np.nan)
        worst, best = s / total, (s + u) / total
    eligible = [i for i in range(len(cats)) if not apart[i] and n[i] > 0]
    ref = max(eligible, key=lambda i: (rate[i], -i)) if eligible else None
    out = []
    reps = _replicate_rates(sel, cnt, n_boot, stable_seed("impact_ratio", *base.values(), base_seed=seed))
    slots_of = (cnt > 0).sum(axis=0)
    ratios = [rate[i] / rate[ref] if ref is not None and rate[ref] > 0 else float("nan") for i in range(m)]
    intervals = {} if ref is None else _intervals(
        reps, cnt, sel, [i for i in range(m) if i != ref and np.isfinite(ratios[i])], ref, designs)
    ranked = sorted(eligible, key=lambda j: -best[j])[:2]  # the two most selected had every unusable one selected
    for i, cat_i in enumerate(cats):
        ratio = ratios[i]
        low, high = intervals.get(i, (1.0, 1.0) if i == ref else (float("nan"), float("nan")))
        other = [best[j] for j in ranked if j != i][:1]
        top = max(worst[i], other[0]) if other else worst[i]  # the most selected, in that worst case
        bound = worst[i] / top if np.isfinite(top) and top > 0 and (i in eligible or ref is not None) else float("nan")
        out.append({**base, "category": cat_i, "selection": words, "n": int(n[i]),
                    "n_slots": int(slots_of[i]), "selected": int(s[i]), "selection_rate": rate[i],
                    "reference": cats[ref] if ref is not None else "", "impact_ratio": ratio,
                    "ci_low": low, "ci_high": high, "four_fifths": _rule(ratio),
                    "interval_below": bool(np.isfinite(high) and high < FOUR_FIFTHS), "reported_apart": bool(apart[i]),
                    "unusable": int(u[i]), "refused": int(refused[i]), "unparseable": int(unparseable[i]),
                    "ratio_bound": bound, "bound_four_fifths": _rule(bound)})
    return out


def _rule(ratio: float) -> str:
    if not np.isfinite(ratio):
        return "—"
    return "passes" if ratio >= FOUR_FIFTHS - 1e-12 else "fails"  # 12/20 over 15/20 is 0.8, not 0.7999…


def _as_str(column: pd.Series) -> pd.Series:
    """``column.astype(str)``, without the copy when it is text already."""
    return column if column.dtype == "str" else column.astype(str)


def _text(frame: pd.DataFrame, column: str) -> np.ndarray:
    return np.asarray(_as_str(frame[column]).to_numpy(object))


class _Coded:
    """The columns the table reads from ``usable`` and the unusable answers (``lost``), each turned into numpy
    arrays once — a column's text coded in both frames together — so a cell's and a grouping's rows are index
    arrays instead of frame filters. ``None`` stands for a column a frame lacks."""

    def __init__(self, usable: pd.DataFrame, lost: pd.DataFrame) -> None:
        self.frames = (usable, lost)
        self._texts: dict[str, tuple[list[np.ndarray | None], list[np.ndarray | None], list[str]]] = {}
        self._axis: dict[str, list[np.ndarray | None]] = {}
        self._keys: dict[tuple[str, ...], np.ndarray] = {}

    def texts(self, column: str) -> tuple[list[np.ndarray | None], list[np.ndarray | None], list[str]]:
        """Per frame the codes of ``column``'s text (-1: NA) and whether it is there; the texts of the codes."""
        if column not in self._texts:
            parts = [f[column] if column in f.columns else None for f in self.frames]
            present = [_as_str(p) for p in parts if p is not None]
            joint = pd.concat(present, ignore_index=True) if present else pd.Series([], dtype=str)
            codes, uniques = pd.factorize(joint)
            split, at = [], 0
            for p in parts:
                split.append(None if p is None else np.asarray(codes[at:at + len(p)], dtype=np.int64))
                at += 0 if p is None else len(p)
            notna = [None if p is None else p.notna().to_numpy(bool) for p in parts]
            self._texts[column] = (split, notna, [str(u) for u in uniques])
        return self._texts[column]

    def on_axis(self, axis: str) -> list[np.ndarray | None]:
        """Per frame: whether a row's ``axis`` (as text) is ``axis``; None without the column."""
        if axis not in self._axis:
            self._axis[axis] = [(_as_str(f["axis"]) == axis).to_numpy(bool) if "axis" in f.columns else None
                                for f in self.frames]
        return self._axis[axis]

    def grouping(self, group: tuple[Facet, ...]) -> tuple[list[np.ndarray], list[np.ndarray], Callable[[int], str]]:
        """Per frame the rows that have every facet's level (of its axis, where the frame says the axis) and
        their category codes; the codes' categories (levels as text, joined by " × ") as a function."""
        masks, codes = [], []
        for f, frame in enumerate(self.frames):
            mask, code = np.ones(len(frame), dtype=bool), np.zeros(len(frame), dtype=np.int64)
            for facet in group:
                if facet.column not in frame.columns:
                    mask[:] = False
                    break
                axis = self.on_axis(facet.axis)[f] if facet.axis is not None else None
                splits, notnas, uniques = self.texts(facet.column)
                split, notna = splits[f], notnas[f]
                assert split is not None and notna is not None  # the frame has the column
                mask &= notna if axis is None else notna & axis
                code = code * max(1, len(uniques)) + split
            masks.append(mask)
            codes.append(code)
        texts = [self.texts(facet.column)[2] for facet in group]

        def label(code: int) -> str:
            parts = []
            for t in reversed(texts):
                code, at = divmod(code, max(1, len(t)))
                parts.append(t[at])
            return " × ".join(reversed(parts))
        return masks, codes, label

    def slot_key(self, columns: Sequence[str]) -> np.ndarray:
        """The outcome tables' slot codes of every usable row (``_slot_codes``: the combinations of ``columns``
        numbered in order of appearance), made once per set of columns: a cell's rows' codes, factorized in order
        of appearance, are the codes its own rows would get."""
        if tuple(columns) not in self._keys:
            self._keys[tuple(columns)] = _slot_codes(self.frames[0], columns)
        return self._keys[tuple(columns)]


def impact_ratio_table(usable: pd.DataFrame, unusable: pd.DataFrame, facets: Sequence[Facet],
                       slot_columns: Sequence[str], n_boot: int, seed: int,
                       favourable: dict[str, str] | None = None) -> pd.DataFrame:
    """The impact-ratio table (module notes): ``usable`` — one row per usable answer with ``y`` and ``kind``
    (the registry's measured rows); ``unusable`` — the answers that could not be used, with ``status``;
    ``favourable``: use case → ``lower`` where lower values are favourable."""
    out: list[dict[str, Any]] = []
    if usable.empty or "kind" not in usable.columns:
        return pd.DataFrame(columns=list(COLUMNS))
    lost_all = unusable if not unusable.empty else usable.iloc[0:0].assign(status=pd.Series(dtype=str))
    coded = _Coded(usable, lost_all)
    designs: dict[bytes, tuple[float, float]] = {}
    selections: dict[tuple[str, str | None], str] = {}
    y, kinds = usable["y"].to_numpy(np.float64), usable["kind"]
    status = _text(lost_all, "status") if "status" in lost_all.columns else np.full(len(lost_all), "", dtype=object)
    lost_cell = {col: _text(lost_all, col) for col in _CELL if col in lost_all.columns}
    groupings = []
    for name, group in _groupings(facets):
        (mask, lost_mask), (cat, lost_cat), label = coded.grouping(group)
        key = coded.slot_key([c for c in slot_columns if c not in {f.column for f in group}])
        groupings.append((name, group, mask, lost_mask, cat, lost_cat, label, key))
    cell_columns = [usable[c] for c in _CELL]
    number = np.asarray(usable.groupby(_CELL, sort=False, observed=True).ngroup().to_numpy(np.float64))
    for g in range(int(np.nanmax(number)) + 1 if np.isfinite(number).any() else 0):
        rows = np.flatnonzero(number == g)
        base = dict(zip(_CELL, (str(c.iloc[rows[0]]) for c in cell_columns), strict=True))
        kind = (str(kinds.iloc[rows[0]]), (favourable or {}).get(base["use_case"]))
        if kind not in selections:
            selections[kind] = selection_of(*kind)
        how = selections[kind]
        in_cell = np.ones(len(lost_all), dtype=bool)
        for col, text in lost_cell.items():
            in_cell &= text == base[col]
        lost = np.flatnonzero(in_cell)
        for name, group, mask, lost_mask, cat, lost_cat, label, key in groupings:
            r, lo = rows[mask[rows]], lost[lost_mask[lost]]
            out += _cell_rows(y[r], cat[r], key[r], lost_cat[lo], status[lo], label, group, how, n_boot, seed,
                              {**base, "grouping": name}, designs)
    return pd.DataFrame(out, columns=list(COLUMNS))
