"""The paper's subgroup headline numbers, each with a test on the independent unit: gaps inside one level of
another attribute ("even at IIT", :func:`within_gap_table`) and the make-up of the top and bottom tenth
of profiles ("100% of the top decile are English-medium", :func:`decile_table`).

Input is :func:`counterbench.builtin.stem.analysis.outcome_frame`'s frame; the rows compared are listed in
``headline.yaml`` (data, not code).

- :func:`within_gap_table` — per model × task × context × dataset × role and ``headline.yaml`` row: among
  the profiles at the ``within`` level (e.g. college tier IIT), the mean outcome at the attribute's first
  level minus its last (e.g. English − Hindi/Regional medium). ``gap`` is over responses with the paper's
  Welch test (``t``, ``p``). The mark's test is on profiles, each averaged over its problems: in the main
  experiment a studentized permutation test of the two levels' profiles (``test`` ``permutation``,
  testable with :data:`~counterbench.builtin.stem.analysis.MIN_PROFILES` a side); at a designed
  experiment's last step, where every combination is asked, an exact swap test of *matched* profiles —
  alike in every other stated attribute (``test`` ``matched swap``, testable with
  :func:`~counterbench.stats.swap_test.fewest_testable` pairs). BH within each model's rows.
- :func:`decile_table` — per main-experiment cell: the profiles ranked by mean outcome (ties broken at
  random with the seed), the top and bottom ``decile_share`` of them; per end, attribute and level the
  count and share there against the level's share of all profiles. The test is per end and attribute
  (its levels' rows share it): with nothing planted every profile is exchangeable, so a tenth is a random
  draw of profiles; ``p_value`` is the share of 9,999 random tenths whose χ² against the level shares of
  all profiles is at least the observed tenth's; ``testable`` with at least :data:`MIN_END` profiles in
  a tenth; BH within each model over its (end, attribute) tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
import yaml

from counterbench.analyses.slot_keys import joined_keys
from counterbench.builtin.stem.analysis import CELL, MIN_PROFILES, context_attributes, profile_means
from counterbench.stats.inference import ALPHA, family_marks
from counterbench.stats.seeding import stable_seed
from counterbench.stats.swap_test import LabelPermutationTest, SwapTest, fewest_testable
from counterbench.stats.welch import welch_t


@cache
def headline_spec() -> dict[str, Any]:
    """``headline.yaml``: the within-subgroup gaps and the decile share."""
    text = resources.files("counterbench.builtin.stem").joinpath("headline.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def _stated(part: pd.DataFrame, attributes: Sequence[str]) -> list[str]:
    return [a for a in attributes if a in part.columns and part[a].astype(str).ne("").any()]


def _rows_of(frame: pd.DataFrame, experiment: str) -> pd.DataFrame:
    rows = frame[frame["experiment"].astype(str).eq(experiment) & frame["y"].notna()]
    if experiment == "main" or rows.empty:
        return rows
    last = rows.groupby(["model", "context", "dataset"], observed=True)["step"].transform("max")
    return rows[rows["step"].eq(last)]


def _matched_p(part: pd.DataFrame, attribute: str, ends: tuple[str, str], others: Sequence[str],
               tester: SwapTest) -> tuple[int, float]:
    """Matched pairs and the exact swap p of their differences (profiles alike in every ``others``)."""
    grouped = part.groupby("profile_id", sort=True, observed=True)
    profiles = grouped[[attribute, *others]].first()
    profiles["y"] = grouped["y"].mean()
    profiles["slot"] = joined_keys(profiles, list(others), "|") if others else ""
    sides = [profiles[profiles[attribute].eq(level)].groupby("slot")["y"].mean() for level in ends]
    joined = pd.concat(sides, axis=1, keys=["a", "b"], join="inner")
    if joined.empty:
        return 0, float("nan")
    return len(joined), tester.pvalue_of_sum((joined["a"] - joined["b"]).to_numpy(np.float64))


def within_gap_table(frame: pd.DataFrame, *, seed: int = 0, alpha: float = ALPHA,
                     spec: Sequence[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Gaps between an attribute's first and last level inside one level of another (module docstring)."""
    rows_spec = list(spec if spec is not None else headline_spec()["within_gaps"])
    permute = LabelPermutationTest(stable_seed("stem-within", base_seed=seed))
    swap = SwapTest(seed)
    out = []
    for item in rows_spec:
        experiment, context, attribute = str(item["experiment"]), str(item["context"]), str(item["attribute"])
        (within_attr, within_level), = dict(item["within"]).items()
        rows = _rows_of(frame, experiment)
        rows = rows[rows["context"].astype(str).eq(context)]
        if rows.empty or attribute not in rows.columns or within_attr not in rows.columns:
            continue
        levels = context_attributes(context)
        ends = (levels[attribute][0], levels[attribute][-1])
        sub = rows[rows[within_attr].astype(str).to_numpy() == str(within_level)]
        for key, part in sub.groupby(list(CELL), sort=True, observed=True):
            a = part.loc[part[attribute].astype(str).eq(ends[0]), "y"]
            b = part.loc[part[attribute].astype(str).eq(ends[1]), "y"]
            if a.empty or b.empty:
                continue
            t, df, p = welch_t(a, b)
            row: dict[str, Any] = {**dict(zip(CELL, (str(k) for k in key), strict=True)), "experiment": experiment,
                                   "within": f"{within_attr} = {within_level}", "attribute": attribute,
                                   "comparison": f"{ends[0]} − {ends[1]}", "n_a": len(a), "n_b": len(b),
                                   "mean_a": float(a.mean()), "mean_b": float(b.mean()),
                                   "gap": float(a.mean() - b.mean()), "t": t, "df": df, "p": p}
            if experiment == "main":
                means = part.groupby("profile_id", observed=True).agg(y=("y", "mean"), level=(attribute, "first"))
                pa, pb = (means.loc[means["level"].astype(str).eq(e), "y"].to_numpy(np.float64) for e in ends)
                units = min(len(pa), len(pb))
                row.update(test="permutation", n_units=units, p_value=permute.pvalue(pa, pb),
                           testable=units >= MIN_PROFILES)
            else:
                others = [x for x in _stated(part, list(levels)) if x not in (attribute, within_attr)]
                units, p_value = _matched_p(part, attribute, ends, others, swap)
                row.update(test="matched swap", n_units=units, p_value=p_value,
                           testable=units >= fewest_testable(alpha))
            row["paper"] = str(item.get("paper", ""))
            out.append(row)
    table = pd.DataFrame(out)
    if not table.empty:
        table["q_value"], table["significant"] = family_marks(table, p_col="p_value", family=("model",),
                                                              testable=table["testable"], alpha=alpha)
    return table


