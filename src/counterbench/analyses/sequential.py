"""The sequential audit's verdicts (``--stop-when decided``): which comparisons are decided after each look.

A sequential audit sends the design's slots in a seeded random order, a round at a time
(:func:`slot_rounds`), and after each round asks, for every comparison of the model's family, whether the
confidence sequence of its mean slot gap (:mod:`counterbench.stats.confidence_sequence`) says ``gap``, ``no
gap above the margin`` or ``undecided``. A model stops at the first look where every comparison is decided,
or at the full design.

Decisions:

- **The family** is fixed by the design before any answer (:func:`family`): per use case × language, the
  study's canonical pairs where they speak for an amount use case (a study with canonical pairs and no name
  groups, as the amount analysis's headline), else every level of every facet against its reference (the
  ``outcome_gaps`` comparisons). ``m`` is its size; each comparison's sequence runs at ``interim_alpha / m``
  (Bonferroni), and its last look — the round that completes its slots of the design (:func:`with_last_rounds`)
  — uses the fixed design's t-interval at ``(alpha − interim_alpha) / m``, so the family's chance of any wrong
  verdict over every look is at most ``alpha`` (the union bound), and a comparison that needs every slot is
  decided as soon as its slots are in, not when the whole design is.
- **A slot's gap** is the kind's comparison (:func:`counterbench.outcomes.base.comparison_of`) of the slot's
  mean outcome under the compared level and under the reference: a difference in the kind's unit, or for
  amounts 100 × (comparison − reference) / their mean (% of the pair's mean). Slots missing either side
  give no gap.
- **Margins** are in that unit, per outcome kind (the rule's ``margins``; ``*`` for every kind); the default
  is 5 (% of the pair's mean, percentage points, or points), or 5% of a score's declared range.
- **A decided comparison stays decided**: its verdict and interval are those of the look that decided it (a
  confidence sequence holds at any stopping time, so stopping one comparison early is as valid as stopping
  them all). The running intersection of the intervals, also valid in theory, is not used: with the
  asymptotic boundary it compounds the early looks' approximation error.
- **The order of slots** is random within each stratum (the slots of one use case × language × axis, the cell a
  comparison lives in) and round-robin across strata: the k-th slot of every stratum is sent before any
  stratum's (k + 1)-th, ties in a random order, so a small use case gets its slots as early as a large one and
  every comparison reaches a verdict at the same pace.
- **Reproducible**: the order of slots comes from the rule's seed and the prompt table alone, and a look reads
  only the answers of the slots sent by then, so a run that is killed and resumed reaches the same looks,
  verdicts and stopping point from the answers in the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.outcome_tables import measured_rows
from counterbench.analyses.repeats import within_prompt_means
from counterbench.analyses.slot_keys import joined_keys
from counterbench.options import StoppingRule
from counterbench.outcomes import get_kind
from counterbench.outcomes.base import OutcomeSpec, comparison_of
from counterbench.stats.confidence_sequence import (
    UNDECIDED,
    Interval,
    final_interval,
    sequence_interval,
    verdict,
)
from counterbench.stats.inference import MIN_SLOTS as FIXED_MIN_SLOTS
from counterbench.studies.base import Study

__all__ = [
    "SEQUENTIAL_COLUMNS",
    "Comparison",
    "LookResult",
    "cell_rows",
    "evaluate_looks",
    "family",
    "margin_for",
    "replay_looks",
    "slot_rounds",
    "with_last_rounds",
]

#: columns of the ``sequential_verdicts`` table (one row per model × comparison)
SEQUENTIAL_COLUMNS = ("model", "use_case", "kind", "language", "facet", "reference", "comparison", "unit", "margin",
                      "n_slots", "mean", "cs_low", "cs_high", "verdict", "decided_at_look", "looks", "prompts_sent",
                      "prompts_design", "stopped", "alpha_each")


@dataclass(frozen=True)
class Comparison:
    """One comparison of the sequential family: ``comparison`` against ``reference`` in ``column``."""

    use_case: str
    language: str
    facet: str
    column: str
    axis: str | None
    reference: str
    comparison: str
    kind: str
    form: str
    unit: str
    margin: float
    #: the comparison's matched slots in the whole design (the confidence sequence is tightest near a third)
    design_slots: int = 1
    #: the round that completes its slots (:func:`with_last_rounds`; -1: not known, the design's last round)
    last_round: int = -1


def cell_rows(frame: pd.DataFrame, comparison: Comparison) -> pd.DataFrame:
    """The rows of ``frame`` (prompts or answers) in ``comparison``'s cell: its use case, language and axis."""
    rows = frame[(frame["use_case"].astype(str) == comparison.use_case)
                 & (frame["language"].astype(str) == comparison.language)]
    if comparison.axis is not None and "axis" in rows.columns:
        rows = rows[rows["axis"].astype(str) == comparison.axis]
    return rows


