"""``noise_decomposition``: where an outcome's variance lies when prompts are asked more than once. Pure.

With ``--repeats K`` every prompt has K answers (:mod:`.repeats`). Per model × use case × language, the answers
``y`` (the kind's measure) split into three variance components, estimated by moments on the nested design
slot ⊃ prompt ⊃ repeat (a slot: the prompts that differ only in the identity, the study's slot columns
without its facets' columns):

- ``within_prompt_var`` σ²_w — between a prompt's repeats (sampling noise: what asking again changes):
  the pooled variance of the repeats around their prompt's mean, on Σ(K_p − 1) degrees of freedom;
- ``between_prompt_var`` σ²_p — between the prompts of one slot beyond their repeats' noise (the identity's
  effect and the prompt's own noise): the pooled variance of the prompt means around their slot's mean,
  minus σ²_w × the mean of 1/K_p;
- ``between_slot_var`` σ²_s — between slots beyond the noise of a slot's mean (the profiles, question
  variants and axes): the variance of the slot means, minus the mean over slots of
  σ²_p / n_s + σ²_w · Σ_p(1/K_p) / n_s².

Each is unbiased under the nested random-effects model (so it can fall below 0 by chance; it is not
clipped). Intervals: 95% percentile intervals of the slot-cluster bootstrap (slots resampled with their
prompts and repeats; ``bootstrap`` replicates, seeded from the analysis seed and the cell).

What K bought: a matched gap compares prompts within slots, so its interval's width follows the variance of a
prompt mean, σ²_p + σ²_w / K. ``gap_width_ratio`` = √((σ²_p + σ²_w/K) / (σ²_p + σ²_w)) is the width of a gap's
interval with the K repeats relative to the same prompts asked once (1: the repeats bought nothing, the noise
is the prompts'; 1/√K: all of it was sampling noise), with its bootstrap interval; ``width_saved_pct`` =
100 × (1 − ratio). ``within_share`` = σ²_w / (σ²_w + σ²_p + σ²_s) (components below 0 counted as 0).

Only cells where some prompt has at least two usable repeats get a row; the table is built only when the
results hold repeats, so a run without them has no such table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.table_registry import TableInputs, TableSpec
from counterbench.stats.seeding import stable_seed

__all__ = ["COLUMNS", "NOISE_SPEC", "decompose", "noise_decomposition"]

CONFIDENCE = 0.95
_CELL = ["model", "use_case", "kind", "language"]
_COMPONENTS = ("within_prompt_var", "between_prompt_var", "between_slot_var", "gap_width_ratio")
COLUMNS: tuple[str, ...] = (
    *_CELL, "measure", "n_slots", "n_prompts", "n_answers", "repeats",
    "within_prompt_var", "within_ci_low", "within_ci_high",
    "between_prompt_var", "between_prompt_ci_low", "between_prompt_ci_high",
    "between_slot_var", "between_slot_ci_low", "between_slot_ci_high",
    "within_share", "gap_width_ratio", "gap_width_ratio_ci_low", "gap_width_ratio_ci_high", "width_saved_pct",
)
DESCRIPTION = ("the variance of the outcome (the kind's measure, squared unit) within a prompt (between its "
               "--repeats), between the prompts of a slot and between slots, by moments on the nested design "
               "with slot-bootstrap 95% intervals; gap_width_ratio: a matched gap's interval width with the "
               "repeats relative to one answer per prompt")
TITLE = "Noise decomposition: within prompt, between prompts, between slots (--repeats)"


def _slot_stats(y: np.ndarray, slot: np.ndarray, prompt: np.ndarray) -> np.ndarray:
    """Per slot: [SS within prompts, Σ(K_p − 1), SS of prompt means around the slot mean, n_s − 1,
    Σ_p 1/K_p, n_s, slot mean, Σ_p 1/K_p / n_s²] (``prompt``: codes unique across slots)."""
    n_prompts = int(prompt.max()) + 1
    k = np.bincount(prompt, minlength=n_prompts).astype(np.float64)
    p_mean = np.bincount(prompt, weights=y, minlength=n_prompts) / k
    within = np.bincount(prompt, weights=(y - p_mean[prompt]) ** 2, minlength=n_prompts)
    p_slot = np.zeros(n_prompts, dtype=np.int64)
    p_slot[prompt] = slot
    n_slots = int(slot.max()) + 1
    n_s = np.bincount(p_slot, minlength=n_slots).astype(np.float64)
    s_mean = np.bincount(p_slot, weights=p_mean, minlength=n_slots) / n_s
    between = np.bincount(p_slot, weights=(p_mean - s_mean[p_slot]) ** 2, minlength=n_slots)
    inv_k = np.bincount(p_slot, weights=1.0 / k, minlength=n_slots)
    return np.column_stack([
        np.bincount(p_slot, weights=within, minlength=n_slots), np.bincount(p_slot, weights=k - 1, minlength=n_slots),
        between, n_s - 1, inv_k, n_s, s_mean, inv_k / n_s**2,
    ])


def decompose(stats: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The components (rows: σ²_w, σ²_p, σ²_s, gap width ratio) for each row of slot ``weights`` (how many times
    each slot is drawn: ones for the estimate, a bootstrap draw's counts for a replicate)."""
    w = np.atleast_2d(weights).astype(np.float64)
    t = w @ stats  # summed per replicate
    n_w = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s2w = t[:, 0] / t[:, 1]
        inv_k = t[:, 4] / t[:, 5]  # mean 1/K over prompts
        s2p = t[:, 2] / t[:, 3] - s2w * inv_k
        grand = t[:, 6] / n_w
        ms_slot = (w @ stats[:, 6] ** 2 - n_w * grand**2) / (n_w - 1)
        noise = (s2p * (w @ (1.0 / stats[:, 5])) + s2w * t[:, 7]) / n_w
        s2s = ms_slot - noise
        ratio = np.sqrt((s2p + s2w * inv_k) / (s2p + s2w))
    return np.vstack([s2w, s2p, s2s, ratio])


