"""One model's slot summaries: what comparing models needs from its answers, and no more. Pure.

Comparing models pairs them on the slots both answered and resamples those slots once for both
(:mod:`.model_compare`). That needs, per measure and per slot, a few additive numbers of each model —
not its answers — so ``counterbench analyze`` can read one model at a time and keep only these
summaries (about four numbers per matched slot and measure) of every model.

The measures (one :class:`MeasureKey` each):

- ``mean_delta`` (amount use cases): Mean Δ% over every identifier pair of every slot, pooled over the
  study's languages, use cases and axes, as the leaderboard's ``overall_mean_delta``; per slot
  (language × use case × profile × question variant, all axes together, as the amount tables resample
  them): [Σ Δ%, pairs].
- ``canonical_pair`` (amount use cases): the canonical pair's signed relative gap per matched slot,
  averaged within each use case and then over use cases, per language — ``cpg_overall``'s ``gap``; per slot
  [gap, 1], a use case per block.
- ``gap`` (every other kind): comparison − reference in the kind's form and unit, inside matched slots —
  ``outcome_gaps``' ``difference``; per slot [comparison sum, answers, reference sum, answers]. Every level
  against its facet's reference, and the study's canonical pair where its reference is another level;
  which of them are headline measures is decided with every model's marks at hand
  (:func:`counterbench.analyses.model_compare.headline_measures`).
- ``p_gap`` (label and choice answers stored with log-probabilities): the same gaps of 100 × p(positive)
  (:func:`counterbench.analyses.probabilities.probability_rows`), in percentage points.

Decisions: only ``standard``-variant answers with status ``ok`` and a finite measure, out-of-range amounts
left out under the default rules (as every other table); an identity answered twice in a slot counts with
its mean (amounts) or with every answer (other kinds, as ``outcome_gaps``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from counterbench.analyses import outcome_tables as ot
from counterbench.analyses.prepare import with_excluded_unusable
from counterbench.analyses.probabilities import probability_rows
from counterbench.analyses.profiles import get_profile
from counterbench.analyses.repeats import within_prompt_means
from counterbench.outcomes import has_pair_tables
from counterbench.stats.arrays import FloatArray
from counterbench.stats.gaps import pair_gaps, relative_gap
from counterbench.studies.base import Facet, Study

__all__ = ["MeasureKey", "ModelSummary", "SlotStats", "model_summary"]

_SEP = "\x1f"


@dataclass(frozen=True, order=True)
class MeasureKey:
    """One measure compared across models."""

    measure: str  # mean_delta, canonical_pair, gap, p_gap
    use_case: str  # "" when pooled over use cases
    kind: str
    language: str  # "" when pooled over languages
    facet: str
    reference: str
    comparison: str
    #: the statistic of block totals: ``mean`` (Σ first / Σ second per block, averaged over blocks),
    #: ``difference`` or ``pair_mean`` (a gap form of [comparison sum, n, reference sum, n], :mod:`.gap_forms`)
    form: str
    unit: str
    canonical: bool = False


@dataclass(frozen=True)
class SlotStats:
    """One model's slots of one measure: key per slot, block (use case) per slot, sufficient statistics."""

    slots: np.ndarray
    blocks: np.ndarray
    suff: FloatArray


ModelSummary = dict[MeasureKey, SlotStats]


def _key_text(frame: pd.DataFrame, columns: list[str]) -> dict[str, np.ndarray]:
    """Each of ``columns`` that ``frame`` has, as text (a missing value, e.g. a column only some use cases
    have or a categorical's NaN, is '')."""
    return {c: frame[c].astype("string").fillna("").to_numpy(dtype=object) for c in columns if c in frame.columns}


def _joined(text: Mapping[str, np.ndarray], columns: list[str], length: int,
            rows: np.ndarray | None = None) -> np.ndarray:
    """The slot key of each row (of ``rows`` when given): ``columns``' texts joined by the separator."""
    cols = [c for c in columns if c in text]
    if not cols:
        return np.full(length if rows is None else int(rows.sum()), "", dtype=object)
    out = text[cols[0]] if rows is None else text[cols[0]][rows]
    for c in cols[1:]:
        out = out + _SEP + (text[c] if rows is None else text[c][rows])
    return np.asarray(out, dtype=object)


