"""The paper's headline number: the gap between the most privileged and the most marginalised profile at
full intersectionality (its abstract: 2.55 grade levels), with a null reference.

At the last step of the progressive experiment (and its ablation) every combination of the stated
attributes is one profile, answered over every generation problem. The *designated* extremes are fixed
before looking at the answers: the profile stating every attribute's first level (the paper's
privileged end: e.g. Male, High income, General, IIT, Able-bodied) and the one stating every last level
(Non-binary, Low income, ST, Private, Disabled). :func:`extreme_gap_table` gives per model × context ×
dataset × experiment:

- ``gap`` = privileged − marginalised mean MGL over their problems, with the paper's Welch test over
  the two profiles' responses (``t``, ``p``: each answer counted as independent);
- ``p_rank``, a **null reference over profiles**: with nothing planted every profile is
  exchangeable, so the designated pair's |gap| is as likely to rank anywhere among the |gaps| of all
  ``n_pairs`` pairs of profiles at that step; ``p_rank`` = the share of pairs whose |gap| is at least
  as large (the designated pair included). Alone it cannot reject an effect that covers many profiles:
  with one level pair (a sixth of the profiles) 3 grade levels lower, about 28% of all pairs differ
  by as much as the designated pair, so its p stays near 0.14 whatever the sample size;
- ``gap_model`` and ``p_model``, the **additive model**: each profile's mean outcome (its answers with
  each problem's mean over the step's profiles taken out, so a profile missing an answer is not
  moved by which problem it missed) regressed by least squares on the stated attributes' levels (one
  column per level after the first, plus an intercept); ``gap_model`` is the designated gap the model
  predicts (the sum over attributes of the first level's coefficient minus the last's) and
  ``p_model`` its t-test with the residual degrees of freedom — powerful when an effect moves many
  profiles (one attribute level, a pair of levels), where the rank is not;
- the mark: ``p_value`` = min(1, ``p_model``/0.8, ``p_rank``/0.2), a weighted Bonferroni combination
  of the two (valid whatever their dependence: P(p_model ≤ 0.8t or p_rank ≤ 0.2t) ≤ t) under the
  null both share — the attributes change nothing, every profile exchangeable; ``testable`` with at
  least :data:`MIN_PAIRS` pairs, and ``significant`` when its BH q (``q_value``) ≤ α within its
  model's rows. A missing ``p_model`` (too few residual degrees of freedom) counts as 1;
- ``spread`` — the highest minus the lowest profile mean (``highest``, ``lowest``): *descriptive only*,
  since it picks the two profiles after seeing the answers (with nothing planted, 288 profiles of 21
  answers each spread several grade levels by chance).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from counterbench.builtin.stem.analysis import context_attributes
from counterbench.stats.distributions import t_sf
from counterbench.stats.inference import ALPHA, family_marks
from counterbench.stats.welch import welch_t

KEYS = ("model", "context", "dataset", "experiment")
#: fewest pairs of profiles before the null reference is used (1/MIN_PAIRS is its smallest p)
MIN_PAIRS = 100
#: the two tests' shares of α in the mark's weighted Bonferroni combination (model, rank)
WEIGHTS = (0.8, 0.2)
#: fewest residual degrees of freedom before the additive model is tested
MIN_DF = 10


def _last_step(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["experiment"].astype(str).isin(["progressive", "ablation"]) & frame["y"].notna()
                 & frame["task"].astype(str).eq("generation")]
    if rows.empty:
        return rows
    last = rows.groupby(list(KEYS), observed=True)["step"].transform("max")
    return rows[rows["step"].eq(last)]


def additive_gap(part: pd.DataFrame, ends: dict[str, dict[str, str]]) -> tuple[float, float]:
    """(``gap_model``, ``p_model``): the designated gap an additive least-squares model of the profiles'
    problem-adjusted means predicts, and its two-sided t-test (see module docstring); NaN, NaN with
    fewer than :data:`MIN_DF` residual degrees of freedom."""
    y = part["y"].to_numpy(np.float64)
    adjusted = y - part.groupby("problem_id", sort=False, observed=True)["y"].transform("mean").to_numpy() \
        if "problem_id" in part.columns else y
    means = pd.Series(adjusted, index=part.index).groupby(part["profile_id"], sort=True, observed=True).mean()
    profiles = part.drop_duplicates("profile_id").set_index("profile_id").loc[means.index]
    columns: list[npt.NDArray[np.float64]] = [np.ones(len(means))]
    contrast = [0.0]
    for attribute, first in ends["privileged"].items():
        last = ends["marginalised"][attribute]
        values = profiles[attribute].astype(str)
        for level in dict.fromkeys(values):
            if level != first:
                columns.append(np.asarray(values.eq(level).to_numpy(), dtype=np.float64))
                contrast.append(-1.0 if level == last else 0.0)
    x, c = np.column_stack(columns), np.asarray(contrast)
    df = len(means) - np.linalg.matrix_rank(x)
    if df < MIN_DF:
        return float("nan"), float("nan")
    beta, *_ = np.linalg.lstsq(x, means.to_numpy(np.float64), rcond=None)
    resid = means.to_numpy(np.float64) - x @ beta
    sigma2 = float(resid @ resid) / df
    gap = float(c @ beta)
    se = float(np.sqrt(sigma2 * (c @ np.linalg.pinv(x.T @ x) @ c)))
    if not se > 0:
        return gap, float("nan")
    return gap, float(2.0 * t_sf(abs(gap) / se, df))


def combined_pvalue(p_model: float, p_rank: float) -> float:
    """The mark's p: min(1, p_model/0.8, p_rank/0.2) (:data:`WEIGHTS`); a missing p counts as 1."""
    parts = [p / w for p, w in zip((p_model, p_rank), WEIGHTS, strict=True) if p == p]
    return float(min([1.0, *parts]))