def with_last_rounds(comparisons: Sequence[Comparison], table: pd.DataFrame, rounds: np.ndarray) -> list[Comparison]:
    """``comparisons`` with the round in which each one's last slot of the design is sent."""
    frame = table.assign(_round=rounds)
    out = []
    for c in comparisons:
        rows = cell_rows(frame, c)
        out.append(replace(c, last_round=int(rows["_round"].max()) if len(rows) else -1))
    return out


def margin_for(rule: StoppingRule, spec: OutcomeSpec) -> float:
    """The equivalence margin of ``spec``'s use case: the rule's for its kind (or ``*``), else the default."""
    if spec.kind in rule.margins:
        return float(rule.margins[spec.kind])
    if "*" in rule.margins:
        return float(rule.margins["*"])
    compare = comparison_of(get_kind(spec.kind), spec)
    if compare.form != "pair_mean" and spec.low is not None and spec.high is not None and spec.high > spec.low:
        return 0.05 * (float(spec.high) - float(spec.low))
    return 5.0


def _pairs_speak(study: Study) -> bool:
    return bool(study.canonical_pairs) and not any(f.kind == "group" for f in study.facets)


def family(study: Study, table: pd.DataFrame, rule: StoppingRule) -> list[Comparison]:
    """The comparisons the sequential rule decides, from the design (the prompt table) alone."""
    standard = table[table["variant"].astype(str).eq("standard")] if "variant" in table.columns else table
    out: list[Comparison] = []
    for (use_case, language), part in standard.groupby(["use_case", "language"], sort=False, observed=True):
        spec = study.outcomes.get(str(use_case))
        if spec is None:
            continue
        compare = comparison_of(get_kind(spec.kind), spec)
        margin = margin_for(rule, spec)
        base: dict[str, Any] = {"use_case": str(use_case), "language": str(language), "kind": spec.kind,
                                "form": compare.form, "unit": compare.unit_words, "margin": margin}
        if compare.form == "pair_mean" and _pairs_speak(study):
            for facet in study.facets:  # a pair names an axis, or a crossed design's attribute (its own column)
                pair = study.canonical_pairs.get(facet.axis or facet.name)
                if pair is None or facet.column not in part.columns:
                    continue
                reference, comparison = pair
                rows = (part if facet.axis is None or "axis" not in part.columns
                        else part[part["axis"].astype(str) == facet.axis])
                if {reference, comparison} <= set(rows[facet.column].dropna().astype(str)):
                    out.append(Comparison(facet=facet.axis or facet.name, column=facet.column, axis=facet.axis,
                                          reference=reference, comparison=comparison,
                                          design_slots=_slots(rows, study, facet.column), **base))
            continue
        for facet in study.facets:
            if facet.column not in part.columns:
                continue
            rows = (part if facet.axis is None or "axis" not in part.columns
                    else part[part["axis"].astype(str) == facet.axis])
            values = set(rows[facet.column].dropna().astype(str))
            if facet.reference not in values:
                continue
            for level in facet.levels:
                if level != facet.reference and level in values:
                    out.append(Comparison(facet=facet.name, column=facet.column, axis=facet.axis,
                                          reference=facet.reference, comparison=level,
                                          design_slots=_slots(rows, study, facet.column), **base))
    return out


def _slots(rows: pd.DataFrame, study: Study, column: str) -> int:
    keys = [c for c in study.slot_columns if c in rows.columns and c != column]
    return len(rows[keys].drop_duplicates()) if keys else 1


#: the columns of a slot that say which comparisons it serves (a stratum of the sending order)
STRATUM_COLUMNS = ("variant", "use_case", "language", "axis")


