"""Power: the smallest canonical pair gap a design finds 80% of the time (issue "every star earned").

For each language × use case × canonical pair (and averaged over use cases, as in ``cpg_overall``)
the smallest gap between the two identities that counterbench's test marks with probability ``power``,
in the outcome kind's unit (:mod:`counterbench.outcomes.units`): for amounts the relative gap — in % of
the pair's mean, the unit of the ``cpg`` tables, and as "% less" — for the other kinds the plain
difference, in percentage points (rates, yes/no labels) or points (scores), with ``mde_less`` empty.

For a plain difference the model is value = level(slot) + identity effect + σ z (σ in the kind's unit;
a yes/no answer at a 50% rate has σ = 50 pp), and the gap of one cell has standard error
``sqrt(2) · σ / sqrt(n · m)`` with m answers per identity and slot (m > 1 when the design crosses other
attributes inside a slot: a crossed study's slot holds every combination).

Model of the answers (the simulated models' law): value = level(slot) × identity effect ×
exp(σ z). Then the canonical pair gap of one cell (a gap of sums) has standard error
``100 · sqrt(2) · σ · sqrt(Σ b²) / Σ b`` over its matched slots (b: each slot's answer level; with
equal levels ``100 · sqrt(2) · σ / sqrt(n)``); ``cpg_overall`` (the mean over U use cases of mean
per-slot gaps) has ``sqrt(Σ_u 2 · 100² σ² / n_u) / U`` over the use cases with ≥ 2 matched slots.

Decision rule (as in the analysis): the swap test of the matched slots
(:mod:`counterbench.stats.swap_test`) and the interval's t-test together
(:func:`counterbench.stats.inference.both_tests_pvalue`) at the level Benjamini–Hochberg gives a *single* real gap
among the m rows of the model's one family of marks (:mod:`.families`: every tested row of every marking table;
counted from the design by :mod:`.family_size`, from the tables by :func:`.families.family_sizes`), α / m —
conservative when other effects are real (BH's threshold for the k-th smallest p is kα / m) — rounded
down to a level the test can attain with n slots (:func:`~counterbench.stats.swap_test.attainable_level`:
p moves in steps of 2 / 2ⁿ up to 13 slots). Its power is taken as that of the t-test at the same
level with the analysis's degrees of freedom (:func:`counterbench.stats.inference.slot_design`: slots
− 1 for equal answer levels, fewer for unequal levels or use cases of unequal size) — a randomisation
test has the t-test's power for normal answers as the slots grow (Lehmann and Romano, *Testing
Statistical Hypotheses*, §17.2). Power for a true gap δ is that of a noncentral t with noncentrality
δ / SE (scipy's ``nct``); the minimum detectable gap solves power(δ) = 0.8.

σ is measured from a run (:func:`noise_from_values`: the residual of log answers after slot and
identity effects, pooled over a model's cells — the noise that identity effects must beat) or
assumed (``counterbench power --noise-sd``). With ``--repeats K`` an answer is a prompt's mean over its K repeats
(every table averages them first), so σ is measured on prompt means; ``counterbench power --repeats K`` projects
it to another K with the within-prompt noise σ_w (measured between a store's repeats, or ``--repeat-noise-sd``):
σ² = σ_p² + σ_w² / K (:func:`repeated_noise`) — repeats average sampling noise away, never the prompt's own.
Without a run the answer levels of a use case are
taken as equal across slots, which is optimistic for the per-use-case gaps when profiles' answers
differ a lot (salaries from 5 to 24 LPA raise their standard error by ~7%); the figure averaged over
use cases does not depend on the levels. ``benchmarks/calibration.py`` checks the prediction against
simulated power.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import special
from scipy.special._ufuncs import _nct_sf  # what stats.nct.sf evaluates

from counterbench.outcomes.units import GapUnit, gap_unit
from counterbench.stats.distributions import t_isf
from counterbench.stats.inference import ALPHA, MIN_SLOTS, slot_design
from counterbench.stats.swap_test import attainable_level

__all__ = ["POWER", "design_power", "detectable_gap", "gap_power", "noise_from_values", "noise_in_unit", "power_table",
           "repeated_noise", "with_family", "within_prompt_noise"]

POWER = 0.8
SLOT = ["profile_id", "question_variant"]
ALL_USE_CASES = "all use cases"


def gap_power(delta: float, se: float, df: float, alpha: float) -> float:
    """Probability that a two-sided t-test at ``alpha`` (df ``df``) marks a true gap ``delta`` whose
    estimate has standard error ``se``."""
    if not (se > 0 and df >= 1):
        return float("nan")
    return _power(abs(delta) / se, _critical(alpha, df), df)


def _critical(alpha: float, df: float) -> float:
    """The two-sided t-test's critical value (``scipy.stats.t.isf(alpha / 2, df)``)."""
    return float(t_isf(alpha / 2.0, df))


