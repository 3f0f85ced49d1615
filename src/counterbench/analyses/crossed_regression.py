"""The crossed designs' regression (``crossed_regression``): all crossed attributes in one model per model ×
kind × language, scenario fixed effects, standard errors clustered by slot (descriptive: never marked beyond
its own family's BH; see :mod:`.outcome_tables`' module notes)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from counterbench.analyses.outcome_tables import CONFIDENCE, _marked, _slot_codes, conform
from counterbench.outcomes import measures_share
from counterbench.stats.distributions import t_isf, t_sf
from counterbench.stats.inference import MIN_SLOTS_INTERVAL
from counterbench.studies.base import Facet

__all__ = ["crossed_regression"]


def _present_reference(facet: Facet, part: pd.DataFrame) -> str:
    """The facet's reference, or — when a sample of combinations left it out of ``part`` — its first level
    that is there (a reference without answers would make every other level's dummy sum to the constant)."""
    seen = set(part[facet.column].astype(str))
    return facet.reference if facet.reference in seen else next((lv for lv in facet.levels if lv in seen),
                                                                  facet.reference)


def crossed_regression(rows: pd.DataFrame, facets: Sequence[Facet], slot_columns: Sequence[str]) -> pd.DataFrame:
    """All crossed attributes in one model per model × kind × language (see module notes)."""
    attrs = [f for f in facets if f.kind == "attribute" and f.column in rows.columns]
    if rows.empty or len(attrs) < 1:
        return conform("crossed_regression", None)

    out: list[dict[str, Any]] = []
    for (model, kind, language), part in rows.groupby(["model", "kind", "language"], sort=False, observed=True):
        scenario = _slot_codes(part, ["use_case", "profile_id", "question_variant"])
        refs = [_present_reference(f, part) for f in attrs]
        design = [pd.get_dummies(pd.Categorical(part[f.column].astype(str), categories=list(f.levels)),
                                 prefix=f.column, prefix_sep="\x1f", dtype=np.float64).drop(
                      columns=f"{f.column}\x1f{ref}") for f, ref in zip(attrs, refs, strict=True)]
        fixed = pd.get_dummies(pd.Categorical(scenario), prefix="scenario", dtype=np.float64)
        x = pd.concat([*(d.set_axis(part.index) for d in design), fixed.set_axis(part.index)], axis=1)
        x = x.loc[:, x.std(axis=0) > 0] if len(x) > 1 else x
        x.insert(0, "const", 1.0)
        if fixed.shape[1] > 1:
            x = x.drop(columns=[c for c in x.columns if c.startswith("scenario")][:1])
        if np.linalg.matrix_rank(x.to_numpy(np.float64)) < x.shape[1]:
            continue  # levels confounded in a sampled design: no estimate for this cell
        groups = _slot_codes(part, slot_columns)
        n_clusters = int(groups.max()) + 1
        y = part["y"].to_numpy(np.float64)
        logit = measures_share(str(kind))
        # only crossed designs pay for statsmodels, and only for the model they fit (statsmodels.api: ~1 s)
        if logit:
            from statsmodels.discrete.discrete_model import Logit as Model
        else:
            from statsmodels.regression.linear_model import OLS as Model
        robust = n_clusters >= MIN_SLOTS_INTERVAL  # fewer clusters: an estimate, no standard error
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitted = Model(y / 100.0 if logit else y, x).fit(
                    **({"disp": 0} if logit else {}),
                    **({"cov_type": "cluster", "use_t": True,
                        "cov_kwds": {"groups": groups, "use_correction": True, "df_correction": True}}
                       if robust else {}))
        except Exception:  # separation or a singular design: no estimate for this cell
            continue
        t_crit = t_isf((1 - CONFIDENCE) / 2, max(n_clusters - 1, 1))
        for f, ref in zip(attrs, refs, strict=True):
            for level in f.levels:
                name = f"{f.column}\x1f{level}"
                if level == ref or name not in fitted.params.index:
                    continue
                est = float(fitted.params[name])
                se = float(fitted.bse[name]) if robust else float("nan")
                p = float(2 * t_sf(abs(est) / se, n_clusters - 1)) if robust and se > 0 else float("nan")
                out.append({"model": str(model), "kind": str(kind), "language": str(language), "attribute": f.name,
                            "level": level, "reference": ref, "estimate": est, "se": se,
                            "ci_low": est - t_crit * se, "ci_high": est + t_crit * se, "p_value": p,
                            "model_type": "logit (log-odds)" if logit else "least squares (outcome units)",
                            "n": len(y), "n_clusters": n_clusters})
    return conform("crossed_regression", _marked(pd.DataFrame(out), "n_clusters"))