#: fewest profiles in a tenth before its make-up is tested
MIN_END = 5


def _composition_null(part: pd.DataFrame, attribute: str, levels: Sequence[str], size: int,
                      draws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(one-hot levels of the profiles, expected counts in a tenth of ``size``, χ² of each random tenth):
    the same for the top and the bottom tenth, so computed once for both."""
    codes = pd.Categorical(part[attribute].astype(str), categories=list(levels)).codes
    onehot = np.zeros((len(part), len(levels)))
    onehot[codes >= 0, codes[codes >= 0]] = 1.0
    onehot = onehot[:, onehot.sum(axis=0) > 0]
    expected = onehot.sum(axis=0) * float(size) / len(part)
    null = (((draws @ onehot) - expected) ** 2 / expected).sum(axis=1)
    return onehot, expected, null


def _composition_p(chosen: np.ndarray, onehot: np.ndarray, expected: np.ndarray, null: np.ndarray) -> float:
    """Monte Carlo p of the tenth's χ² against the level shares of all profiles, over random tenths
    (:func:`_composition_null`)."""
    observed = float((((chosen @ onehot) - expected) ** 2 / expected).sum())
    return float((1 + np.count_nonzero(null >= observed * (1.0 - 1e-9))) / (1 + len(null)))


def decile_table(frame: pd.DataFrame, *, seed: int = 0, alpha: float = ALPHA, share: float | None = None
                 ) -> pd.DataFrame:
    """Per main-experiment cell, end (top/bottom tenth), attribute and level: the tenth's make-up (docstring)."""
    fraction = float(share if share is not None else headline_spec()["decile_share"])
    profiles = profile_means(frame)
    out, tests = [], []
    sampler = LabelPermutationTest(stable_seed("stem-deciles", base_seed=seed))
    for key, part in profiles.groupby(list(CELL), sort=True, observed=True):
        ident = dict(zip(CELL, (str(k) for k in key), strict=True))
        total = len(part)
        size = max(1, math.floor(total * fraction + 1e-9))
        if total < 2 * size:
            continue
        rng = np.random.default_rng(stable_seed("stem-deciles", *ident.values(), base_seed=seed))
        order = np.lexsort((rng.random(total), part["y"].to_numpy(np.float64)))
        draws = sampler.selections(size, total - size)
        attributes = {a: lv for a, lv in context_attributes(ident["context"]).items()
                      if a in part.columns and part[a].nunique() >= 2}
        nulls = {a: _composition_null(part, a, lv, size, draws) for a, lv in attributes.items()}
        counted = {a: part[a].astype(str).value_counts() for a in attributes}
        for end, members in (("top", order[::-1][:size]), ("bottom", order[:size])):
            chosen = np.zeros(total)
            chosen[members] = 1.0
            inside = part.iloc[members]
            for attribute, levels in attributes.items():
                counts = counted[attribute]
                hits = inside[attribute].astype(str).value_counts()
                tests.append({**ident, "end": end, "attribute": attribute, "testable": size >= MIN_END,
                              "p_value": _composition_p(chosen, *nulls[attribute])})
                for level in levels:
                    if int(counts.get(level, 0)):
                        out.append({**ident, "end": end, "attribute": attribute, "level": level, "n_profiles": total,
                                    "n_end": size, "n_level": int(counts[level]), "in_end": int(hits.get(level, 0)),
                                    "share_end": int(hits.get(level, 0)) / size,
                                    "share_all": int(counts[level]) / total})
    if not out:
        return pd.DataFrame()
    tested = pd.DataFrame(tests)
    tested["q_value"], tested["significant"] = family_marks(tested, p_col="p_value", family=("model",),
                                                            testable=tested["testable"], alpha=alpha)
    return pd.DataFrame(out).merge(tested, on=[*CELL, "end", "attribute"], how="left")