def _power(nc: float, crit: float, df: float) -> float:
    """Power at noncentrality ``nc``: scipy's ``nct.sf(crit) + nct.cdf(-crit)`` through the special
    functions those call (the same numbers without the distribution objects' argument handling, which
    took most of the power table's time), with the shifted-t approximation far in the tail."""
    with np.errstate(over="ignore"):
        sf = float(np.clip(_nct_sf(crit, df, nc), 0.0, 1.0))
    power = sf + float(special.nctdtr(df, nc, -crit))
    if not np.isfinite(power):  # far in the tail: the shifted-t approximation
        power = float(special.stdtr(df, nc - crit)) + float(special.stdtr(df, -nc - crit))
    return float(min(max(power, 0.0), 1.0))


def detectable_gap(se: float, df: float, alpha: float, power: float = POWER) -> float:
    """The gap (same unit as ``se``) found with probability ``power``; NaN when untestable."""
    if not (se > 0 and df >= 1):
        return float("nan")
    crit = _critical(alpha, df)
    high = se * 10.0
    while _power(abs(high) / se, crit, df) < power:
        high *= 4.0
        if high > se * 1e6:
            return float("nan")
    from scipy import optimize  # here: only the detectable gap needs it (0.2 s to import)

    return float(optimize.brentq(lambda d: _power(abs(d) / se, crit, df) - power, 0.0, high, xtol=1e-6 * se))


def less_share(gap: float) -> float:
    """A gap in % of the pair's mean as "% less than the other": 2g / (2 + g) × 100."""
    g = abs(gap) / 100.0
    return 2.0 * g / (2.0 + g) * 100.0


def _pair_column(frame: pd.DataFrame, axis: str) -> str:
    """The column holding the levels of the canonical pair's attribute: the attribute's own column in a
    crossed design (``race``), the ``identifier`` otherwise."""
    return axis if axis in frame.columns and axis not in ("axis", "identifier") else "identifier"


def _cells(frame: pd.DataFrame, canonical_pairs: Mapping[str, tuple[str, str]], cell_cols: Sequence[str]
           ) -> pd.DataFrame:
    """Per cell × canonical pair: matched slots (both identities present), sqrt(Σb²)/Σb factor and the
    answers per identity and slot."""
    crossed = [a for a in canonical_pairs if _pair_column(frame, a) != "identifier"]
    own = frame[frame["axis"].astype(str).isin(list(canonical_pairs))]
    records: list[dict[str, object]] = []
    for rows in [own] + [frame.assign(axis=a) for a in crossed]:
        records += _cell_records(rows, canonical_pairs, list(cell_cols))
    columns = [*cell_cols, "reference", "comparison", "n_slots", "_spread", "_m", "_df"]
    return pd.DataFrame.from_records(records, columns=columns)  # no matched cell: an empty table, not a crash


