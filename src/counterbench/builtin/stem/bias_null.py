"""A null reference for the bias table's MAB: how large it gets on this design with no bias at all.

MAB and MDB always come out above 0 — level means differ by noise — and the fewer profiles a level has,
the larger they get (the quick preset's fair model reaches MAB 0.7 z). So each row of ``stem_bias`` gets
the MAB of the same answers with the attribute's levels shuffled over whole profiles (the independent
unit: a profile's answers share its wording), ``shuffles`` times, within its cell:

- ``mab_null`` — the mean MAB (z) over the shuffles: what no bias gives on this design; ``mdb_null`` the
  same for MDB (z) (descriptive: the mark rests on MAB);
- ``p_value`` — the share of shuffles (with the observed arrangement counted) whose MAB is at least the
  observed; ``q_value`` and ``significant`` — Benjamini–Hochberg within each model over its testable rows
  (:func:`counterbench.stats.inference.family_marks`); ``testable`` — at least two levels and enough
  distinct arrangements of the profiles' levels (:data:`MIN_ARRANGEMENTS`) for a p of 0.05 to be possible.

The z-scores are the bias table's own (:func:`counterbench.stats.zbias.zscore_within`: within the cell, or
within cell × subject under the paper convention); they do not depend on the attribute, so shuffling the
levels over profiles leaves them as they are and only regroups them. The observed MAB recomputed here from
per-profile sums equals the table's ``mab_z`` (tested to 1e-12). Like the pairwise table's test, it asks
whether the attribute's levels differ more than chance *in this sample*: with another attribute planted,
an attribute correlated with it by the sampling can pick some of that up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from counterbench.stats.inference import ALPHA, family_marks
from counterbench.stats.seeding import stable_seed
from counterbench.stats.zbias import zscore_within

#: shuffles of the levels per row
NULL_SHUFFLES = 999
#: fewest distinct arrangements of a row's profiles over its levels before it is tested (2 / α: a p of
#: 0.05 is then reachable with room to spare)
MIN_ARRANGEMENTS = round(2 / ALPHA)
NULL_COLUMNS = ("n_profiles", "mab_null", "mdb_null", "p_value", "q_value", "testable", "significant")


def with_null(frame: pd.DataFrame, bias: pd.DataFrame, cell: Sequence[str],
              attributes_of_context: Callable[[str], Mapping[str, Sequence[str]]], *, convention: str = "counterbench",
              seed: int = 0, shuffles: int = NULL_SHUFFLES) -> pd.DataFrame:
    """``bias`` (the ``stem_bias`` table) with :data:`NULL_COLUMNS` added, from the main experiment's
    response rows ``frame`` (columns ``y``, ``profile_id``, the cell and the attributes);
    ``attributes_of_context`` gives a context's attributes and their levels."""
    if bias.empty:
        return bias.assign(**{c: pd.Series(dtype=object) for c in NULL_COLUMNS})
    cell = list(cell)
    strata = [*cell, "subject"] if convention == "paper" and "subject" in frame.columns else cell
    base = frame.assign(z=zscore_within(frame, strata, "y"))
    base = base[base["y"].notna()]
    rng = np.random.default_rng(stable_seed("stem-bias-null", base_seed=seed))
    found: dict[tuple[object, ...], tuple[int, float, float, float, bool]] = {}
    for key, part in base.groupby(cell, sort=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        context = str(part["context"].iloc[0])
        orders: dict[int, np.ndarray] = {}  # one set of shuffles per number of profiles, shared by the attributes
        for attribute, levels in attributes_of_context(context).items():
            if attribute not in part.columns:
                continue
            sub = part[part[attribute].isin(list(levels))]
            if sub.empty:
                continue
            found[(*key, attribute)] = _row_null(sub, attribute, convention, rng, shuffles, orders)
    keys = bias[[*cell, "attribute"]].to_numpy(dtype=object)
    values = [found.get(tuple(k), (0, math.nan, math.nan, math.nan, False)) for k in keys]
    out = bias.assign(n_profiles=[v[0] for v in values], mab_null=[v[1] for v in values],
                      mdb_null=[v[2] for v in values], p_value=[v[3] for v in values],
                      testable=[v[4] for v in values])
    q, marks = family_marks(out, p_col="p_value", family=("model",), testable=out["testable"].to_numpy(bool))
    return out.assign(q_value=q, significant=marks)


def _row_null(rows: pd.DataFrame, attribute: str, convention: str, rng: np.random.Generator,
              shuffles: int, orders: dict[int, np.ndarray]) -> tuple[int, float, float, float, bool]:
    """(profiles, mean null MAB, mean null MDB, p, testable) of one cell × attribute."""
    labels, zsum, count = profile_sums(rows, attribute)
    n_levels = int(labels.max()) + 1 if len(labels) else 0
    observed = mab_of(labels[None, :], zsum, count, n_levels, convention)[0]
    sizes = np.bincount(labels, minlength=n_levels)
    arrangements = math.lgamma(len(labels) + 1) - sum(math.lgamma(int(s) + 1) for s in sizes)
    testable = n_levels >= 2 and arrangements >= math.log(MIN_ARRANGEMENTS)
    if len(labels) not in orders:
        orders[len(labels)] = np.argsort(rng.random((shuffles, len(labels))), axis=1)
    order = orders[len(labels)]
    means = level_means(labels[order], zsum, count, n_levels)
    null = mab_from_means(means, convention)
    p = (1.0 + float(np.sum(null >= observed - 1e-12))) / (shuffles + 1.0)
    mdb = float((means.max(axis=1) - means.min(axis=1)).mean())
    return len(labels), float(null.mean()), mdb, p, bool(testable)


def profile_sums(rows: pd.DataFrame, attribute: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per profile of ``rows`` (one cell's answers with their ``z``): its level's code, the sum of its z and
    its number of answers."""
    per_profile = rows.groupby("profile_id", sort=False, observed=True).agg(
        z=("z", "sum"), n=("z", "count"), level=(attribute, "first"))
    labels = pd.Categorical(per_profile["level"]).codes.astype(np.int64)
    return labels, per_profile["z"].to_numpy(np.float64), per_profile["n"].to_numpy(np.float64)


def level_means(labels: np.ndarray, zsum: np.ndarray, count: np.ndarray, n_levels: int) -> np.ndarray:
    """Each level's mean z for each row of ``labels`` (shuffles × profiles) -> shuffles × levels."""
    onehot = labels[..., None] == np.arange(n_levels)
    return np.asarray(np.einsum("bpl,p->bl", onehot, zsum) / np.einsum("bpl,p->bl", onehot, count))


def mab_of(labels: np.ndarray, zsum: np.ndarray, count: np.ndarray, n_levels: int, convention: str) -> np.ndarray:
    """MAB (z) for each row of ``labels`` (shuffles × profiles: each profile's level code)."""
    return mab_from_means(level_means(labels, zsum, count, n_levels), convention)


def mab_from_means(means: np.ndarray, convention: str) -> np.ndarray:
    """MAB (z) of each row of level means: around their unweighted mean, or around 0 (``paper``, Eq. 3)."""
    centre = 0.0 if convention == "paper" else means.mean(axis=1, keepdims=True)
    return np.asarray(np.abs(means - centre).mean(axis=1))
