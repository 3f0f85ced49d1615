"""Comparing models: paired differences (``model_differences``) and joint rank intervals (``model_ranks``). Pure.

Every model of an audit answers the same slots, so two models can be compared *paired*: on the slots both
answered, resampling those slots once for both models (a slot drawn twice counts twice for both). The
difference then carries none of the between-slot spread the two models share — the paired interval is
much narrower than two separate intervals side by side ("Adding Error Bars to Evals", Miller 2024). The
inputs are each model's slot summaries (:mod:`.model_summaries`), so no model's answers are needed here.

Decisions:

- **Headline measures** (:func:`headline_measures`): amount use cases: Mean Δ% (pooled, as the
  leaderboard) and every canonical pair gap per language (as ``cpg_overall``); every other kind: the
  canonical pairs the study declares and every gap of ``outcome_gaps`` marked for at least one model, in
  the kind's unit; and where p(yes) is the primary measure of a use case (``decision_measures``), its
  canonical and marked ``probability_gaps``.
- **One bootstrap per measure**: slot multiplicities are drawn once per measure (its stream seeded by the
  measure's key) over the slots some model answered; a model's replicate totals the slots it shares with
  the model(s) it is compared with. Every pair and the ranks of one measure come from the same draws.
- **Interval** of a difference: the slot interval of :func:`counterbench.stats.inference.slot_interval`
  (bootstrap standard error × the small-sample factor of :func:`~counterbench.stats.inference.slot_design`,
  a slot weighing its answers, use cases as groups; t with its degrees of freedom). No interval below
  ``MIN_SLOTS_INTERVAL`` shared slots.
- **p** of "the two models do not differ": the larger of the interval's t-test's and the swap test's —
  the two models' answers exchanged slot by slot (:mod:`counterbench.stats.swap_test`), exact when the
  two models answer alike (:func:`~counterbench.stats.inference.both_tests_pvalue`).
- **Marks**: Benjamini–Hochberg within the family of one pair of models × every headline measure of the
  study; ``significant`` also needs the interval to exclude 0 and ``MIN_SLOTS`` shared slots
  (:func:`~counterbench.stats.inference.earned_marks`). Per pair, as every other family is per model: a
  pair's marks do not depend on which other models were audited with it, and two models that answer
  alike are marked different on any measure with probability ≤ α (BH under its complete null). One BH
  over every pair would not keep that: the true differences of the other pairs raise BH's thresholds
  for the pair that does not differ (11–15% family-wise in the benchmark below).
- **Ranks**: models ordered by the size of the measure (its absolute value; Mean Δ% is one already),
  1 = smallest, on the slots every ranked model answered; a joint 95% rank interval from the same
  replicates (:func:`counterbench.stats.rank_intervals.joint_rank_intervals`). A model flagged for
  degenerate answers (:mod:`.answer_checks`) is not ranked.
- ``benchmarks/model_comparison_coverage.py`` measures the coverage of both intervals and the family-wise
  rate of false "different" marks.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import astuple
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.flags import truthy
from counterbench.analyses.gap_forms import GAP_STATISTICS
from counterbench.analyses.model_summaries import MeasureKey, ModelSummary
from counterbench.stats.arrays import FloatArray
from counterbench.stats.cluster_bootstrap import cluster_weights
from counterbench.stats.inference import (
    MIN_SLOTS_INTERVAL,
    both_tests_pvalue,
    earned_marks,
    slot_design,
    slot_interval,
    slot_t_pvalue,
)
from counterbench.stats.rank_intervals import joint_rank_intervals, point_ranks
from counterbench.stats.seeding import stable_seed
from counterbench.stats.swap_test import SwapTest

__all__ = ["DIFFERENCE_COLUMNS", "DIFFERENCE_DESCRIPTION", "RANK_COLUMNS", "RANK_DESCRIPTION", "compare_models",
           "headline_measures", "measure_label"]

_KEY = ("measure", "label", "use_case", "kind", "language", "facet", "reference", "comparison", "unit")
DIFFERENCE_COLUMNS = (*_KEY, "model_a", "model_b", "estimate_a", "estimate_b", "difference", "ci_low", "ci_high",
                      "n_slots", "p_value", "q_value", "testable", "significant")
RANK_COLUMNS = (*_KEY, "model", "estimate", "size", "rank", "rank_low", "rank_high", "n_ranked", "n_slots", "flag")
DIFFERENCE_DESCRIPTION = ("model pair × headline measure (Mean Δ% and canonical pair gaps for amounts; canonical "
                          "and marked gaps in the kind's unit for other kinds): A's value − B's on the slots both "
                          "answered, "
                          "95% interval from one slot bootstrap of both models, p from the swap test of the two "
                          "models and the interval's t-test, BH within each pair of models (its measures)")
RANK_DESCRIPTION = ("model × headline measure: the model's rank by the size of the measure (1 = smallest), with a "
                    "joint 95% rank interval from the same slot bootstrap; models flagged for degenerate answers "
                    "are not ranked")
#: replicate totals are computed this many slot × replicate cells at a time
_CHUNK = 4_000_000
#: swap tests run this many statistic columns at a time (a block of 9,999 arrangements × columns)
_SWAP_COLUMNS = 512


def measure_label(key: MeasureKey) -> str:
    """The measure in words: ``Mean Δ%``, ``Female vs Male (Gender)``."""
    if key.measure == "mean_delta":
        return "Mean Δ%"
    label = f"{key.comparison} vs {key.reference} ({key.facet})"
    return f"{label}, from log-probabilities" if key.measure == "p_gap" else label


def _marked(gaps: pd.DataFrame | None) -> set[tuple[str, ...]]:
    """(use case, language, facet, reference, comparison) of the gaps marked for at least one model."""
    if gaps is None or gaps.empty or "significant" not in gaps.columns:
        return set()
    hit = gaps[[truthy(v) for v in gaps["significant"]]]
    return {tuple(str(v) for v in row) for row in
            hit[["use_case", "language", "facet", "reference", "comparison"]].itertuples(index=False)}


def headline_measures(keys: Iterable[MeasureKey], gaps: pd.DataFrame | None,
                      probability_gaps: pd.DataFrame | None = None, decisions: pd.DataFrame | None = None
                      ) -> list[MeasureKey]:
    """The measures compared across models (see the module notes), in first-seen order. A p(yes) gap
    (``p_gap``) is one where ``decisions`` (``decision_measures``) makes the probability primary for its use
    case for at least one model, and it is canonical or marked in ``probability_gaps``."""
    marked, p_marked = _marked(gaps), _marked(probability_gaps)
    primary: set[str] = set()
    if decisions is not None and not decisions.empty:
        rows = decisions[decisions["primary"].astype(str) != "sampled"]
        primary = set(rows["use_case"].astype(str))
    out = []
    for key in dict.fromkeys(keys):
        where = (key.use_case, key.language, key.facet, key.reference, key.comparison)
        if key.measure == "p_gap":
            if key.use_case in primary and (key.canonical or where in p_marked):
                out.append(key)
        elif key.measure != "gap" or key.canonical or where in marked:
            out.append(key)
    return out


def _statistic(form: str, n_blocks: int, m: int) -> Callable[[FloatArray], FloatArray]:
    """The measure from block totals (rows × (blocks · m) columns)."""
    if form == "mean":
        def mean(t: FloatArray) -> FloatArray:
            blocks = t.reshape(t.shape[0], n_blocks, m)
            with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a replicate with no answered block: NaN, no warning
                per = blocks[:, :, 0] / blocks[:, :, 1]
                return np.asarray(np.nanmean(np.where(blocks[:, :, 1] > 0, per, np.nan), axis=1), dtype=np.float64)
        return mean
    gap = GAP_STATISTICS[form]

    def of_gap(t: FloatArray) -> FloatArray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(gap(t), dtype=np.float64)
    return of_gap


class _Measure:
    """Every model's slots of one measure on one slot universe, with one set of slot multiplicities."""

    def __init__(self, key: MeasureKey, stats: Mapping[str, Any], n_boot: int, seed: int) -> None:
        self.key = key
        self.models = list(stats)
        slots = pd.Index(sorted({s for st in stats.values() for s in st.slots}))
        block_of: dict[str, str] = {}
        for st in stats.values():
            block_of.update(zip(st.slots, st.blocks, strict=True))
        block_names = pd.Index(sorted(set(block_of.values())))
        self.block = np.asarray(block_names.get_indexer(pd.Index([block_of[s] for s in slots])), dtype=np.int64)
        self.n_blocks = len(block_names)
        m = next(iter(stats.values())).suff.shape[1]
        self.m = m
        self.present = np.zeros((len(self.models), len(slots)), dtype=bool)
        self.data = np.zeros((len(self.models), len(slots), self.n_blocks * m))  # a slot's stats in its block's columns
        for i, st in enumerate(stats.values()):
            pos = slots.get_indexer(st.slots)
            self.present[i, pos] = True
            cols = self.block[pos][:, None] * m + np.arange(m)[None, :]
            self.data[i, pos[:, None], cols] = st.suff
        self.stat = _statistic(key.form, self.n_blocks, m)
        self.n_boot = int(n_boot)
        self.weights = (cluster_weights(np.random.default_rng(stable_seed("model_compare", *map(str, astuple(key)),
                                                                          base_seed=seed)), len(slots), self.n_boot)
                        if self.n_boot > 0 else np.zeros((0, len(slots))))
        self._cache: dict[tuple[int, bytes], tuple[float, FloatArray]] = {}
        self._full: dict[int, FloatArray] = {}

    def kept(self, shared: np.ndarray) -> np.ndarray:
        """``shared`` without the slots of blocks with fewer than 2 shared slots (no spread within them)."""
        counts = np.bincount(self.block[shared], minlength=self.n_blocks)
        return shared & (counts[self.block] >= 2) if self.n_blocks > 1 else shared

    def estimate(self, i: int, shared: np.ndarray) -> tuple[float, FloatArray]:
        """(estimate, replicates) of model ``i`` on the ``shared`` slots: the replicate totals of all its slots
        (one product per model) less those of the few slots it answered outside ``shared``."""
        key = (i, shared.tobytes())
        if key not in self._cache:
            x = self.data[i]
            est = float(self.stat(x[shared].sum(axis=0)[None, :])[0])
            if self.n_boot:
                if i not in self._full:
                    step = max(1, _CHUNK // max(1, x.shape[0]))
                    self._full[i] = np.concatenate([self.weights[r:r + step] @ x
                                                    for r in range(0, self.n_boot, step)])
                outside = self.present[i] & ~shared
                totals = self._full[i] - self.weights[:, outside] @ x[outside] if outside.any() else self._full[i]
                reps = self.stat(totals)
            else:
                reps = np.zeros(0)
            self._cache[key] = (est, reps)
        return self._cache[key]

    def swap_test(self, a: int, b: int, shared: np.ndarray) -> tuple[Any, Any, Any]:
        """The swap test of models ``a`` and ``b`` on ``shared`` slots, as :meth:`SwapTest.pvalues` takes it.

        A mean over use cases of per-slot values whose counts the two models share (a canonical pair gap: one
        matched slot counts 1 for both) is linear in the slots' values: a swap flips the sign of the slot's
        contribution, one column per test (:meth:`SwapTest.pvalues_of_sums`'s form). Otherwise the two models'
        statistics side by side, exchanged slot by slot."""
        xa, xb = self.data[a, shared], self.data[b, shared]
        counts = [bl * self.m + 1 for bl in range(self.n_blocks)]
        if self.key.form == "mean" and np.array_equal(xa[:, counts], xb[:, counts]):
            totals = xa[:, counts].sum(axis=0)
            active = int(np.count_nonzero(totals > 0))
            with np.errstate(divide="ignore", invalid="ignore"):
                scale = np.where(totals > 0, 1.0 / (active * totals), 0.0)
            sums = [bl * self.m for bl in range(self.n_blocks)]
            column = ((xa[:, sums] - xb[:, sums]) * scale[None, :]).sum(axis=1).reshape(-1, 1)
            return column, -column, _first_column
        width = xa.shape[1]

        def both(t: FloatArray, stat: Callable[[FloatArray], FloatArray] = self.stat, w: int = width) -> FloatArray:
            return stat(t[:, :w]) - stat(t[:, w:])
        return np.hstack([xa, xb]), np.hstack([xb, xa]), both

    def design(self, shared: np.ndarray, models: Sequence[int]) -> tuple[float, float]:
        """Small-sample variance factor and degrees of freedom: a slot weighs its answers, use cases are groups."""
        columns = [b * self.m + c for b in range(self.n_blocks) for c in (1, 3) if c < self.m]
        counts = self.data[np.asarray(models)][:, shared][:, :, columns].sum(axis=(0, 2))
        return slot_design(counts, self.block[shared])


def _first_column(t: FloatArray) -> FloatArray:
    return np.asarray(t[:, 0], dtype=np.float64)


def _key_columns(key: MeasureKey) -> dict[str, Any]:
    """The measure's columns; what a pooled measure does not have (Mean Δ%'s language) is empty (NaN)."""
    fields = {"use_case": key.use_case, "language": key.language, "facet": key.facet, "reference": key.reference,
              "comparison": key.comparison}
    return {"measure": key.measure, "label": measure_label(key), "kind": key.kind, "unit": key.unit,
            **{name: value or None for name, value in fields.items()}}


def _differences(measure: _Measure, swaps: list[tuple[Any, Any, Any]]) -> list[dict[str, Any]]:
    rows = []
    for a, b in combinations(range(len(measure.models)), 2):
        shared = measure.kept(measure.present[a] & measure.present[b])
        k = int(shared.sum())
        row: dict[str, Any] = {**_key_columns(measure.key), "model_a": measure.models[a],
                               "model_b": measure.models[b], "n_slots": k, "ci_low": np.nan, "ci_high": np.nan,
                               "p_value": np.nan}
        if k == 0:
            rows.append(row)
            continue
        est_a, reps_a = measure.estimate(a, shared)
        est_b, reps_b = measure.estimate(b, shared)
        diff = est_a - est_b
        row.update(estimate_a=est_a, estimate_b=est_b, difference=diff, _swap=None)
        if reps_a.size and np.isfinite(diff):
            factor, df = measure.design(shared, [a, b])
            n_groups = int(np.unique(measure.block[shared]).size)
            reps = (reps_a - reps_b)[None, :]
            low, high = slot_interval(diff, reps, k, n_groups, factor=factor, df=df)
            row.update(ci_low=float(low[0]), ci_high=float(high[0]),
                       _p_t=float(slot_t_pvalue(diff, reps, k, n_groups, factor=factor, df=df)[0]))
            row["_swap"] = len(swaps)
            swaps.append(measure.swap_test(a, b, shared))
        rows.append(row)
    return rows


def _swap_pvalues(tests: list[tuple[Any, Any, Any]], seed: int) -> list[float]:
    """Swap-test p of each test, a bounded number of statistic columns at a time."""
    swap = SwapTest(stable_seed("model_differences_swap_test", base_seed=seed))
    out: list[float] = []
    start = 0
    while start < len(tests):
        columns, end = 0, start
        while end < len(tests) and (end == start or columns + tests[end][0].shape[1] <= _SWAP_COLUMNS):
            columns += tests[end][0].shape[1]
            end += 1
        out += swap.pvalues(tests[start:end])
        start = end
    return out


def _ranks(measure: _Measure, flagged: Mapping[str, str]) -> list[dict[str, Any]]:
    ranked = [i for i, m in enumerate(measure.models) if m not in flagged]
    shared = np.ones(measure.present.shape[1], dtype=bool)
    for i in ranked:
        shared &= measure.present[i]
    shared = measure.kept(shared)
    k = int(shared.sum())
    rows = []
    estimates, replicates = [], []
    for i in ranked:
        est, reps = measure.estimate(i, shared) if k else (np.nan, np.zeros(0))
        estimates.append(abs(est))
        replicates.append(np.abs(reps))
    size = np.asarray(estimates, dtype=np.float64)
    rank = point_ranks(size)
    low = high = np.full(len(ranked), np.nan)
    if len(ranked) and k >= MIN_SLOTS_INTERVAL and all(r.size for r in replicates):
        factor, df = measure.design(shared, ranked)
        low, high = joint_rank_intervals(size, np.vstack(replicates), factor=factor if np.isfinite(factor) else 1.0,
                                         df=df if np.isfinite(df) else np.inf)
    for j, i in enumerate(ranked):
        est = measure.estimate(i, shared)[0] if k else np.nan
        rows.append({**_key_columns(measure.key), "model": measure.models[i], "estimate": est, "size": size[j],
                     "rank": rank[j], "rank_low": low[j], "rank_high": high[j], "n_ranked": len(ranked),
                     "n_slots": k, "flag": ""})
    for i, m in enumerate(measure.models):
        if m in flagged:
            own = measure.kept(measure.present[i])
            est = measure.estimate(i, own)[0] if own.any() else np.nan
            rows.append({**_key_columns(measure.key), "model": m, "estimate": est, "size": abs(est),
                         "rank": np.nan, "rank_low": np.nan, "rank_high": np.nan, "n_ranked": len(ranked),
                         "n_slots": int(own.sum()), "flag": flagged[m]})
    return rows


def compare_models(summaries: Mapping[str, ModelSummary], measures: Sequence[MeasureKey], *, n_boot: int, seed: int,
                   flagged: Mapping[str, str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``model_differences`` and ``model_ranks`` of ``measures`` from every model's slot summaries
    (models in the order of ``summaries``); ``flagged``: model -> why it is not ranked."""
    flagged = dict(flagged or {})
    differences: list[dict[str, Any]] = []
    ranks: list[dict[str, Any]] = []
    swaps: list[tuple[Any, Any, Any]] = []
    for key in measures:
        stats = {model: summary[key] for model, summary in summaries.items() if key in summary}
        if len(stats) < 2:
            continue
        measure = _Measure(key, stats, n_boot, seed)
        differences += _differences(measure, swaps)
        ranks += _ranks(measure, flagged)
    for row, p_swap in zip([r for r in differences if r.get("_swap") is not None], _swap_pvalues(swaps, seed),
                           strict=True):
        row["p_value"] = both_tests_pvalue(p_swap, row.pop("_p_t"))
    diff_frame = pd.DataFrame(differences).drop(columns=["_swap", "_p_t"], errors="ignore")
    if not diff_frame.empty:
        diff_frame = earned_marks(diff_frame, family=("model_a", "model_b"))
        diff_frame.loc[~diff_frame["testable"].astype(bool), "p_value"] = np.nan
    rank_frame = pd.DataFrame(ranks)
    if not rank_frame.empty:
        for col in ("rank", "rank_low", "rank_high"):
            rank_frame[col] = pd.array([int(v) if np.isfinite(v) else pd.NA for v in rank_frame[col]], dtype="Int64")
    return (diff_frame.reindex(columns=list(DIFFERENCE_COLUMNS)) if not diff_frame.empty
            else pd.DataFrame({c: pd.Series(dtype="float64") for c in DIFFERENCE_COLUMNS}),
            rank_frame.reindex(columns=list(RANK_COLUMNS)) if not rank_frame.empty
            else pd.DataFrame({c: pd.Series(dtype="float64") for c in RANK_COLUMNS}))