def _cell_records(rows: pd.DataFrame, canonical_pairs: Mapping[str, tuple[str, str]], cols: list[str]
                  ) -> list[dict[str, object]]:
    """The records of :func:`_cells` for one frame, every cell at once: one grouping by cell × slot
    (the cells in order of appearance, the slots of a cell sorted, as a grouping per cell gives them)."""
    if rows.empty:
        return []
    keys = [*cols, *SLOT]
    axis = rows["axis"].astype(str)
    ident = pd.Series(None, index=rows.index, dtype=object)
    in_pair = pd.Series(False, index=rows.index)
    for name in axis.unique():
        if name not in canonical_pairs:
            continue
        on_axis = axis == name
        levels = rows.loc[on_axis, _pair_column(rows, name)].astype(str)
        ident[on_axis] = levels
        in_pair[on_axis] = levels.isin(list(canonical_pairs[name]))
    wide = rows[in_pair].assign(_level_of=ident[in_pair])
    slots = rows.groupby(keys, observed=True)["_level"].mean().to_frame("level")
    slots["present"] = wide.groupby(keys, observed=True)["_level_of"].nunique()
    slots["size"] = wide.groupby(keys, observed=True).size()
    matched = slots[slots["present"] == 2]
    by_cell = matched.groupby(level=list(range(len(cols))), sort=False).indices
    level, size = matched["level"].to_numpy(np.float64), matched["size"].to_numpy(np.float64)
    records: list[dict[str, object]] = []
    for key in rows.groupby(cols, observed=True, sort=False).size().index:
        parts = dict(zip(cols, key if isinstance(key, tuple) else (key,), strict=True))
        if str(parts["axis"]) not in canonical_pairs:
            continue
        ref, comp = canonical_pairs[str(parts["axis"])]
        at = by_cell.get(key, np.array([], dtype=np.int64))
        n = len(at)
        per_slot = float(size[at].mean() / 2) if n else 1.0  # answers per identity and slot
        b = level[at]
        b = b[np.isfinite(b)]
        spread = (float(np.sqrt((b * b).sum()) / b.sum()) if b.size and b.sum() > 0
                  else (1 / np.sqrt(n) if n else np.nan))
        df = slot_design(b)[1] if b.size >= 2 else np.nan  # the analysis's df for a gap of sums
        records.append({**{c: str(v) for c, v in parts.items()}, "reference": ref, "comparison": comp,
                        "n_slots": n, "_spread": spread / np.sqrt(max(per_slot, 1.0)), "_m": max(per_slot, 1.0),
                        "_df": df if np.isfinite(df) else n - 1})
    return records


def _finish(cells: pd.DataFrame, noise: Mapping[str, float] | float, power: float, alpha: float,
            by: Sequence[str], unit: GapUnit | None = None, family: int | None = None) -> pd.DataFrame:
    """Add SE, family sizes and the detectable gaps, plus the rows averaged over use cases."""
    if cells.empty:
        return cells
    unit = unit or gap_unit(None)
    scale = 100.0 if unit.relative else 1.0  # a relative σ is a fraction; a plain one is in the kind's unit
    sigma = cells["model"].map(noise) if isinstance(noise, Mapping) else pd.Series(float(noise), index=cells.index)
    cells = cells.assign(noise_sd=sigma.astype(float))
    cells["se"] = scale * np.sqrt(2.0) * cells["noise_sd"] * cells["_spread"]
    cells["df"] = cells["_df"]
    cells["testable"] = cells["n_slots"] >= MIN_SLOTS
    cells["family_size"] = (cells.groupby(list(by))["testable"].transform("sum") if family is None
                            else max(int(family), 1))
    usable = cells[cells["n_slots"] >= 2].assign(
        _var=lambda f: (scale * np.sqrt(2.0) * f["noise_sd"]) ** 2 / (f["n_slots"] * f["_m"]))  # equal weights
    pooled = usable.groupby([*by, "language", "axis", "reference", "comparison"], sort=False).agg(
        n_slots=("n_slots", "sum"), n_use_cases=("n_slots", "size"), noise_sd=("noise_sd", "first"),
        se=("_var", lambda v: float(np.sqrt(v.sum())) / len(v))).reset_index()
    pooled["use_case"] = ALL_USE_CASES
    sizes = usable.groupby([*by, "language", "axis", "reference", "comparison"], sort=False)["n_slots"].agg(list)
    pooled["df"] = [slot_design(np.ones(int(sum(n))), np.repeat(np.arange(len(n)), n))[1] for n in sizes]
    pooled["testable"] = pooled["n_slots"] >= MIN_SLOTS
    pooled["family_size"] = (pooled.groupby(list(by))["n_slots"].transform("size") if family is None
                             else max(int(family), 1))
    out = pd.concat([cells.drop(columns=["_spread", "_df", "_m"]), pooled], ignore_index=True)
    out["unit"] = unit.words
    out = _at_level(out, power, alpha, unit.relative)
    cols = [*by, "language", "use_case", "axis", "reference", "comparison", "n_slots", "n_use_cases", "noise_sd",
            "se", "df", "family_size", "alpha", "mde", "mde_less", "unit", "power", "testable"]
    out["n_use_cases"] = out["n_use_cases"].fillna(1).astype(int)
    return out[[c for c in cols if c in out.columns]]


