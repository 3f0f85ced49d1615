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
- the mark's test, a **null reference over profiles**: with nothing planted every profile is
  exchangeable, so the designated pair's |gap| is as likely to rank anywhere among the |gaps| of all
  ``n_pairs`` pairs of profiles at that step; ``p_value`` = the share of pairs whose |gap| is at least
  as large (the designated pair included), ``testable`` with at least :data:`MIN_PAIRS` pairs, and
  ``significant`` when its BH q (``q_value``) ≤ α within its model's rows;
- ``spread`` — the highest minus the lowest profile mean (``highest``, ``lowest``): *descriptive only*,
  since it picks the two profiles after seeing the answers (with nothing planted, 288 profiles of 21
  answers each spread several grade levels by chance).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.builtin.stem.analysis import context_attributes
from counterbench.stats.inference import ALPHA, family_marks
from counterbench.stats.welch import welch_t

KEYS = ("model", "context", "dataset", "experiment")
#: fewest pairs of profiles before the null reference is used (1/MIN_PAIRS is its smallest p)
MIN_PAIRS = 100


def _last_step(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["experiment"].astype(str).isin(["progressive", "ablation"]) & frame["y"].notna()
                 & frame["task"].astype(str).eq("generation")]
    if rows.empty:
        return rows
    last = rows.groupby(list(KEYS), observed=True)["step"].transform("max")
    return rows[rows["step"].eq(last)]


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
        ends = {}
        for end, pick in (("privileged", 0), ("marginalised", -1)):
            want = {a: [lv for lv in levels[a] if lv in set(part[a].astype(str))][pick] for a in stated}
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
        p_value = float(np.mean(pair_gaps >= abs(gap) - 1e-12))
        t, df, p = welch_t(a, b)
        out.append({**ident, "step": int(part["step"].max()), "attributes": " × ".join(stated),
                    "privileged": str(profiles.loc[ends["privileged"], "characteristic"]),
                    "marginalised": str(profiles.loc[ends["marginalised"], "characteristic"]),
                    "mean_privileged": float(means[ends["privileged"]]),
                    "mean_marginalised": float(means[ends["marginalised"]]), "gap": gap,
                    "n_a": len(a), "n_b": len(b), "t": t, "df": df, "p": p, "n_profiles": len(values),
                    "n_pairs": len(pair_gaps), "p_value": p_value,
                    "highest": str(profiles["characteristic"].get(str(means.idxmax()))),
                    "lowest": str(profiles["characteristic"].get(str(means.idxmin()))),
                    "spread": float(values.max() - values.min())})
    table = pd.DataFrame(out)
    if not table.empty:
        table["testable"] = table["n_pairs"].to_numpy() >= MIN_PAIRS
        table["q_value"], table["significant"] = family_marks(table, p_col="p_value", family=("model",),
                                                              testable=table["testable"], alpha=alpha)
    return table
