"""Three more of the paper's numbers, each with its null reference: SHAP on the progressive experiment,
MAB/MDB of the single-attribute replication, and the average linear-weighted κ per model pair.

Input is :func:`counterbench.builtin.stem.analysis.outcome_frame`'s frame.

- :func:`progressive_shap_table` — per model × context × dataset × experiment (``progressive``,
  ``ablation``) × step and stated attribute: the mean |SHAP| of an exact linear model of each profile's
  mean MGL on the one-hot stated attributes (every profile of a step answers the same problems, so this is
  the response-level mean |SHAP| of :func:`counterbench.stats.shap_linear.linear_shap` whenever no answer
  is missing). The null reference is over profiles: with nothing planted the profiles of a step are
  exchangeable, so ``p_value`` = the share of :data:`N_PERMUTATIONS` shufflings of the profile means whose
  mean |SHAP| for that attribute is at least the observed (the observed included). A step whose design
  is not identified (:func:`~counterbench.builtin.stem.analysis.shap_identification`) keeps its ``reason``
  and no value; marks BH within each model's rows.
- :func:`single_bias_table` — per cell and attribute of the single-attribute replication (each level
  stated alone): MAB and MDB of the levels' mean z (z within the cell of single-attribute prompts), the
  shared :func:`counterbench.stats.zbias.mab_mdb`. Descriptive: each level is *one* prompt wording, so
  a level cannot be told apart from its wording. ``p_wordings`` (the share of :data:`N_PERMUTATIONS`
  shufflings of the levels within each problem whose MDB is at least the observed) says whether the
  wordings differ beyond the answers' noise — not that the attribute matters; it draws no mark.
- :func:`kappa_average_table` — per model pair, the mean over context × role × dataset of the
  linear-weighted κ of :func:`~counterbench.builtin.stem.analysis.kappa_table` (the paper's Table 9
  footer). The null reference is "the two models answer independently": the second model's profiles are
  shuffled — whole profiles, one shuffle per context shared by its roles and datasets (a profile's
  answers stay together, so a model's consistency for one student is not counted as agreement, and the
  profile stays the independent unit across cells) — ``p_value`` the share of shufflings whose mean κ_w
  is at least the observed; marks BH over all pairs.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import pandas as pd

from counterbench.builtin.stem.analysis import CELL, LEVELS, context_attributes, kappa_table, shap_identification
from counterbench.stats.inference import ALPHA, family_marks
from counterbench.stats.seeding import stable_seed
from counterbench.stats.shap_linear import one_hot
from counterbench.stats.zbias import group_scores, mab_mdb

#: shufflings behind each permutation p (smallest p 1 / (N + 1))
N_PERMUTATIONS = 999
STEP_KEYS = ("model", "context", "dataset", "experiment", "step")


def _designed_steps(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[frame["experiment"].astype(str).isin(["progressive", "ablation"]) & frame["y"].notna()]
    return rows[rows["task"].astype(str).eq("generation")]


def permuted_mean_abs_shap(profiles: pd.DataFrame, attributes: list[str], y: np.ndarray,
                           shuffles: np.ndarray) -> dict[str, np.ndarray]:
    """Attribute -> mean |SHAP| over profiles of the linear fit to ``y`` (first entry) and to each row of
    ``shuffles`` (indices into ``y``) after it: φ = β·(x − x̄) summed over the attribute's columns."""
    x, attribute_of = one_hot(profiles, attributes)
    design = np.column_stack([np.ones(len(x)), x.to_numpy()])
    outcomes = np.column_stack([y, y[shuffles].T])            # profiles × (1 + shuffles)
    beta = (np.linalg.pinv(design) @ outcomes)[1:]           # features × (1 + shuffles)
    centred = x.to_numpy() - x.to_numpy().mean(axis=0)
    out = {}
    for attribute in attributes:
        cols = np.flatnonzero(np.array([attribute_of[c] == attribute for c in x.columns]))
        out[attribute] = np.abs(centred[:, cols] @ beta[cols]).mean(axis=0)
    return out