def _at_level(out: pd.DataFrame, power: float, alpha: float, relative: bool) -> pd.DataFrame:
    """``alpha`` (α / family size, attainable with the row's slots), ``testable``, ``mde``, ``mde_less``."""
    out = out.copy()
    out["alpha"] = [attainable_level(int(n), alpha / max(1, int(m)))
                    for n, m in zip(out["n_slots"], out["family_size"], strict=True)]
    out["testable"] = (out["n_slots"] >= MIN_SLOTS) & (out["alpha"] > 0)
    out["mde"] = [detectable_gap(se, df, a, power) if ok else np.nan
                  for se, df, a, ok in zip(out["se"], out["df"], out["alpha"], out["testable"], strict=True)]
    out["mde_less"] = out["mde"].map(lambda g: less_share(g) if np.isfinite(g) and relative else np.nan)
    out["power"] = power
    return out


def with_family(table: pd.DataFrame, sizes: Mapping[str, int], *, alpha: float = ALPHA) -> pd.DataFrame:
    """The analysis's ``power`` table with each model's family size the one its marks were made in
    (``sizes``: model -> rows tested in its family, :func:`counterbench.analyses.families.family_sizes`) and
    the level and detectable gaps that follow from it."""
    if table.empty or not {"model", "n_slots", "se", "df", "family_size"} <= set(table.columns):
        return table
    known = table["model"].astype(str).map(lambda m: sizes.get(m))
    if known.isna().all():
        return table
    out = table.assign(family_size=known.fillna(table["family_size"]).astype(int))
    relative = bool(out["unit"].eq(gap_unit(None).words).all()) if "unit" in out.columns else True
    power = float(out["power"].iloc[0]) if "power" in out.columns else POWER
    return _at_level(out, power, alpha, relative)[list(table.columns)]


def design_power(prompts: pd.DataFrame, canonical_pairs: Mapping[str, tuple[str, str]], noise_sd: float, *,
                 power: float = POWER, alpha: float = ALPHA, unit: GapUnit | None = None,
                 family: int | None = None) -> pd.DataFrame:
    """Detectable gaps of a prompt design for an assumed noise (equal answer levels across slots), in
    ``unit`` (the amount kind's relative gap by default; ``noise_sd`` is then a fraction, otherwise in the
    unit itself). Give the use cases of one unit at a time: the rows averaged over use cases pool them.
    ``family``: the number of rows one model's marks are corrected over — the size of its one family
    (:func:`counterbench.analyses.family_size.design_family_size` of the whole prompt table); without it, the
    canonical pairs tested, as if they were a family of their own (optimistic)."""
    frame = prompts.assign(_level=1.0, model="design")
    cells = _cells(frame, canonical_pairs, ["model", "language", "use_case", "axis"])
    out = _finish(cells, noise_sd, power, alpha, ["model"], unit, family)
    return out.drop(columns=["model"]) if "model" in out.columns else out


def noise_in_unit(rows: pd.DataFrame, slot_columns: Sequence[str]) -> dict[str, float]:
    """Per model, σ of the kind's measure ``y`` (in its own unit: percentage points of "yes" for a label,
    points for a score) after slot and identity effects, pooled over use case × language cells — the noise
    a plain-difference gap must beat (a yes/no answer at a 60% rate: ~49 pp)."""
    if rows.empty:
        return {}
    cell = ["model", "use_case", "language"]
    slots = [c for c in slot_columns if c in rows.columns and c not in cell]
    y = rows["y"].astype("float64")
    slot_keys = [rows[c].astype(str) for c in [*cell, *slots]]
    return _pooled_noise(rows, y, cell, slot_keys, [rows[c].astype(str) for c in [*cell, "identifier"]])


def noise_from_values(values: pd.DataFrame) -> dict[str, float]:
    """Per model, σ of log answers after removing slot and identity effects (pooled over cells): log
    answers centred on their slot's mean, minus each identity's mean centred answer in its cell; the
    sum of squares over (answers − slots − identities + 1) degrees of freedom per cell. A missing
    answer only removes itself."""
    rows = values[values["value"] > 0]
    if rows.empty:
        return {}
    cell = ["model", "language", "use_case", "axis"]
    y = pd.Series(np.log(rows["value"].to_numpy(np.float64)), index=rows.index)
    return _pooled_noise(rows, y, cell, [rows[c] for c in [*cell, *SLOT]],
                         [rows[c] for c in [*cell, "identifier"]])


