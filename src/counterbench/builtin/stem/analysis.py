"""The STEM-explanations study's analyses (paper §3.4–3.5, §4, Appendix D) as pure functions over frames.

:func:`outcome_frame` turns results rows (a store's :func:`~counterbench.run.results.load_results`, or any
frame with the prompt table's columns plus ``model``, ``status``, ``value``, ``response``) into one row
per scored response: ``y`` is the chosen level C ∈ 1..5 (ranking; the parsed letter mapped back through
``option_<L>``) or the text's MGL (generation). The tables:

- :func:`descriptive` — N, mean, SD, min, max, range, median, quartiles, IQR per cell (Tables 3, 10, 11),
  with ``scored_by`` (readability library, version and maths handling) on the MGL rows;
- :func:`bias_tables` — z-normalised group scores and MAB/MDB per attribute, z and raw units (Table 4);
- :func:`pairwise_tables` — every pair of levels, Welch t, Cohen's d, at the response level (as the
  paper: BH over the whole table) and at the profile level (profile means over problems, no
  pseudo-replication: the marks, BH within each model, at least :data:`MIN_PROFILES` profiles a side),
  side by side (Tables 7, 8);
- :func:`shap_tables` — exact linear SHAP on one-hot attributes: mean |SHAP| per attribute and level, and
  beeswarm points (Figures 3, 4), for the cells whose fit is identified; :func:`shap_refusals` lists the
  others with the reason (design rank below the parameters, too few profiles, an outcome that does not
  vary);
- :func:`kappa_table` — Cohen's κ and linear-weighted κ between every pair of models on the ranking task,
  per context × role × dataset, with observed and expected agreement (Table 9).

A *cell* is model × task × context × dataset × role (:data:`CELL`); generation prompts use the teacher
framing and have role ``teacher``. Only the ``main`` experiment's rows enter these tables;
:mod:`.analysis_designs` has the progressive, single-attribute, extreme-profile and position tables.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from counterbench.builtin.stem.bias_null import with_null
from counterbench.builtin.stem.conventions import CONVENTIONS, paper_bias, paper_group_scores
from counterbench.builtin.stem.design import LETTERS, TRUNCATED_MODES
from counterbench.builtin.stem.options import SHAP_METHODS
from counterbench.builtin.stem.profiles import attribute_columns, get_context
from counterbench.outcomes.readability import provenance, score_texts
from counterbench.stats.agreement import cohen_kappa, interpret_kappa
from counterbench.stats.inference import ALPHA, family_marks
from counterbench.stats.multiple_testing import benjamini_hochberg
from counterbench.stats.seeding import stable_seed
from counterbench.stats.shap_linear import linear_shap, one_hot, shap_summary, tree_shap
from counterbench.stats.swap_test import LabelPermutationTest
from counterbench.stats.welch import pairwise_welch
from counterbench.stats.zbias import group_scores, mab_mdb

CELL = ("model", "task", "context", "dataset", "role")
LEVELS = (1, 2, 3, 4, 5)
ATTRIBUTE_COLUMNS = tuple(attribute_columns(["india", "usa"]))
#: fewest profiles on each side of a profile-level comparison before it is tested (docs/stem.md gives the
#: simulation that chose it: below it the quick preset's Welch tests gave false stars)
MIN_PROFILES = 3


def context_attributes(context: str) -> dict[str, tuple[str, ...]]:
    """Attribute -> levels (paper order) of one context."""
    return {a.name: a.levels for a in get_context(context).attributes}


def outcome_frame(results: pd.DataFrame, math: str = "raw", truncated: str = "score") -> pd.DataFrame:
    """One row per response with ``y`` (chosen level or MGL), ``letter`` and ``truncated`` (see module docstring).

    Ranking: ``value`` is the chosen option's index (``choice`` outcome); rows not ``ok`` have ``y`` NaN.
    Generation: MGL is taken from ``value`` when the row was scored as ``mgl`` under raw maths handling,
    else recomputed from ``response`` (cached per text). An explanation cut at the token limit (status
    ``truncated``) is scored on the text received, as the paper does, when ``truncated`` is ``score`` (the
    default; its row has ``truncated`` True), and left out (``y`` NaN) when it is ``drop``; other rows not
    ``ok`` have ``y`` NaN.
    """
    if truncated not in TRUNCATED_MODES:
        raise ValueError(f"truncated must be one of {TRUNCATED_MODES}, got {truncated!r}")
    frame = results.drop(columns=[c for c in ("system", "user") if c in results.columns])
    status = frame["status"].astype(str).to_numpy()
    status_ok = status == "ok"
    value = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype=np.float64)
    task = frame["task"].astype(str).to_numpy()
    y = np.full(len(frame), np.nan)
    letters = np.full(len(frame), None, dtype=object)
    rank = (task == "ranking") & status_ok & ~np.isnan(value)
    if rank.any():
        index = value[rank].astype(np.int64)
        valid = (index >= 0) & (index < len(LETTERS))
        chosen = np.where(valid, np.asarray(LETTERS, dtype=object)[np.clip(index, 0, len(LETTERS) - 1)], None)
        letters[rank] = chosen
        sub = frame.loc[rank]
        levels = np.full(int(rank.sum()), np.nan)
        for x in LETTERS:
            hit = np.asarray(chosen == x, dtype=bool)
            if hit.any():
                levels[hit] = pd.to_numeric(sub[f"option_{x}"], errors="coerce").to_numpy(dtype=np.float64)[hit]
        y[rank] = levels
    cut = (task == "generation") & (status == "truncated")
    if "response" in frame.columns:
        cut &= frame["response"].map(lambda r: isinstance(r, str) and bool(r.strip())).to_numpy(dtype=bool)
    else:
        cut &= False
    gen = (task == "generation") & (status_ok | (cut & (truncated == "score")))
    if gen.any():
        unit = frame["unit"].astype(str).to_numpy() if "unit" in frame.columns else np.full(len(frame), "")
        stored = gen & status_ok & (unit == "mgl") & ~np.isnan(value) & bool(math == "raw")
        y[stored] = value[stored]
        redo = gen & ~stored
        if redo.any():
            y[redo] = score_texts(frame.loc[redo, "response"].tolist(), math)["mgl"].to_numpy()
    frame["letter"] = letters
    frame["y"] = y
    frame["truncated"] = cut
    frame["metric"] = np.where(task == "ranking", "MCV", "MGL")
    frame["scored_by"] = np.where(task == "ranking", "", provenance(math))
    keep = [c for c in (*CELL, "prompt_id", "profile_id", "experiment", "step", "varied", "subject", "problem_id",
                        "characteristic", "status", "truncated", "letter", "y", "metric", "scored_by",
                        *ATTRIBUTE_COLUMNS)
            if c in frame.columns]
    return frame[keep].reset_index(drop=True)


def _main(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["experiment"].astype(str).eq("main")] if "experiment" in frame.columns else frame


def descriptive(frame: pd.DataFrame, cell: Sequence[str] = CELL) -> pd.DataFrame:
    """Per cell: N, mean, SD, min, max, range, median, Q25, Q75, IQR of ``y`` (main experiment, NaN dropped)."""
    rows = _main(frame)
    rows = rows[rows["y"].notna()]
    grouped = rows.groupby(list(cell), sort=True, observed=True)["y"]
    out = grouped.agg(N="count", mean="mean", std="std", min="min", max="max", median="median",
                      q25=lambda s: s.quantile(0.25), q75=lambda s: s.quantile(0.75)).reset_index()
    scored_by = rows.groupby(list(cell), sort=True, observed=True)["scored_by"].first().reset_index(drop=True)
    out["range"] = out["max"] - out["min"]
    out["iqr"] = out["q75"] - out["q25"]
    metric = out["task"].map({"ranking": "MCV", "generation": "MGL"})
    out.insert(len(cell), "metric", metric)
    out["scored_by"] = scored_by.to_numpy()
    return out[[*cell, "metric", "N", "mean", "std", "min", "max", "range", "median", "q25", "q75", "iqr",
                "scored_by"]]


def _by_context(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame, dict[str, tuple[str, ...]]]]:
    out = []
    for context, part in frame.groupby("context", sort=True):
        out.append((str(context), part, context_attributes(str(context))))
    return out


def bias_tables(frame: pd.DataFrame, cell: Sequence[str] = CELL, convention: str = "counterbench", *,
                seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(group scores per level, MAB/MDB per attribute), sorted by MAB (z) descending (Table 4).

    ``convention``: ``counterbench`` (z within the cell, MAB around the unweighted mean of the levels) or
    ``paper`` (z within cell × subject, Eq. 3–4, Table 4's extreme group): :mod:`.conventions`. Each row
    also gets its null reference — MAB with the levels shuffled over profiles, its p and mark
    (:mod:`.bias_null`)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    rows = _main(frame)
    scores, bias = [], []
    for _, part, attrs in _by_context(rows):
        if convention == "paper":
            s = paper_group_scores(part, list(cell), attrs)
            scores.append(s)
            bias.append(paper_bias(s, list(cell)))
            continue
        s = group_scores(part, list(cell), attrs)
        scores.append(s)
        bias.append(mab_mdb(s, list(cell)))
    if not scores:
        return pd.DataFrame(), pd.DataFrame()
    table = pd.concat(bias, ignore_index=True).sort_values("mab_z", ascending=False, kind="mergesort")
    table = with_null(rows, table.reset_index(drop=True), cell, context_attributes, convention=convention, seed=seed)
    return pd.concat(scores, ignore_index=True), table


def profile_means(frame: pd.DataFrame, cell: Sequence[str] = CELL) -> pd.DataFrame:
    """One row per cell × profile: the mean of ``y`` over its problems (the profile-level unit)."""
    rows = _main(frame)
    rows = rows[rows["y"].notna()]
    attrs = [c for c in dict.fromkeys(a for ctx in rows["context"].unique() for a in context_attributes(str(ctx)))
             if c in rows.columns]
    keys = [*cell, "profile_id"]
    grouped = rows.groupby(keys, sort=False, observed=True)
    out = grouped[[*attrs, "characteristic"]].first()
    out["y"] = grouped["y"].mean()
    out["n_problems"] = grouped["y"].count()
    return out.reset_index()


def _permutation_pvalues(profiles: pd.DataFrame, table: pd.DataFrame, cell: list[str], testable: np.ndarray,
                         seed: int) -> np.ndarray:
    """The studentized permutation p of every testable profile-level row (NaN elsewhere)."""
    tester = LabelPermutationTest(stable_seed("stem-pairwise", base_seed=seed))
    values: dict[tuple[object, ...], np.ndarray] = {}
    for attribute in table["attribute"].unique():
        if attribute not in profiles.columns:
            continue
        for key, part in profiles.groupby([*cell, attribute], sort=False, observed=True):
            values[(*key[:-1], attribute, key[-1])] = part["y"].to_numpy(np.float64)
    out = np.full(len(table), np.nan)
    cells = table[cell].to_numpy(dtype=object)
    attributes, level_a, level_b = (table[c].to_numpy(dtype=object) for c in ("attribute", "level_a", "level_b"))
    for i in np.flatnonzero(testable):
        head = tuple(cells[i])
        a = values.get((*head, attributes[i], level_a[i]))
        b = values.get((*head, attributes[i], level_b[i]))
        if a is not None and b is not None:
            out[i] = tester.pvalue(a, b)
    return out


def pairwise_tables(frame: pd.DataFrame, cell: Sequence[str] = CELL, alpha: float = ALPHA, *,
                    seed: int = 0) -> pd.DataFrame:
    """Response-level (the paper's) and profile-level pairwise tests side by side.

    Response level (columns ``*_response``): every answer a unit, BH over the whole table — the paper's
    method, kept as a labelled column; a profile's answers share its wording, so this level is
    anti-conservative (``docs/stem.md`` gives the simulation). Profile level (``*_profile``; the marks):
    each profile's mean over its problems is one unit; Welch's t with its t-distribution ``p_profile``
    and, for the mark, its studentized permutation p ``p_perm_profile``
    (:class:`~counterbench.stats.swap_test.LabelPermutationTest`: Welch's p has too light a far tail with
    few profiles and discrete answers); a comparison is ``testable_profile`` with at least
    :data:`MIN_PROFILES` profiles on each side, and ``significant_profile`` when its BH q
    (``p_fdr_profile``) ≤ α among its model's testable rows (the family: one model's pairs of levels of
    every attribute, task, context, dataset and role; :func:`counterbench.stats.inference.family_marks`).
    """
    rows = _main(frame)
    levels = {"response": rows, "profile": profile_means(rows, cell)}
    tables = {}
    for unit, data in levels.items():
        parts = [pairwise_welch(part, list(cell), attrs, "y", alpha=np.inf) for _, part, attrs in _by_context(data)]
        tables[unit] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    keys = [*cell, "attribute", "level_a", "level_b"]
    if tables["response"].empty:
        return pd.DataFrame()
    keep = ["n_a", "n_b", "mean_a", "mean_b", "diff", "t", "df", "p", "p_fdr", "d", "significant"]
    renamed = []
    for unit, table in tables.items():
        if unit == "response":
            adjusted, reject = benjamini_hochberg(table["p"].to_numpy(dtype=np.float64), alpha)
            table = table.assign(p_fdr=adjusted, significant=reject)
            columns = keep
        else:
            testable = (table["n_a"].to_numpy() >= MIN_PROFILES) & (table["n_b"].to_numpy() >= MIN_PROFILES)
            table = table.assign(p_perm=_permutation_pvalues(data, table, list(cell), testable, seed))
            q, marks = family_marks(table, p_col="p_perm", family=("model",), testable=testable, alpha=alpha)
            table = table.assign(p_fdr=q, significant=marks, testable=testable)
            columns = [*keep, "p_perm", "testable"]
        renamed.append(table[[*keys, *columns]].rename(columns={c: f"{c}_{unit}" for c in columns}))
    out = renamed[0].merge(renamed[1], on=keys, how="left").reset_index(drop=True)
    out["testable_profile"] = out["testable_profile"].astype("boolean").fillna(False).astype(bool)
    out["significant_profile"] = out["significant_profile"].astype("boolean").fillna(False).astype(bool)
    return out


def shap_tables(frame: pd.DataFrame, cell: Sequence[str] = CELL, beeswarm_rows: int = 400,
                seed: int = 0, method: str = "linear") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(mean |SHAP| per attribute and level per cell, beeswarm points: a seeded sample of rows per cell).

    ``method``: ``linear`` — exact SHAP of a linear model; ``tree`` — TreeSHAP of a gradient-boosted tree
    (:func:`counterbench.stats.shap_linear.tree_shap`, seeded; needs the ``shap`` extra). Either way a cell
    is attributed only when :func:`shap_identification` allows it; the summary's ``method`` names it."""
    if method not in SHAP_METHODS:
        raise ValueError(f"method must be one of {SHAP_METHODS}, got {method!r}")
    rows = _main(frame)
    rows = rows[rows["y"].notna()]
    summaries, points = [], []
    for key, part in rows.groupby(list(cell), sort=True, observed=True):
        attrs = list(context_attributes(str(part["context"].iloc[0])))
        if shap_identification(part, attrs)["reason"]:
            continue  # refused: :func:`shap_refusals` says why
        result = linear_shap(part, attrs, "y") if method == "linear" else tree_shap(part, attrs, "y", seed=seed)
        summary = shap_summary(result).assign(method=result.method)
        for col, val in zip(cell, key, strict=True):
            summary[col] = str(val)
        summaries.append(summary)
        by_attr = result.by_attribute()
        take = min(beeswarm_rows, len(by_attr))
        pick = np.sort(np.random.default_rng(seed).choice(len(by_attr), size=take, replace=False))
        chosen = by_attr.iloc[pick]
        levels = part.loc[chosen.index, list(chosen.columns)]
        long = pd.DataFrame({"attribute": np.repeat(chosen.columns.to_numpy(), take),
                             "level": levels.to_numpy().T.ravel(), "shap": chosen.to_numpy().T.ravel()})
        for col, val in zip(cell, key, strict=True):
            long[col] = str(val)
        points.append(long)
    if not summaries:
        return pd.DataFrame(), pd.DataFrame()
    first = list(cell)
    summary = pd.concat(summaries, ignore_index=True)
    beeswarm = pd.concat(points, ignore_index=True)
    return (summary[[*first, *[c for c in summary.columns if c not in first]]],
            beeswarm[[*first, "attribute", "level", "shap"]])