def extreme_gap_table(frame: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """The designated extreme-profile gap at each experiment's last step (see module docstring)."""
    rows = _last_step(frame)
    out = []
    for key, part in rows.groupby(list(KEYS), sort=True, observed=True):
        ident = dict(zip(KEYS, (str(k) for k in key), strict=True))
        levels = context_attributes(ident["context"])
        stated = [a for a in levels if a in part.columns and part[a].astype(str).ne("").any()]
        means = part.groupby("profile_id", sort=True, observed=True)["y"].mean()
        profiles = part.drop_duplicates("profile_id").set_index("profile_id")
        present = {a: set(part[a].astype(str).unique()) for a in stated}
        ends, wanted = {}, {}
        for end, pick in (("privileged", 0), ("marginalised", -1)):
            want = {a: [lv for lv in levels[a] if lv in present[a]][pick] for a in stated}
            wanted[end] = want
            hit = np.ones(len(profiles), dtype=bool)
            for attribute, level in want.items():
                hit &= profiles[attribute].astype(str).eq(level).to_numpy()
            ends[end] = profiles.index[hit][0] if hit.any() else None
        if ends["privileged"] is None or ends["marginalised"] is None or len(means) < 2:
            continue
        a = part.loc[part["profile_id"].eq(ends["privileged"]), "y"]
        b = part.loc[part["profile_id"].eq(ends["marginalised"]), "y"]
        gap = float(means[ends["privileged"]] - means[ends["marginalised"]])
        values = means.to_numpy(np.float64)
        upper = np.triu_indices(len(values), k=1)
        pair_gaps = np.abs(values[:, None] - values[None, :])[upper]
        p_rank = float(np.mean(pair_gaps >= abs(gap) - 1e-12))
        gap_model, p_model = additive_gap(part, wanted)
        t, df, p = welch_t(a, b)
        out.append({**ident, "step": int(part["step"].max()), "attributes": " × ".join(stated),
                    "privileged": str(profiles.loc[ends["privileged"], "characteristic"]),
                    "marginalised": str(profiles.loc[ends["marginalised"], "characteristic"]),
                    "mean_privileged": float(means[ends["privileged"]]),
                    "mean_marginalised": float(means[ends["marginalised"]]), "gap": gap,
                    "n_a": len(a), "n_b": len(b), "t": t, "df": df, "p": p, "n_profiles": len(values),
                    "n_pairs": len(pair_gaps), "p_rank": p_rank, "gap_model": gap_model, "p_model": p_model,
                    "p_value": combined_pvalue(p_model, p_rank),
                    "highest": str(profiles["characteristic"].get(str(means.idxmax()))),
                    "lowest": str(profiles["characteristic"].get(str(means.idxmin()))),
                    "spread": float(values.max() - values.min())})
    table = pd.DataFrame(out)
    if not table.empty:
        table["testable"] = table["n_pairs"].to_numpy() >= MIN_PAIRS
        table["q_value"], table["significant"] = family_marks(table, p_col="p_value", family=("model",),
                                                              testable=table["testable"], alpha=alpha)
    return table