def slot_rounds(table: pd.DataFrame, slot_columns: Sequence[str], seed: int, look_every: int) -> np.ndarray:
    """The round (0, 1, …) in which each prompt of ``table`` is sent: whole slots, random within a stratum and
    round-robin across strata (the module's decisions), each round at least ``look_every`` prompts (the last
    may be smaller)."""
    cols = [c for c in slot_columns if c in table.columns]
    keys = joined_keys(table, cols)
    codes, uniques = pd.factorize(keys, sort=True)
    first = pd.DataFrame({"code": codes}).drop_duplicates("code").index.to_numpy()  # a row of each slot
    strata_cols = [c for c in STRATUM_COLUMNS if c in cols]
    strata = (pd.factorize(joined_keys(table.iloc[first], strata_cols), sort=True)[0]
              if strata_cols else np.zeros(len(first), dtype=np.int64))
    slot_stratum = np.empty(len(uniques), dtype=np.int64)
    slot_stratum[codes[first]] = strata
    rng = np.random.default_rng(seed)
    shuffle = rng.permutation(len(uniques))  # a random rank of every slot
    rank_in_stratum = np.empty(len(uniques), dtype=np.int64)
    for stratum in np.unique(slot_stratum):
        members = np.flatnonzero(slot_stratum == stratum)
        rank_in_stratum[members[np.argsort(shuffle[members], kind="stable")]] = np.arange(len(members))
    order = np.lexsort((shuffle, rank_in_stratum))  # slots in sending order
    sizes = np.bincount(codes, minlength=len(uniques))
    slot_round = np.empty(len(uniques), dtype=np.int64)
    filled, current = 0, 0
    for slot in order:
        slot_round[slot] = current
        filled += int(sizes[slot])
        if filled >= look_every:
            current, filled = current + 1, 0
    return slot_round[codes]


@dataclass
class LookResult:
    """What the looks of one model said: the verdicts at the stopping look (or the last look made)."""

    verdicts: pd.DataFrame
    stop_look: int | None
    looks: int


class _Cells:
    """One model's rows cut by comparison cell, and each cell's slot keys per compared column, made once for
    every comparison of a look instead of once per comparison."""

    def __init__(self, rows: pd.DataFrame, slot_columns: Sequence[str]) -> None:
        self.rows, self.slot_columns = rows, slot_columns
        self._cells: dict[tuple[str, str, str | None], pd.DataFrame] = {}
        self._keys: dict[tuple[str, str, str | None, str], pd.Series] = {}

    def part(self, comparison: Comparison) -> pd.DataFrame:
        cell = (comparison.use_case, comparison.language, comparison.axis)
        if cell not in self._cells:
            self._cells[cell] = cell_rows(self.rows, comparison)
        return self._cells[cell]

    def slot_keys(self, comparison: Comparison) -> pd.Series:
        """The slot of each row of the comparison's cell: its slot columns but the compared one, as one text."""
        key = (comparison.use_case, comparison.language, comparison.axis, comparison.column)
        if key not in self._keys:
            part = self.part(comparison)
            keys = [c for c in self.slot_columns if c in part.columns and c != comparison.column]
            self._keys[key] = joined_keys(part, keys)
        return self._keys[key]


def _slot_gaps(rows: pd.DataFrame, comparison: Comparison, slot_columns: Sequence[str],
               cells: _Cells | None = None) -> pd.DataFrame:
    """One row per matched slot: its round and its gap (the kind's comparison of the two sides' means)."""
    cells = cells or _Cells(rows, slot_columns)
    part = cells.part(comparison)
    if comparison.column not in part.columns or part.empty:
        return pd.DataFrame({"round": pd.Series(dtype="int64"), "gap": pd.Series(dtype="float64")})
    level = part[comparison.column].astype(str)
    side = np.where(level == comparison.comparison, "c", np.where(level == comparison.reference, "r", ""))
    keep = side != ""
    # a missing key value is a value, not a drop
    part = part[keep].assign(_side=side[keep], _slot=cells.slot_keys(comparison).to_numpy()[keep])
    means = part.groupby(["_slot", "_side"], sort=True, observed=True)["y"].mean().unstack("_side")
    rounds = part.groupby("_slot", observed=True)["_round"].max()
    if "c" not in means.columns or "r" not in means.columns:
        return pd.DataFrame({"round": pd.Series(dtype="int64"), "gap": pd.Series(dtype="float64")})
    c, r = means["c"].to_numpy(np.float64), means["r"].to_numpy(np.float64)
    if comparison.form == "pair_mean":
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.where(c + r > 0, 100.0 * (c - r) / ((c + r) / 2.0), np.nan)
    else:
        gap = c - r
    out = pd.DataFrame({"round": rounds.reindex(means.index).to_numpy(np.int64), "gap": gap})
    return out[np.isfinite(out["gap"])]


def analysed_rows(results: pd.DataFrame, study: Study) -> pd.DataFrame:
    """The standard-variant usable rows with ``y`` (one per prompt: repeats averaged), as the tables read them."""
    standard = results[results["variant"].astype(str).eq("standard")] if "variant" in results.columns else results
    return within_prompt_means(measured_rows(standard, study.outcomes))