def shap_identification(part: pd.DataFrame, attributes: Sequence[str]) -> dict[str, object]:
    """Whether one cell's linear SHAP is identified: ``reason`` empty when it is, else why not.

    The linear model has one intercept and, per attribute, one effect per level present beyond the
    first: ``parameters``. Its SHAP values are unique only when the one-hot design (with the intercept)
    has that ``rank``; otherwise two exact fits of the same data give different attributions (the quick
    preset's 8 profiles give rank 8 against 17–19 parameters). The design is per response, but all of a
    profile's responses share its row, so the rank is at most the number of profiles; at least two
    profiles more than parameters are asked for, so the fit has residual degrees of freedom. An outcome
    that does not vary has nothing to attribute."""
    x, _ = one_hot(part, attributes)
    design = np.column_stack([np.ones(len(x)), x.to_numpy()])
    parameters = 1 + sum(max(part[a].fillna("").astype(str).nunique() - 1, 0) for a in attributes)
    distinct = np.unique(design, axis=0) if len(design) else design
    rank = int(np.linalg.matrix_rank(distinct)) if len(distinct) else 0
    profiles = int(part["profile_id"].nunique()) if "profile_id" in part.columns else len(part)
    y = part["y"].to_numpy(np.float64)
    reason = ""
    if len(y) < 2 or float(np.nanstd(y)) == 0.0:
        reason = "the outcome does not vary in this cell: nothing to attribute"
    elif rank < parameters:
        reason = (f"not identified: the one-hot design has rank {rank} for {parameters} parameters "
                  f"({profiles} profiles), so different exact fits give different SHAP values")
    elif profiles < parameters + 2:
        reason = f"too few profiles ({profiles}) for {parameters} parameters (need at least {parameters + 2})"
    return {"n": len(part), "n_profiles": profiles, "parameters": parameters, "rank": rank, "reason": reason}


