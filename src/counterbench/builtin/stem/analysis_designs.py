"""STEM analyses of the designed experiments, the extreme profiles and the ranking task's positions.

Input is :func:`counterbench.builtin.stem.analysis.outcome_frame`'s frame.

- :func:`progressive_table` — the progressive intersectional experiment (paper §4.3.1, Figures 7–10):
  per model × context × dataset × experiment (``progressive`` / ``ablation``, the latter with college tier
  fixed, §4.5.2) × step, the MGL's n, mean, SD, variance and quantiles (:data:`QUANTILES`: the per-step
  distribution), and the profiles' count and the SD of their means.
- :func:`interaction_tables` — at each experiment's last step, the two-way tables of
  :data:`INTERACTIONS` (income × disability, caste or race × disability, college tier × income; Tables
  12–14): cell means, SDs and n; within each row level, Welch's test of the column attribute's first
  versus last level (the gap, t, p, d); and the designated extreme-cell gap — first × first versus last ×
  last level (levels run from the paper's privileged to marginalised end) — with its Welch test (the
  paper's) and an exact swap test over matched profiles (the mark); the observed highest and lowest
  cells are reported too (descriptive only: picking them is data-driven).
- :func:`single_attribute_table` — the single-attribute replication (§4.5.1): z-scores per level of each
  attribute varied alone, within model × task × context × dataset × role, with 95% t-intervals (forest
  plot), and the baseline (no attribute stated).
- :func:`extremes_table` — the top and bottom ``k`` profiles per cell by mean z (Tables 5–6; profile
  level, so a profile appears once).
- :func:`position_tables` — beyond the paper: the share of choices per letter A–E per model × context ×
  role with a χ² test against uniform, and per attribute a χ² test of independence of letter and level
  (does the position preference interact with who the student is?); marks: BH within each model's rows
  of each table, tests with an expected count below :data:`MIN_EXPECTED` untested.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from counterbench.analyses.slot_keys import joined_keys
from counterbench.builtin.stem.analysis import CELL, context_attributes
from counterbench.builtin.stem.design import LETTERS
from counterbench.stats.inference import ALPHA, family_marks
from counterbench.stats.multiple_testing import benjamini_hochberg
from counterbench.stats.swap_test import SwapTest, fewest_testable
from counterbench.stats.welch import cohens_d, welch_t
from counterbench.stats.zbias import zscore_within

#: (row attribute, column attribute) pairs per context for the interaction tables
INTERACTIONS = {
    "india": (("income", "disability"), ("caste", "disability"), ("college_tier", "income")),
    "usa": (("income", "disability"), ("race", "disability"), ("college_tier", "income")),
}
DESIGN_CELL = ("model", "context", "dataset", "experiment")
#: fewest expected answers per cell of a χ² test before it is tested (Cochran's rule)
MIN_EXPECTED = 5.0
#: the per-step quantiles of :func:`progressive_table` (column -> quantile)
QUANTILES = {"q10": 0.1, "q25": 0.25, "median": 0.5, "q75": 0.75, "q90": 0.9}
INTERACTION_ATTRIBUTES = tuple(dict.fromkeys(a for pairs in INTERACTIONS.values() for pair in pairs for a in pair))


def _designed(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["experiment"].astype(str).isin(["progressive", "ablation"]) & frame["y"].notna()]
    return rows[rows["task"].astype(str).eq("generation")]


def progressive_table(frame: pd.DataFrame) -> pd.DataFrame:
    """n, mean, SD and variance of MGL per model × context × dataset × experiment × step."""
    rows = _designed(frame)
    if rows.empty:
        return pd.DataFrame()
    grouped = rows.groupby([*DESIGN_CELL, "step"], sort=True, observed=True)["y"]
    out = grouped.agg(n="count", mean="mean", sd="std", var="var", min="min", max="max").reset_index()
    for name, q in QUANTILES.items():  # the per-step distribution (the report's box chart, Figures 5–10)
        out[name] = grouped.quantile(q).to_numpy()
    profiles = rows.groupby([*DESIGN_CELL, "step", "profile_id"], sort=True, observed=True)["y"].mean()
    out["n_profiles"] = profiles.groupby(level=list(range(len(DESIGN_CELL) + 1))).count().to_numpy()
    out["sd_profiles"] = profiles.groupby(level=list(range(len(DESIGN_CELL) + 1))).std().to_numpy()
    return out


def _welch_row(a: pd.Series, b: pd.Series) -> dict[str, float]:
    t, df, p = welch_t(a, b)
    return {"gap": float(a.mean() - b.mean()) if len(a) and len(b) else np.nan, "t": t, "df": df, "p": p,
            "d": cohens_d(a, b)}


def _matched(profiles: pd.DataFrame, cells: tuple[tuple[str, str], tuple[str, str]], row_attr: str, col_attr: str,
             tester: SwapTest) -> dict[str, float]:
    """The swap test of two cells over matched slots: profiles alike in every other stated attribute."""
    sides = []
    for r, c in cells:
        part = profiles[profiles[row_attr].eq(r) & profiles[col_attr].eq(c)]
        sides.append(part.groupby("slot", sort=True)["y"].mean())
    joined = pd.concat(sides, axis=1, keys=["a", "b"], join="inner")
    n = len(joined)
    p = tester.pvalue_of_sum((joined["a"] - joined["b"]).to_numpy(np.float64)) if n else np.nan
    return {"n_slots": n, "p_value": p}


def _profile_slots(last: pd.DataFrame, others: Sequence[str]) -> pd.DataFrame:
    """One row per profile: mean ``y`` over its problems, its attributes and ``slot`` (the other attributes)."""
    grouped = last.groupby("profile_id", sort=True, observed=True)
    wanted = set(others) | set(INTERACTION_ATTRIBUTES)
    profiles = grouped[[c for c in last.columns if c in wanted]].first()
    profiles["y"] = grouped["y"].mean()
    profiles["slot"] = joined_keys(profiles, list(others), "|").astype(str) if others else ""
    return profiles


def interaction_tables(frame: pd.DataFrame, *, seed: int = 0, alpha: float = ALPHA
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cells of every interaction table, per-row-level and extreme-cell gaps) at each experiment's last step.

    Each gap has the paper's Welch test over responses (``t``, ``df``, ``p``, ``d``; ``p_fdr``: BH over the
    whole table) and the mark's test: an exact swap test over *matched slots* — profiles that state the
    same levels of every other attribute (the design crosses them all, so each profile of one cell has
    its twin in the other), each profile's answers averaged over its problems (``n_slots``, ``p_value``).
    A gap is ``testable`` with at least :func:`~counterbench.stats.swap_test.fewest_testable` slots, and
    ``significant`` when its BH q (``q_value``) ≤ α within its model's testable gaps.
    """
    rows = _designed(frame)
    cells, gaps = [], []
    tester = SwapTest(seed)
    for key, part in rows.groupby(list(DESIGN_CELL), sort=True, observed=True):
        ident = {c: str(v) for c, v in zip(DESIGN_CELL, key, strict=True)}
        last = part[part["step"].eq(part["step"].max())]
        attrs = context_attributes(ident["context"])
        for row_attr, col_attr in INTERACTIONS.get(ident["context"], ()):
            present = [a for a in (row_attr, col_attr) if last[a].astype(str).ne("").any()]
            if len(present) < 2 or last[row_attr].nunique() < 2 or last[col_attr].nunique() < 2:
                continue
            table = f"{row_attr} × {col_attr}"
            row_present, col_present = set(last[row_attr].unique()), set(last[col_attr].unique())
            row_levels = [lv for lv in attrs[row_attr] if lv in row_present]
            col_levels = [lv for lv in attrs[col_attr] if lv in col_present]
            others = [a for a in attrs if a not in (row_attr, col_attr) and a in last.columns
                      and last[a].astype(str).ne("").any()]
            profiles = _profile_slots(last, others)
            grid = last.groupby([row_attr, col_attr], observed=True)["y"].agg(["count", "mean", "std"])
            found = {(str(r), str(c)): (int(v[0]), float(v[1]), float(v[2]))
                     for (r, c), v in zip(grid.index, grid.to_numpy(), strict=True)}
            for r in row_levels:
                for c in col_levels:
                    n, mean, sd = found.get((r, c), (0, np.nan, np.nan))
                    cells.append({**ident, "table": table, "row_level": r, "col_level": c, "n": n,
                                  "mean": mean, "sd": sd})
                a = last.loc[last[row_attr].eq(r) & last[col_attr].eq(col_levels[0]), "y"]
                b = last.loc[last[row_attr].eq(r) & last[col_attr].eq(col_levels[-1]), "y"]
                gaps.append({**ident, "table": table, "kind": "within row", "row_level": r,
                             "comparison": f"{col_levels[0]} − {col_levels[-1]}", "n_a": len(a), "n_b": len(b),
                             **_welch_row(a, b), **_matched(profiles, ((r, col_levels[0]), (r, col_levels[-1])),
                                                            row_attr, col_attr, tester)})
            a = last.loc[last[row_attr].eq(row_levels[0]) & last[col_attr].eq(col_levels[0]), "y"]
            b = last.loc[last[row_attr].eq(row_levels[-1]) & last[col_attr].eq(col_levels[-1]), "y"]
            ends = ((row_levels[0], col_levels[0]), (row_levels[-1], col_levels[-1]))
            gaps.append({**ident, "table": table, "kind": "extreme cells", "row_level": "",
                         "comparison": f"{row_levels[0]}+{col_levels[0]} − {row_levels[-1]}+{col_levels[-1]}",
                         "n_a": len(a), "n_b": len(b), **_welch_row(a, b),
                         **_matched(profiles, ends, row_attr, col_attr, tester)})
            observed = {k: v for k, v in found.items() if not np.isnan(v[1])}
            if len(observed) >= 2:
                hi = max(observed, key=lambda k: observed[k][1])
                lo = min(observed, key=lambda k: observed[k][1])
                gaps.append({**ident, "table": table, "kind": "observed max − min (descriptive)", "row_level": "",
                             "comparison": f"{hi[0]}+{hi[1]} − {lo[0]}+{lo[1]}", "n_a": observed[hi][0],
                             "n_b": observed[lo][0], "gap": observed[hi][1] - observed[lo][1],
                             "t": np.nan, "df": np.nan, "p": np.nan, "d": np.nan, "n_slots": np.nan,
                             "p_value": np.nan})
    cell_frame, gap_frame = pd.DataFrame(cells), pd.DataFrame(gaps)
    if not gap_frame.empty:
        gap_frame["p_fdr"] = benjamini_hochberg(gap_frame["p"].to_numpy(dtype=np.float64))[0]
        slots = pd.to_numeric(gap_frame["n_slots"], errors="coerce").fillna(0).to_numpy()
        gap_frame["testable"] = slots >= fewest_testable(alpha)
        gap_frame["q_value"], gap_frame["significant"] = family_marks(
            gap_frame, p_col="p_value", family=("model",), testable=gap_frame["testable"], alpha=alpha)
    return cell_frame, gap_frame


