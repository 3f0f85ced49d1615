"""Vectorised outcomes of a simulated model over a STEM prompt table (oracle tests and calibration).

The ``sim:`` backend answers one request at a time with text (a letter, or prose at a grade level).
Calibration needs thousands of simulated runs, so :func:`simulate_outcomes` draws the same
distribution directly as parsed results, from the same preset file (``sim:stem`` by default):

- expected value = the use case's ``default`` (ranking: a level; generation: an MGL), then every
  ``effects`` rule whose ``match`` holds (and ``unless`` does not) in order: ``value · multiply + add``;
- noise: multiplicative log-normal, ``value · exp(noise_sd · z)``;
- ranking: the level is the noisy value rounded and clipped to 1–5, answered as the letter showing it
  (``value`` = the option's index, as the ``choice`` parser stores it); generation: ``value`` is the MGL
  (``unit`` ``mgl``, as the ``text`` parser stores it);
- ``refusal_rate`` / ``malformed_rate`` rows are ``refused`` / ``unparseable`` with no value;
- ``profile_sd`` (calibration only; 0 by default, as the backend): every profile's answers share one more
  multiplicative factor ``exp(profile_sd · z_profile)`` — a model that answers one student's wording
  consistently, so a profile's answers are not independent (the calibration's realistic case).

Draws use a NumPy generator seeded by ``stable_seed("stem-sim", model, seed)``; they match the backend's
distribution, not its per-request draws.

:func:`cut_at_limit` adds what the backend never does: explanations that run past a token limit. Each
generation answer gets a length in tokens, longer for a planted group (and for harder prose); an
answer longer than the limit is stored as a real run stores it — status ``truncated``, no value,
``finish_reason`` ``length`` — with the text received (the first ``limit / length`` of the prose).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from counterbench.builtin.stem.design import LETTERS
from counterbench.models.simulated import SimProfile, load_profile
from counterbench.stats.seeding import stable_seed


def expected_values(table: pd.DataFrame, profile: SimProfile) -> np.ndarray:
    """The noise-free expected value of every prompt (baseline, then the effects in order)."""
    value = np.full(len(table), np.nan)
    for use_case, spec in profile.use_cases.items():
        value[table["use_case"].astype(str).eq(use_case).to_numpy()] = spec.default
    for effect in profile.effects:
        hit = np.ones(len(table), dtype=bool)
        for column, allowed in effect.match.items():
            hit &= _column(table, column).isin(allowed).to_numpy()
        if effect.unless:
            unless = np.ones(len(table), dtype=bool)
            for column, allowed in effect.unless.items():
                unless &= _column(table, column).isin(allowed).to_numpy()
            hit &= ~unless
        value[hit] = value[hit] * effect.multiply + effect.add
    return value


def _column(table: pd.DataFrame, column: str) -> pd.Series:
    if column not in table.columns:
        return pd.Series("", index=table.index)
    return table[column].astype(object).where(table[column].notna(), "").astype(str)


def simulate_outcomes(table: pd.DataFrame, model: str = "sim:stem", *, preset: str | SimProfile = "stem",
                      seed: int = 0, profile_sd: float = 0.0) -> pd.DataFrame:
    """Results rows (prompt columns + ``model``, ``status``, ``value``, ``unit``, ``response``) for ``table``."""
    profile = load_profile(preset) if isinstance(preset, str) else preset
    rng = np.random.default_rng(stable_seed("stem-sim", model, base_seed=seed))
    n = len(table)
    expected = expected_values(table, profile)
    noisy = expected * np.exp(profile.noise_sd * rng.standard_normal(n))
    if profile_sd > 0:
        codes, uniques = pd.factorize(table["profile_id"].astype(str))
        shared = np.random.default_rng(stable_seed("stem-sim-profile", model, base_seed=seed))
        noisy = noisy * np.exp(profile_sd * shared.standard_normal(len(uniques)))[codes]
    u = rng.random(n)
    status = np.where(u < profile.refusal_rate, "refused",
                      np.where(u < profile.refusal_rate + profile.malformed_rate, "unparseable", "ok"))
    ranking = table["task"].astype(str).eq("ranking").to_numpy()
    value = noisy.copy()
    unit = np.where(ranking, "", "mgl").astype(object)
    if ranking.any():
        level = np.clip(np.rint(noisy[ranking]), 1, 5).astype(np.int64)
        options = np.column_stack([pd.to_numeric(table.loc[ranking, f"option_{x}"]).to_numpy() for x in LETTERS])
        index = np.argmax(options == level[:, None], axis=1)
        value[ranking] = index
        unit[ranking] = np.asarray(LETTERS, dtype=object)[index]
    ok = status == "ok"
    out: dict[str, Any] = {"model": model, "simulated": True, "status": status,
                           "value": np.where(ok, value, np.nan), "unit": pd.Series(unit).where(ok, None).to_numpy(),
                           "response": None}
    return table.assign(**out)


def cut_at_limit(results: pd.DataFrame, limit: int, *, longer: Mapping[str, Sequence[str]] | None = None,
                 factor: float = 1.6, base_tokens: float = 400.0, per_grade: float = 0.1, noise_sd: float = 0.15,
                 seed: int = 0) -> pd.DataFrame:
    """``results`` (from :func:`simulate_outcomes`) with every generation answer written out as prose at its
    grade and those longer than ``limit`` tokens cut there (see module docstring).

    An explanation's length is ``base_tokens · exp(per_grade · (MGL − 11) + noise_sd · z)``, times
    ``factor`` for rows whose columns match every entry of ``longer`` (e.g. ``{"income": ["Low"]}``): the
    planted group whose explanations hit the limit more often. Ranking rows are unchanged."""
    from counterbench.outcomes.readability import text_at_grade

    out = results.copy()
    gen = out["task"].astype(str).eq("generation").to_numpy() & out["status"].astype(str).eq("ok").to_numpy()
    grade = pd.to_numeric(out["value"], errors="coerce").to_numpy(np.float64)
    rng = np.random.default_rng(stable_seed("stem-sim-length", base_seed=seed))
    tokens = base_tokens * np.exp(per_grade * (grade - 11.0) + noise_sd * rng.standard_normal(len(out)))
    if longer:
        hit = np.ones(len(out), dtype=bool)
        for column, allowed in longer.items():
            hit &= _column(out, column).isin(list(allowed)).to_numpy()
        tokens = np.where(hit, tokens * factor, tokens)
    cut = gen & (tokens > limit)
    responses = np.array(out["response"].tolist(), dtype=object)
    for i in np.flatnonzero(gen):
        words = text_at_grade(float(grade[i])).split()
        keep = len(words) if not cut[i] else max(1, round(len(words) * limit / tokens[i]))
        responses[i] = " ".join(words[:keep])
    out["response"] = responses
    out["finish_reason"] = pd.Series(np.where(cut, "length", "stop"), index=out.index).where(gen, None)
    out.loc[cut, "status"] = "truncated"
    out.loc[cut, "value"] = np.nan
    out.loc[cut, "unit"] = None
    return out