def shap_refusals(frame: pd.DataFrame, cell: Sequence[str] = CELL) -> pd.DataFrame:
    """Cells whose SHAP is refused (see :func:`shap_identification`), with the reason; empty when none is."""
    rows = _main(frame)
    rows = rows[rows["y"].notna()]
    out = []
    for key, part in rows.groupby(list(cell), sort=True, observed=True):
        check = shap_identification(part, list(context_attributes(str(part["context"].iloc[0]))))
        if check["reason"]:
            out.append({**dict(zip(cell, (str(k) for k in key), strict=True)), **check})
    return pd.DataFrame(out)


def kappa_table(frame: pd.DataFrame, by: Sequence[str] = ("context", "role", "dataset")) -> pd.DataFrame:
    """κ and linear-weighted κ between every two models on the ranking task's chosen levels (Table 9)."""
    rows = _main(frame)
    rows = rows[rows["task"].astype(str).eq("ranking")]
    models = sorted(rows["model"].astype(str).unique())
    out = []
    for key, part in rows.groupby(list(by), sort=True, observed=True):
        wide = part.pivot_table(index="prompt_id", columns="model", values="y", aggfunc="first")
        for m1, m2 in itertools.combinations(models, 2):
            if m1 not in wide.columns or m2 not in wide.columns:
                continue
            plain = cohen_kappa(wide[m1], wide[m2], categories=LEVELS)
            weighted = cohen_kappa(wide[m1], wide[m2], weights="linear", categories=LEVELS)
            out.append({**dict(zip(by, key, strict=True)), "model_1": m1, "model_2": m2, "n": plain.n,
                        "kappa": plain.kappa, "kappa_linear": weighted.kappa, "interpretation":
                        interpret_kappa(weighted.kappa), "observed": plain.observed, "expected": plain.expected})
    return pd.DataFrame(out)


def attributes_of(contexts: Mapping[str, object] | Sequence[str]) -> dict[str, dict[str, tuple[str, ...]]]:
    """Context -> its attributes and levels (for report wording)."""
    return {str(c): context_attributes(str(c)) for c in contexts}
