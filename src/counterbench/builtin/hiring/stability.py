"""Temperature and repeat stability of Score & Shortlist (paper "Small Changes, Big Impact" App. K.2).

The paper repeats the same scoring run n = 1..10 times at T ∈ {0, 0.5, 1.0} and tracks the overall mean
score over the neutral resumes and the average across-resume variance across repeats. Here a
**repeat** is one generation config of a model (``config_fp``: e.g. ``--generation-seed 1``, ``2``, ...
at one ``--temperature``); its answers are matched to the other repeats' by ``prompt_id``.

Input: the parsed score answers (:func:`.analysis.frames`: ``model``, ``rationale``, ``group``,
``score``, ``prompt_id``) with the run's ``temperature``, ``seed`` and ``config_fp`` columns.

Decisions:

- The resume set is the neutral resumes when any were scored (as in the paper), else every resume
  (``resume_set``). Unparseable answers (NaN scores) are left out.
- Repeats are ordered by generation seed (then first appearance). For the first n repeats:
  ``mean_score`` is the mean of every score of the set in them, ``repeat_mean`` the mean of repeat n
  alone, and ``avg_variance`` the mean over resumes of the variance (ddof 1) of a resume's scores
  across those repeats (NaN at n = 1: one repeat has no variance).
- The table exists only when some model × prompt variant × temperature has two repeats or more, or a
  model was scored at two temperatures.

**The primary run.** Every other hiring table uses one run per model × use case, so that repeats and
other temperatures are never pooled into them (:func:`primary_run`): the answers at the study's default
temperature (the run's default, 0; else the lowest temperature answered) and, among those, the first
repeat in the order above (the answers sent without ``--generation-seed``, else the lowest seed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from counterbench.models.base import GenerationConfig

NEEDED = ("temperature", "config_fp", "prompt_id")
#: the temperature of the primary run when it was answered (the run's default)
PRIMARY_TEMPERATURE = GenerationConfig().temperature
COLUMNS = ["model", "rationale", "temperature", "repeats", "resume_set", "resumes", "mean_score", "repeat_mean",
           "avg_variance"]


def _repeat_order(part: pd.DataFrame) -> list[str]:
    """The repeats (``config_fp``) in order: without a generation seed first, then by seed, then as found."""
    first = part.drop_duplicates("config_fp")[["config_fp", "seed"]] if "seed" in part.columns else \
        part.drop_duplicates("config_fp")[["config_fp"]].assign(seed=np.nan)
    seeds = pd.to_numeric(first["seed"], errors="coerce").fillna(-np.inf).to_numpy()
    order = np.lexsort((np.arange(len(first)), seeds))
    return [str(first["config_fp"].iloc[i]) for i in order]


def primary_run(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of each model × use case's primary run (module docstring); ``results`` itself when every
    row is in it (one run, or no ``temperature`` / ``seed`` columns)."""
    if results.empty or any(c not in results.columns for c in ("temperature", "seed")):
        return results
    frame = pd.DataFrame({"model": results["model"].astype(str).to_numpy(),
                          "use_case": results["use_case"].astype(str).to_numpy(),
                          "t": pd.to_numeric(results["temperature"], errors="coerce").to_numpy(np.float64),
                          "s": pd.to_numeric(results["seed"], errors="coerce").to_numpy(np.float64)})
    by = [frame["model"], frame["use_case"]]
    has_default = frame["t"].eq(PRIMARY_TEMPERATURE).groupby(by).transform("any").to_numpy()
    chosen = np.where(has_default, PRIMARY_TEMPERATURE, frame["t"].groupby(by).transform("min").to_numpy())
    at = (frame["t"].to_numpy() == chosen) | (np.isnan(chosen) & frame["t"].isna().to_numpy())
    unseeded = pd.Series(at & frame["s"].isna().to_numpy())
    any_unseeded = unseeded.groupby(by).transform("any").to_numpy()
    first_seed = frame["s"].where(at).groupby(by).transform("min").to_numpy()
    keep = at & np.where(any_unseeded, unseeded.to_numpy(), frame["s"].to_numpy() == first_seed)
    return results if keep.all() else results[keep]


def stability(scores: pd.DataFrame) -> pd.DataFrame:
    """The convergence table (see the module decisions); empty when nothing was repeated."""
    if scores.empty or any(c not in scores.columns for c in NEEDED):
        return pd.DataFrame(columns=COLUMNS)
    valid = scores[pd.to_numeric(scores["score"], errors="coerce").notna()]
    repeated = valid.groupby(["model", "rationale", "temperature"])["config_fp"].nunique()
    temperatures = valid.groupby(["model", "rationale"])["temperature"].nunique()
    if valid.empty or (repeated.max() < 2 and temperatures.max() < 2):
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for (model, rationale, temperature), part in valid.groupby(["model", "rationale", "temperature"], sort=True):
        neutral = part["group"].astype(str).eq("neutral")
        chosen, resume_set = (part[neutral], "neutral") if neutral.any() else (part, "all")
        order = _repeat_order(chosen)
        wide = chosen.pivot_table(index="prompt_id", columns="config_fp", values="score", aggfunc="mean")
        matrix = wide.reindex(columns=order).to_numpy(np.float64)
        for n in range(1, len(order) + 1):
            sub = matrix[:, :n]
            seen = ~np.isnan(sub)
            counts = seen.sum(axis=1)
            spread = [float(np.var(row[mask], ddof=1))
                      for row, mask, k in zip(sub, seen, counts, strict=True) if k >= 2]
            last = sub[seen[:, n - 1], n - 1]
            rows.append({"model": model, "rationale": bool(rationale), "temperature": float(str(temperature)),
                         "repeats": n, "resume_set": resume_set, "resumes": int(np.sum(counts > 0)),
                         "mean_score": float(sub[seen].mean()) if seen.any() else float("nan"),
                         "repeat_mean": float(last.mean()) if len(last) else float("nan"),
                         "avg_variance": float(np.mean(spread)) if spread else float("nan")})
    return pd.DataFrame(rows, columns=COLUMNS)