def _interval(values: np.ndarray) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if len(finite) < 2:
        return float("nan"), float("nan")
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(finite, [alpha, 1 - alpha])
    return float(low), float(high)


def _cell_row(part: pd.DataFrame, slot_columns: Sequence[str], bootstrap: int, seed: int) -> dict[str, Any] | None:
    keys = ["prompt_id", *(["position"] if "position" in part.columns else [])]
    prompt = part[keys].astype(str).groupby(keys, sort=False, dropna=False).ngroup().to_numpy(np.int64)
    k = np.bincount(prompt)
    if k.max() < 2:
        return None
    cols = [c for c in slot_columns if c in part.columns]
    slot = (part[cols].astype(str).groupby(cols, sort=False, dropna=False).ngroup().to_numpy(np.int64) if cols
            else np.zeros(len(part), dtype=np.int64))
    y = part["y"].to_numpy(np.float64)
    stats = _slot_stats(y, slot, prompt)
    n_slots = len(stats)
    estimate = decompose(stats, np.ones(n_slots))[:, 0]
    intervals = [(float("nan"), float("nan"))] * len(_COMPONENTS)
    if bootstrap > 0 and n_slots >= 2:
        rng = np.random.default_rng(seed)
        draws = rng.multinomial(n_slots, np.full(n_slots, 1.0 / n_slots), size=bootstrap)
        replicates = decompose(stats, draws)
        intervals = [_interval(replicates[i]) for i in range(len(_COMPONENTS))]
    s2w, s2p, s2s, ratio = (float(v) for v in estimate)
    total = sum(max(v, 0.0) for v in (s2w, s2p, s2s) if np.isfinite(v))
    return {
        "measure": str(part["measure"].iloc[0]) if "measure" in part.columns else "",
        "n_slots": n_slots, "n_prompts": len(k), "n_answers": len(part), "repeats": float(k.mean()),
        "within_prompt_var": s2w, "within_ci_low": intervals[0][0], "within_ci_high": intervals[0][1],
        "between_prompt_var": s2p, "between_prompt_ci_low": intervals[1][0], "between_prompt_ci_high": intervals[1][1],
        "between_slot_var": s2s, "between_slot_ci_low": intervals[2][0], "between_slot_ci_high": intervals[2][1],
        "within_share": max(s2w, 0.0) / total if total > 0 else float("nan"),
        "gap_width_ratio": ratio, "gap_width_ratio_ci_low": intervals[3][0],
        "gap_width_ratio_ci_high": intervals[3][1],
        "width_saved_pct": 100.0 * (1.0 - ratio) if np.isfinite(ratio) else float("nan"),
    }


def noise_decomposition(rows: pd.DataFrame, slot_columns: Sequence[str], facet_columns: Sequence[str],
                        bootstrap: int, seed: int) -> pd.DataFrame:
    """The table (:data:`COLUMNS`) from measured rows with every repeat (one row per answer, ``y``)."""
    if rows.empty or "prompt_id" not in rows.columns:
        return pd.DataFrame(columns=list(COLUMNS))
    facets = set(facet_columns)
    slots = [c for c in slot_columns if c not in facets]
    out = []
    for cell, part in rows.groupby(_CELL, sort=False, observed=True):
        base = dict(zip(_CELL, (str(c) for c in cell), strict=True))
        row = _cell_row(part, slots, bootstrap, stable_seed("noise_decomposition", *base.values(), base_seed=seed))
        if row is not None:
            out.append({**base, **row})
    return pd.DataFrame(out, columns=list(COLUMNS))


def _build(inputs: TableInputs) -> pd.DataFrame:
    study = inputs.study
    return noise_decomposition(inputs.rows, list(study.slot_columns), [f.column for f in study.facets],
                               inputs.bootstrap, inputs.seed)


#: built only when the results hold repeats (:func:`counterbench.analyses.study.outcome_table_frames`)
NOISE_SPEC = TableSpec("noise_decomposition", COLUMNS, DESCRIPTION, _build, title=TITLE,
                       empty_reason="needs prompts with at least two usable answers (--repeats)")