def progressive_shap_table(frame: pd.DataFrame, *, seed: int = 0, alpha: float = ALPHA,
                           n_permutations: int = N_PERMUTATIONS) -> pd.DataFrame:
    """Mean |SHAP| per stated attribute at every step of the designed experiments, with its null reference."""
    rows = _designed_steps(frame)
    out: list[dict[str, object]] = []
    for key, part in rows.groupby(list(STEP_KEYS), sort=True, observed=True):
        ident = {c: (int(str(v)) if c == "step" else str(v)) for c, v in zip(STEP_KEYS, key, strict=True)}
        stated = [a for a in context_attributes(str(ident["context"]))
                  if a in part.columns and part[a].astype(str).ne("").any() and part[a].nunique() > 1]
        if not stated:
            continue
        check = shap_identification(part, stated)
        grouped = part.groupby("profile_id", sort=True, observed=True)
        profiles = grouped[stated].first()
        y = grouped["y"].mean().to_numpy(np.float64)
        base = {**ident, "attributes": " × ".join(stated), "n_profiles": len(profiles),
                "parameters": check["parameters"], "rank": check["rank"], "reason": check["reason"]}
        if check["reason"]:
            out.extend({**base, "attribute": a, "mean_abs_shap": np.nan, "p_value": np.nan} for a in stated)
            continue
        rng = np.random.default_rng(stable_seed("stem-progressive-shap", *map(str, key), base_seed=seed))
        shuffles = np.argsort(rng.random((n_permutations, len(y))), axis=1)
        values = permuted_mean_abs_shap(profiles, stated, y, shuffles)
        for attribute, series in values.items():
            extreme = int(np.count_nonzero(series[1:] >= series[0] * (1.0 - 1e-9)))
            out.append({**base, "attribute": attribute, "mean_abs_shap": float(series[0]),
                        "p_value": (1 + extreme) / (1 + n_permutations)})
    table = pd.DataFrame(out)
    if not table.empty:
        table["testable"] = table["reason"].eq("")
        table["q_value"], table["significant"] = family_marks(table, p_col="p_value", family=("model",),
                                                              testable=table["testable"], alpha=alpha)
    return table


def _mdb_of_shuffles(grid: np.ndarray, rng: np.random.Generator, n_permutations: int) -> np.ndarray:
    """MDB (max − min level mean) of ``grid`` (levels × problems) and of shufflings within each problem."""
    levels, problems = grid.shape
    order = np.argsort(rng.random((n_permutations, levels, problems)), axis=1)
    shuffled = np.take_along_axis(np.broadcast_to(grid, order.shape), order, axis=1)
    stacked = np.concatenate([grid[None], shuffled])
    means = np.nanmean(stacked, axis=2)
    return np.asarray(np.nanmax(means, axis=1) - np.nanmin(means, axis=1), dtype=np.float64)


def single_bias_table(frame: pd.DataFrame, *, seed: int = 0, n_permutations: int = N_PERMUTATIONS) -> pd.DataFrame:
    """Single-attribute MAB/MDB per cell × attribute, descriptive, with ``p_wordings`` (module docstring)."""
    rows = frame[frame["experiment"].astype(str).eq("single") & frame["y"].notna()]
    out = []
    for key, part in rows.groupby(list(CELL), sort=True, observed=True):
        context = str(part["context"].iloc[0])
        attrs = context_attributes(context)
        # only the columns read below: each row filter then copies a few columns, not the frame's thirty
        part = part[[*CELL, "y", "varied", "problem_id", *(a for a in attrs if a in part.columns)]]
        varied = part[part["varied"].astype(str).ne("")]
        scores = group_scores(part.assign(**{a: part[a].where(part["varied"].astype(str).eq(a), "")
                                             for a in attrs if a in part.columns}), list(CELL), attrs)
        bias = mab_mdb(scores, list(CELL))
        rng = np.random.default_rng(stable_seed("stem-single-bias", *map(str, key), base_seed=seed))
        for r in bias.to_dict("records"):
            attribute = str(r["attribute"])
            sub = varied[varied["varied"].astype(str).eq(attribute)]
            grid = sub.pivot_table(index=attribute, columns="problem_id", values="y", aggfunc="mean")
            p = np.nan
            if grid.shape[0] >= 2 and grid.shape[1] >= 1:
                mdb = _mdb_of_shuffles(grid.to_numpy(np.float64), rng, n_permutations)
                p = (1 + int(np.count_nonzero(mdb[1:] >= mdb[0] * (1.0 - 1e-9)))) / (1 + n_permutations)
            out.append({**r, "n_problems": int(grid.shape[1]), "p_wordings": p})
    return pd.DataFrame(out)