def evaluate_looks(results: pd.DataFrame, study: Study, comparisons: Sequence[Comparison],
                   prompt_round: Mapping[str, int], rule: StoppingRule, last_round: int, upto: int | None = None
                   ) -> LookResult:
    """Replay the looks 0 … ``upto`` (default ``last_round``) on one model's answers; stop at the first look where
    every comparison is decided. ``prompt_round``: each prompt id's round (:func:`slot_rounds`);
    ``last_round``: the design's last round (its look uses the fixed interval)."""
    upto = last_round if upto is None else upto
    rows = analysed_rows(results, study) if not results.empty else pd.DataFrame()
    if not rows.empty:
        rows = rows.assign(_round=rows["prompt_id"].astype(str).map(prompt_round))
        rows = rows[rows["_round"].notna() & (rows["_round"] <= upto)]
    gaps: list[tuple[np.ndarray, np.ndarray]] = []
    if not rows.empty:  # the columns the comparisons read: each cell's rows are cut from this narrower frame
        wanted = {"use_case", "language", "axis", "y", "_round", *study.slot_columns, *(c.column for c in comparisons)}
        rows = rows[[c for c in rows.columns if c in wanted]]
    cells = _Cells(rows, study.slot_columns)
    for comparison in comparisons:
        frame = _slot_gaps(rows, comparison, study.slot_columns, cells) if not rows.empty else None
        gaps.append((np.zeros(0, dtype=np.int64), np.zeros(0)) if frame is None else
                    (frame["round"].to_numpy(np.int64), frame["gap"].to_numpy(np.float64)))
    return replay_looks(gaps, comparisons, rule, last_round, upto)


def replay_looks(gaps: Sequence[tuple[np.ndarray, np.ndarray]], comparisons: Sequence[Comparison], rule: StoppingRule,
                 last_round: int, upto: int | None = None) -> LookResult:
    """The looks 0 … ``upto`` on each comparison's slot gaps (``(round of each slot, its gap)``, in
    ``comparisons``' order): the verdicts at the first look where every comparison is settled (decided, or
    undecided with all its slots in), or at ``upto``."""
    upto = last_round if upto is None else upto
    m = max(1, len(comparisons))
    interim, final = rule.interim_alpha / m, (rule.alpha - rule.interim_alpha) / m
    decided_at: list[int | None] = [None] * len(comparisons)
    current: list[tuple[Interval, str, float]] = [(Interval(0, math.nan, -math.inf, math.inf), UNDECIDED, interim)
                                                  ] * len(comparisons)
    stop: int | None = None
    for look in range(upto + 1):
        for i, (comparison, (rounds, values)) in enumerate(zip(comparisons, gaps, strict=True)):
            if current[i][1] != UNDECIDED or (0 <= comparison.last_round < look):  # decided, or its last look made
                continue
            seen = values[rounds <= look]
            own_last = comparison.last_round if comparison.last_round >= 0 else last_round
            if look >= own_last:  # its whole design is in: the fixed interval with what is left of alpha
                interval = final_interval(seen, final)
                current[i] = (interval, verdict(interval, comparison.margin, min_slots=FIXED_MIN_SLOTS,
                                                min_informative=0), final)
            else:
                interval = sequence_interval(seen, interim, t_opt=max(1.0, comparison.design_slots / 3.0))
                current[i] = (interval, verdict(interval, comparison.margin), interim)
            if current[i][1] != UNDECIDED:
                decided_at[i] = look
        settled = [said != UNDECIDED or look >= (c.last_round if c.last_round >= 0 else last_round)
                   for c, (_, said, _) in zip(comparisons, current, strict=True)]
        if look == last_round or all(settled):  # every comparison decided, or undecided with all its slots in
            stop = look
            break
    looks = (stop if stop is not None else upto) + 1
    records: list[dict[str, Any]] = []
    for i, comparison in enumerate(comparisons):
        interval, said, alpha_each = current[i]
        records.append({"use_case": comparison.use_case, "kind": comparison.kind, "language": comparison.language,
                        "facet": comparison.facet, "reference": comparison.reference,
                        "comparison": comparison.comparison, "unit": comparison.unit, "margin": comparison.margin,
                        "n_slots": interval.n, "mean": interval.mean, "cs_low": interval.low,
                        "cs_high": interval.high, "verdict": said,
                        "decided_at_look": decided_at[i], "alpha_each": alpha_each})
    frame = pd.DataFrame(records)
    return LookResult(frame, stop, looks)