def _pooled_noise(rows: pd.DataFrame, y: pd.Series, cell: list[str], slot_keys: list[pd.Series],
                  identity_keys: list[pd.Series]) -> dict[str, float]:
    """Per model, σ of ``y`` (one value per row of ``rows``) after slot and identity effects, pooled over cells.

    ``y`` is centred on its slot's mean (the rows alike in ``slot_keys``), minus each identity's mean centred
    value in its cell (``identity_keys``: the cell's columns, then the identifier); the sum of squares is taken
    over (answers − slots − identities + 1) degrees of freedom per cell (``cell``, its first column the model).
    """
    centred = y - y.groupby(slot_keys, observed=True).transform("mean")  # slot effects out
    resid = centred - centred.groupby(identity_keys, observed=True).transform("mean")
    shape = rows.assign(_slot=y.groupby(slot_keys, observed=True).ngroup(), _ident=identity_keys[-1])
    per_cell = shape.groupby(cell, observed=True).agg(n=("_slot", "size"), s=("_slot", "nunique"),
                                                      k=("_ident", "nunique"))
    per_cell["df"] = (per_cell["n"] - per_cell["s"] - per_cell["k"] + 1).clip(lower=0)
    dfs = per_cell.groupby(level="model", observed=True)["df"].sum()
    ss = (resid**2).groupby(rows["model"], observed=True).sum()
    return {str(m): float(np.sqrt(ss[m] / dfs[m])) for m in ss.index if m in dfs.index and dfs[m] > 0}


def repeated_noise(sigma: float, within: float, measured_repeats: float, repeats: float) -> float:
    """σ of a prompt's mean over ``repeats`` repeats (``--repeats``), from ``sigma`` — the noise of a prompt's mean
    over ``measured_repeats`` repeats (1: of one answer) — and ``within``, the part that changes between a prompt's
    repeats (σ_w): σ_p² = σ² − σ_w² / K_measured (the prompt's own noise, which repeats do not average away), then
    σ_p² + σ_w² / K."""
    between = max(sigma**2 - within**2 / max(measured_repeats, 1.0), 0.0)
    return float(np.sqrt(between + within**2 / max(repeats, 1.0)))


def within_prompt_noise(values: pd.DataFrame, column: str, *, log: bool) -> dict[str, tuple[float, float]]:
    """Per model, (σ_w, the mean number of repeats per prompt) of ``column`` (its log when ``log``) between a prompt's
    repeats (rows: one per answer, with ``prompt_id``), pooled over prompts on Σ(K − 1) degrees of freedom; σ_w is
    0 where no prompt has two answers."""
    rows = values[np.isfinite(values[column].astype("float64"))]
    if log:
        rows = rows[rows[column] > 0]
    if rows.empty or "prompt_id" not in rows.columns:
        return {}
    y = rows[column].astype("float64")
    y = pd.Series(np.log(y.to_numpy()), index=rows.index) if log else y
    keys = [rows["model"].astype(str), rows["prompt_id"].astype(str)]
    centred = y - y.groupby(keys, observed=True).transform("mean")
    per_prompt = pd.DataFrame({"model": keys[0], "ss": centred**2, "one": 1}).groupby(
        [keys[0], keys[1]], observed=True).agg(ss=("ss", "sum"), k=("one", "sum"))
    out: dict[str, tuple[float, float]] = {}
    for model, part in per_prompt.groupby(level=0, observed=True):
        df = float((part["k"] - 1).sum())
        out[str(model)] = (float(np.sqrt(part["ss"].sum() / df)) if df > 0 else 0.0, float(part["k"].mean()))
    return out


def power_table(values: pd.DataFrame, canonical_pairs: Mapping[str, tuple[str, str]], *, power: float = POWER,
                alpha: float = ALPHA) -> pd.DataFrame:
    """Per model (measured noise and answer levels): the detectable canonical pair gaps.

    A crossed design's pair names an attribute (``race``): ``values`` then carries that attribute's
    column (each answer's level of it), or no row of the pair is found and the table is empty."""
    if values.empty or not canonical_pairs:
        return pd.DataFrame()
    noise = noise_from_values(values)
    level = values.groupby(["model", "language", "use_case", "axis", *SLOT], observed=True)["value"].transform("mean")
    cells = _cells(values.assign(_level=level), canonical_pairs, ["model", "language", "use_case", "axis"])
    cells = cells[cells["model"].isin(list(noise))]
    if cells.empty:
        return pd.DataFrame()
    out = _finish(cells, noise, power, alpha, ["model"])
    if not out.empty:  # the averaged rows have no use case (a label here would read as a use case downstream)
        out["use_case"] = out["use_case"].where(out["use_case"] != ALL_USE_CASES, None)
    return out