def _linear_kappa(a: np.ndarray, b: np.ndarray, categories: tuple[int, ...] = LEVELS) -> np.ndarray:
    """Linear-weighted κ of ``a`` against every row of ``b`` (same items; pairs with a NaN or a value outside
    ``categories`` left out), as :func:`counterbench.stats.agreement.cohen_kappa` with ``weights="linear"``:
    κ_w = 1 − observed / expected disagreement, disagreement |i − j| / (k − 1)."""
    k = len(categories)
    lookup = np.asarray(categories, dtype=np.float64)

    def codes(values: np.ndarray) -> np.ndarray:
        index = np.searchsorted(lookup, np.nan_to_num(values, nan=-np.inf))
        index = np.clip(index, 0, k - 1)
        return np.where(lookup[index] == values, index, -1)

    ia, ib = codes(np.asarray(a, dtype=np.float64))[None, :], codes(np.asarray(b, dtype=np.float64))
    keep = (ia >= 0) & (ib >= 0)
    n = keep.sum(axis=1).astype(np.float64)
    count_a = np.stack([(keep & (ia == c)).sum(axis=1) for c in range(k)], axis=1)
    count_b = np.stack([(keep & (ib == c)).sum(axis=1) for c in range(k)], axis=1)
    weight = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]) / max(k - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.einsum("ri,ij,rj->r", count_a, weight, count_b) / n**2
        observed = (np.abs(ia - ib) * keep).sum(axis=1) / max(k - 1, 1) / n
        return np.where((n > 0) & (expected > 0), 1.0 - observed / expected, np.nan)


def kappa_average_table(frame: pd.DataFrame, *, seed: int = 0, alpha: float = ALPHA,
                        n_permutations: int = N_PERMUTATIONS) -> pd.DataFrame:
    """Mean linear-weighted κ per model pair over context × role × dataset, with its null reference.

    The shuffle is of whole profiles of the second model, one shuffle per context shared by every role and
    dataset of it: the profile is the independent unit (a model that answers one student's wording
    consistently does so in both roles and every dataset), so shuffling each cell on its own would break
    that consistency in the null but not in the observed, and understate the null's spread."""
    per_cell = kappa_table(frame)
    if per_cell.empty:
        return pd.DataFrame()
    rows = frame[frame["experiment"].astype(str).eq("main") & frame["task"].astype(str).eq("ranking")]
    out = []
    for pair, cells in per_cell.groupby(["model_1", "model_2"], sort=True):
        m1, m2 = (str(m) for m in pair)
        rng = np.random.default_rng(stable_seed("stem-kappa-average", m1, m2, base_seed=seed))
        null = np.zeros(n_permutations)
        for context, context_cells in cells.groupby("context", sort=True):
            part = rows[rows["context"].astype(str).eq(str(context))]
            profiles = np.sort(part["profile_id"].astype(str).unique())
            order = np.argsort(rng.random((n_permutations, len(profiles))), axis=1)
            for cell in context_cells.to_dict("records"):
                null += _cell_null(part, cell, (m1, m2), profiles, order)
        null /= len(cells)
        mean = float(cells["kappa_linear"].mean())
        extreme = int(np.count_nonzero(np.nan_to_num(null, nan=-np.inf) >= mean - 1e-12))
        testable = bool(np.isfinite(mean) and np.isfinite(null).all())  # every cell has answers of both
        out.append({"model_1": m1, "model_2": m2, "n_cells": len(cells), "n": int(cells["n"].sum()),
                    "mean_kappa_linear": mean, "mean_kappa": float(cells["kappa"].mean()),
                    "min_kappa_linear": float(cells["kappa_linear"].min()),
                    "max_kappa_linear": float(cells["kappa_linear"].max()),
                    "null_mean": float(np.nanmean(null)) if np.isfinite(null).any() else np.nan,
                    "p_value": (1 + extreme) / (1 + n_permutations) if testable else np.nan, "testable": testable})
    table = pd.DataFrame(out)
    table["q_value"], table["significant"] = family_marks(table, p_col="p_value", family=(), alpha=alpha,
                                                          testable=table["testable"])
    return table


def _cell_null(part: pd.DataFrame, cell: Mapping[Hashable, object], models: tuple[str, str], profiles: np.ndarray,
               order: np.ndarray) -> np.ndarray:
    """κ_w of one role × dataset cell with the second model's profiles taken in each row of ``order``
    (indices into ``profiles``, the context's profiles; a profile a model did not answer counts as missing)."""
    here = part[part["role"].astype(str).eq(str(cell["role"])) & part["dataset"].astype(str).eq(str(cell["dataset"]))]
    grids = [here[here["model"].astype(str).eq(m)].pivot_table(index="profile_id", columns="subject", values="y",
                                                              aggfunc="first") for m in models]
    subjects = grids[0].columns.intersection(grids[1].columns)
    first, second = (g.reindex(index=profiles, columns=subjects).to_numpy(np.float64) for g in grids)
    return _linear_kappa(first.ravel(), second[order].reshape(len(order), -1))