def _keys(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    return _joined(_key_text(frame, columns), columns, len(frame))


def _mean_delta(rows: pd.DataFrame, nonpositive: str) -> SlotStats | None:
    """Σ Δ% and pairs per language × use case × profile × question variant (all axes)."""
    cols = ["language", "use_case", "axis", "profile_id", "question_variant"]
    if rows.empty or any(c not in rows.columns for c in [*cols, "identifier"]):
        return None
    values = rows.groupby([*cols, "identifier"], sort=False, observed=True)["y"].mean().reset_index()
    pairs = pair_gaps(values, cols, value_col="y", nonpositive=nonpositive)  # type: ignore[arg-type]
    ok = np.isfinite(pairs.gap)
    if not ok.any():
        return None
    slot = _keys(pairs.slot_keys, ["language", "use_case", "profile_id", "question_variant"])[pairs.slot[ok]]
    block = pd.Series(pairs.gap[ok]).groupby(slot, sort=True).agg(["sum", "size"])
    return SlotStats(block.index.to_numpy(dtype=object), np.zeros(len(block), dtype=object).astype(str),
                     block.to_numpy(dtype=np.float64))


def _canonical_pairs(rows: pd.DataFrame, study: Study, nonpositive: str, kind: str) -> ModelSummary:
    """Per language and canonical pair: [signed relative gap, 1] per matched slot, a use case per block."""
    out: ModelSummary = {}
    for facet in study.facets:
        pair = study.canonical_pairs.get(facet.axis or facet.name) if facet.kind != "group" else None
        if pair is None or facet.column not in rows.columns:
            continue
        frows = ot._facet_rows(rows, facet)
        slot_cols = ["use_case", *[c for c in study.slot_columns if c not in (facet.column, "use_case", "language")]]
        for language, part in frows.groupby("language", sort=False, observed=True):
            keys = _keys(part, slot_cols)
            means = pd.Series(part["y"].to_numpy(np.float64)).groupby([keys, part["level"].to_numpy()]).mean()
            table = means.unstack()
            if pair[0] not in table.columns or pair[1] not in table.columns:
                continue
            gap = relative_gap(table[pair[0]].to_numpy(), table[pair[1]].to_numpy(), signed=True,
                               nonpositive=nonpositive)  # type: ignore[arg-type]
            ok = np.isfinite(gap)
            if not ok.any():
                continue
            slots = table.index.to_numpy(dtype=object)[ok]
            blocks = np.asarray([s.split(_SEP, 1)[0] for s in slots], dtype=object)
            key = MeasureKey("canonical_pair", "", kind, str(language), facet.axis or facet.name, pair[0], pair[1],
                             "mean", "%", True)
            out[key] = SlotStats(slots, blocks, np.column_stack([gap[ok], np.ones(int(ok.sum()))]))
    return out


def _level_pairs(facet: Facet, present: set[str], canonical: Mapping[str, tuple[str, str]]
                 ) -> list[tuple[str, str, bool]]:
    """(reference, comparison, canonical?) of a facet: every level against its reference, and the canonical pair."""
    pair = canonical.get(facet.axis or facet.name) if facet.kind != "group" else None
    out = [(facet.reference, level, pair == (facet.reference, level)) for level in facet.levels
           if level != facet.reference and level in present and facet.reference in present]
    if pair is not None and pair[0] != facet.reference and set(pair) <= present:
        out.append((pair[0], pair[1], True))
    return out


def _gaps(rows: pd.DataFrame, study: Study) -> ModelSummary:
    """Per use case × language × facet × (reference, comparison): [comparison sum, n, reference sum, n] per slot."""
    out: ModelSummary = {}
    for (use_case, kind, language), part in rows.groupby(["use_case", "kind", "language"], sort=False,
                                                          observed=True):
        form = str(part["gap_form"].iloc[0]) if "gap_form" in part.columns else "difference"
        unit = str(part["unit"].iloc[0]) if "unit" in part.columns else ""
        text = _key_text(part, list(study.slot_columns))  # each slot column as text once for every facet
        values = part["y"].to_numpy(np.float64)
        for facet in study.facets:
            keep = ot.facet_mask(part, facet)
            if not keep.any():
                continue
            keys = _joined(text, [c for c in study.slot_columns if c != facet.column], len(part), keep)
            level = part[facet.column][keep].astype(str).to_numpy()
            sums = pd.DataFrame({"slot": keys, "level": level, "y": values[keep]}) \
                .groupby(["slot", "level"], sort=True)["y"].agg(["sum", "size"]).unstack("level")
            column = {str(name): i for i, name in enumerate(sums["size"].columns)}
            totals = sums["sum"].to_numpy(np.float64)
            counts = sums["size"].to_numpy(np.float64)  # NaN: the slot has no row of that level
            slots = sums.index.to_numpy(dtype=object)
            for reference, comparison, canonical in _level_pairs(facet, set(level), study.canonical_pairs):
                if comparison not in column or reference not in column:
                    continue
                c, r = column[comparison], column[reference]
                both = ~np.isnan(counts[:, c]) & ~np.isnan(counts[:, r])
                if not both.any():
                    continue
                key = MeasureKey("gap", str(use_case), str(kind), str(language), facet.name, reference, comparison,
                                 form, unit, canonical)
                stats = np.column_stack([totals[both, c], counts[both, c], totals[both, r], counts[both, r]])
                out[key] = SlotStats(slots[both], np.zeros(int(both.sum()), dtype=object).astype(str), stats)
    return out


def model_summary(results: pd.DataFrame, study: Study, profile: str = "default") -> ModelSummary:
    """The slot summaries of one model's ``results`` (rows of other models are a bug: one model at a time)."""
    rules = get_profile(profile)
    if results.empty:
        return {}
    standard = results[results["variant"].astype(str).eq("standard")] if "variant" in results.columns else results
    rows = within_prompt_means(ot.measured_rows(with_excluded_unusable(standard, rules), study.outcomes))
    if rows.empty:
        return {}
    amount = rows["kind"].astype(str).map(has_pair_tables).to_numpy(dtype=bool)  # the pair-gap measures' kinds
    out: ModelSummary = {}
    if amount.any():
        amounts = rows[amount]
        pair_kind = str(amounts["kind"].iloc[0])
        pooled = _mean_delta(amounts, rules.nonpositive)
        if pooled is not None:
            out[MeasureKey("mean_delta", "", pair_kind, "", "", "", "", "mean", "%")] = pooled
        out.update(_canonical_pairs(amounts, study, rules.nonpositive, pair_kind))
    if not amount.all():
        out.update(_gaps(rows[~amount], study))
    probabilities = probability_rows(with_excluded_unusable(standard, rules), study.outcomes)
    if not probabilities.empty:  # p(positive) of label and choice answers stored with log-probabilities
        out.update({replace(key, measure="p_gap"): st for key, st in _gaps(probabilities, study).items()})
    return out