def single_attribute_table(frame: pd.DataFrame, cell: Sequence[str] = CELL) -> pd.DataFrame:
    """Forest-plot rows: per cell × varied attribute × level, mean z with a 95% t-interval, raw mean, n."""
    rows = frame[frame["experiment"].astype(str).eq("single") & frame["y"].notna()].copy()
    if rows.empty:
        return pd.DataFrame()
    rows["z"] = zscore_within(rows, list(cell))
    out = []
    for key, part in rows.groupby(list(cell), sort=True, observed=True):
        ident = {c: str(v) for c, v in zip(cell, key, strict=True)}
        attrs = context_attributes(ident["context"])
        baseline = part[part["varied"].astype(str).eq("")]
        if len(baseline):
            out.append({**ident, "attribute": "(baseline)", "level": "none stated", **_interval(baseline)})
        for attribute, levels in attrs.items():
            for level in levels:
                sel = part[part["varied"].astype(str).eq(attribute) & part[attribute].astype(str).eq(level)]
                if len(sel):
                    out.append({**ident, "attribute": attribute, "level": level, **_interval(sel)})
    return pd.DataFrame(out)


def _interval(rows: pd.DataFrame) -> dict[str, float]:
    n = len(rows)
    z = rows["z"].to_numpy(dtype=np.float64)
    mean = float(z.mean())
    half = float(stats.t.ppf(0.975, n - 1) * z.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    return {"n": n, "mean_z": mean, "ci_low": mean - half, "ci_high": mean + half,
            "mean": float(rows["y"].mean())}


def extremes_table(frame: pd.DataFrame, k: int = 8, cell: Sequence[str] = CELL) -> pd.DataFrame:
    """Top and bottom ``k`` profiles per cell by mean z over their responses (main experiment)."""
    rows = frame[frame["experiment"].astype(str).eq("main") & frame["y"].notna()].copy()
    if rows.empty:
        return pd.DataFrame()
    rows["z"] = zscore_within(rows, list(cell))
    per_profile = rows.groupby([*cell, "profile_id"], sort=False, observed=True).agg(
        characteristic=("characteristic", "first"), score=("y", "mean"), z=("z", "mean"), n=("y", "count"))
    per_profile = per_profile.reset_index()
    out = []
    for _, part in per_profile.groupby(list(cell), sort=True, observed=True):
        ordered = part.sort_values(["z", "profile_id"], ascending=[False, True], kind="mergesort")
        out.append(ordered.head(k).assign(end="top", rank=np.arange(1, min(k, len(ordered)) + 1)))
        bottom = part.sort_values(["z", "profile_id"], ascending=[True, True], kind="mergesort").head(k)
        out.append(bottom.assign(end="bottom", rank=np.arange(1, len(bottom) + 1)))
    return pd.concat(out, ignore_index=True)


def position_tables(frame: pd.DataFrame, alpha: float = ALPHA) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(letter shares with a χ² test vs uniform per model × context × role, letter × attribute χ² tests).

    The unit is the item: each ranking prompt shows the options in its own random order, so under "no
    position preference" (or "a preference that does not depend on the student") the letters of
    different items are independent whatever the model thinks of the profiles. A χ² test is
    ``testable`` when every expected count is at least :data:`MIN_EXPECTED` (Cochran's rule; below it
    the χ² p-value is too small — the quick preset's 16 items per cell gave false stars) and
    ``significant`` when its BH q ≤ α within its model's testable rows of the table.
    """
    rows = frame[frame["task"].astype(str).eq("ranking") & frame["letter"].notna()
                 & frame["experiment"].astype(str).eq("main")]
    shares, inter = [], []
    for (model, context, role), part in rows.groupby(["model", "context", "role"], sort=True, observed=True):
        counts = part["letter"].value_counts().reindex(list(LETTERS), fill_value=0).to_numpy()
        n = int(counts.sum())
        chi2, p = stats.chisquare(counts) if n else (np.nan, np.nan)
        shares.append({"model": model, "context": context, "role": role, "n": n,
                       **{f"share_{x}": c / n * 100.0 for x, c in zip(LETTERS, counts, strict=True)},
                       "chi2": float(chi2), "p": float(p), "testable": n / len(LETTERS) >= MIN_EXPECTED})
        letter_code = pd.Categorical(part["letter"], categories=list(LETTERS)).codes
        for attribute, levels in context_attributes(str(context)).items():
            level_code = pd.Categorical(part[attribute], categories=list(levels)).codes
            ok = (level_code >= 0) & (letter_code >= 0)
            grid = np.bincount(level_code[ok] * len(LETTERS) + letter_code[ok],
                               minlength=len(levels) * len(LETTERS)).reshape(len(levels), len(LETTERS))
            grid = grid[grid.sum(axis=1) > 0][:, grid.sum(axis=0) > 0]
            if grid.shape[0] < 2 or grid.shape[1] < 2:
                continue
            res = stats.chi2_contingency(grid)
            inter.append({"model": model, "context": context, "role": role, "attribute": attribute, "n": n,
                          "chi2": float(res.statistic), "dof": int(res.dof), "p": float(res.pvalue),
                          "testable": bool(np.min(res.expected_freq) >= MIN_EXPECTED)})
    share_frame, inter_frame = pd.DataFrame(shares), pd.DataFrame(inter)
    for table in (share_frame, inter_frame):
        if not table.empty:
            table["p_fdr"], table["significant"] = family_marks(table, p_col="p", family=("model",),
                                                                testable=table["testable"], alpha=alpha)
    return share_frame, inter_frame
