"""Shared builders for the stats tests: a RupeeBias-shaped synthetic design and brute-force pairs."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

AXES = {"Religion": 12, "Caste": 24, "Region": 30, "Gender": 5, "Disability": 11, "Urban/Rural": 5}
USE_CASES = {  # profiles, question variants (paper Tables 9-13, 17)
    "salary_estimation": (18, 3),
    "salary_increment_estimation": (27, 3),
    "counter_offer_recommendation": (27, 2),
    "service_pricing_vendor": (9, 2),
    "service_pricing_customer": (9, 2),
}
SLOT = ["model", "use_case", "language", "axis", "profile_id", "question_variant"]


def design(
    *,
    models: tuple[str, ...] = ("m0",),
    languages: tuple[str, ...] = ("en", "hinglish"),
    use_cases: dict[str, tuple[int, int]] | None = None,
    axes: dict[str, int] | None = None,
) -> pd.DataFrame:
    """All (model, use case, language, axis, identifier, profile, question variant) rows, no values."""
    frames = []
    for model in models:
        for lang in languages:
            for uc, (n_prof, n_qv) in (use_cases or USE_CASES).items():
                for axis, k in (axes or AXES).items():
                    idx = pd.MultiIndex.from_product(
                        [[f"{axis}_{i:02d}" for i in range(k)], [f"p{j:02d}" for j in range(n_prof)], range(n_qv)],
                        names=["identifier", "profile_id", "question_variant"],
                    ).to_frame(index=False)
                    idx.insert(0, "axis", axis)
                    idx.insert(0, "language", lang)
                    idx.insert(0, "use_case", uc)
                    idx.insert(0, "model", model)
                    frames.append(idx)
    frame = pd.concat(frames, ignore_index=True)
    frame["variant"] = "standard"
    return frame


def brute_force_pairs(frame: pd.DataFrame, slot_cols: list[str], ident: str = "identifier") -> pd.DataFrame:
    """Every unordered pair of two different identifiers per slot, by plain Python loops."""
    order = {name: i for i, name in enumerate(pd.unique(frame[ident]))}
    rows = []
    for key, block in frame.groupby(slot_cols, sort=True):
        block = block[block["value"].notna()]
        items = sorted(zip(block[ident], block["value"], strict=True), key=lambda t: order[t[0]])
        for (ia, va), (ib, vb) in combinations(items, 2):
            s = va + vb
            gap = abs(va - vb) / (s / 2) * 100 if s > 0 else float("nan")
            signed = (va - vb) / (s / 2) * 100 if s > 0 else float("nan")
            rows.append((*(key if isinstance(key, tuple) else (key,)), ia, ib, gap, signed))
    return pd.DataFrame(rows, columns=[*slot_cols, "identifier_a", "identifier_b", "gap", "signed_gap"])


def with_values(frame: pd.DataFrame, seed: int, *, missing: float = 0.0, round_to: float | None = None) -> pd.DataFrame:
    """Add a positive ``value`` column (gamma noise around a per-profile level), some NaN."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    level = 1e5 * (1 + pd.factorize(out["profile_id"])[0])
    value = level * rng.gamma(50.0, 1 / 50.0, len(out))
    if round_to:
        value = np.round(value / round_to) * round_to
    value[rng.random(len(out)) < missing] = np.nan
    out["value"] = value
    return out


def cluster_index_rows(seed: int, n_clusters: int, n_boot: int, block: int = 50) -> np.ndarray:
    """The cluster indices the engine draws (one row per replicate), for small n_clusters."""
    children = np.random.SeedSequence(seed).spawn(-(-n_boot // block))
    rows = []
    for i, child in enumerate(children):
        g = np.random.Generator(np.random.PCG64(child))
        size = min(block, n_boot - i * block)
        rows.append(g.integers(0, n_clusters, size=(size, n_clusters), dtype=np.int64))
    return np.vstack(rows)
