"""Intersectional student profiles of the STEM-explanations study (paper §3.1, Tables 1–2, Appendix B).

- :func:`load_contexts` reads ``contexts.yaml``: India (8 attributes, 5,184 combinations) and USA
  (7 attributes, 4,860), each attribute's levels, its phrase in the characteristic string, and the
  paper's marginal counts over its 100 sampled profiles.
- :func:`sample_profiles` draws a seeded stratified sample: each attribute's marginal counts are fixed
  exactly — ``balanced`` (near-equal counts; the remainder goes to levels picked by the seed) or
  ``paper`` (Table 2's counts, rescaled when ``n`` is not 100) — and the attributes are joined by
  independent seeded permutations, then repaired so that no two profiles are identical (swaps within
  one attribute keep every marginal).
- :func:`characteristic` writes the string in Appendix B's order (its examples put disability first).
- :func:`progressive_profiles` and :func:`single_attribute_profiles` build the profile sets of the
  progressive intersectional experiment (§4.3.1; all combinations of the attributes included so far,
  the rest omitted from the string; optionally one attribute fixed, the IIT ablation of §4.5.2) and of
  the single-attribute replication (§4.5.1; each attribute alone, plus a baseline with none).

Decisions: an omitted attribute is an empty string in its column; profile ids are stable
(``IN-S007``, ``US-P5-0042``, ``IN-A1-0002``, ``US-1-income-Low``); every random draw uses
:func:`counterbench.stats.seeding.stable_seed` of the context, mode and seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
import yaml

from counterbench.errors import UserError
from counterbench.stats.seeding import stable_seed

MODES = ("balanced", "paper")
CONTEXT_PREFIX = {"india": "IN", "usa": "US"}


@dataclass(frozen=True)
class Attribute:
    """One profile dimension: its levels (paper order), phrase template and the paper's counts."""

    name: str
    label: str
    levels: tuple[str, ...]
    phrase: str
    paper_counts: tuple[int, ...]

    def phrase_for(self, level: str) -> str:
        return self.phrase.format(level=level, level_lower=level.lower())


@dataclass(frozen=True)
class Context:
    """A cultural context: its attributes (Table 1 order), string order, progressive steps, ablation."""

    name: str
    title: str
    attributes: tuple[Attribute, ...]
    string_order: tuple[str, ...]
    progressive: tuple[str, ...]
    ablation: tuple[tuple[str, str], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def attribute(self, name: str) -> Attribute:
        for attr in self.attributes:
            if attr.name == name:
                return attr
        raise KeyError(name)

    @property
    def n_combinations(self) -> int:
        return int(np.prod([len(a.levels) for a in self.attributes]))


def _context(name: str, raw: Mapping[str, Any]) -> Context:
    attrs = []
    for attr_name, spec in raw["attributes"].items():
        levels = tuple(str(v) for v in spec["levels"])
        counts = tuple(int(c) for c in spec["paper"])
        if len(counts) != len(levels):
            raise ValueError(f"contexts.yaml: {name}.{attr_name}: paper counts and levels differ in length")
        attrs.append(Attribute(str(attr_name), str(spec["label"]), levels, str(spec["phrase"]), counts))
    ctx = Context(name, str(raw["title"]), tuple(attrs), tuple(raw["string_order"]), tuple(raw["progressive"]),
                  tuple((str(k), str(v)) for k, v in (raw.get("ablation") or {}).items()))
    if sorted(ctx.string_order) != sorted(ctx.names):
        raise ValueError(f"contexts.yaml: {name}.string_order must name every attribute once")
    return ctx


@cache
def load_contexts() -> dict[str, Context]:
    """The study's contexts from its data file (cached)."""
    text = resources.files("counterbench.builtin.stem").joinpath("contexts.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    return {str(name): _context(str(name), spec) for name, spec in raw.items()}


def get_context(name: str) -> Context:
    contexts = load_contexts()
    if name not in contexts:
        raise UserError(f"unknown STEM context '{name}' (one of: {', '.join(contexts)})")
    return contexts[name]


def characteristic(ctx: Context, profile: Mapping[str, Any]) -> str:
    """The characteristic string (Appendix B): the stated attributes' phrases in the context's order.

    Attributes missing from ``profile`` or empty are omitted (progressive and single-attribute designs).
    """
    parts = []
    for name in ctx.string_order:
        level = profile.get(name)
        if level is None or (isinstance(level, float) and np.isnan(level)) or str(level) == "":
            continue
        parts.append(ctx.attribute(name).phrase_for(str(level)))
    return " ".join(parts)


def target_counts(attr: Attribute, n: int, mode: str, rng: np.random.Generator) -> np.ndarray:
    """Exact marginal counts of one attribute over ``n`` profiles (every level at least once)."""
    k = len(attr.levels)
    if n < k:
        raise UserError(f"{n} profiles cannot show all {k} levels of {attr.label}; ask for at least {k}")
    if mode == "balanced":
        counts = np.full(k, n // k)
        counts[rng.permutation(k)[: n - counts.sum()]] += 1
        return counts
    if mode != "paper":
        raise UserError(f"unknown profile sampling mode '{mode}' (one of: {', '.join(MODES)})")
    paper = np.asarray(attr.paper_counts, dtype=np.float64)
    # largest-remainder apportionment of the paper's shares (exact for n = 100), then every level present
    exact = paper / paper.sum() * n
    counts = np.floor(exact).astype(np.int64)
    order = np.lexsort((np.arange(k), -(exact - counts)))
    counts[order[: n - counts.sum()]] += 1
    while (counts == 0).any():
        counts[int(np.argmax(counts))] -= 1
        counts[int(np.flatnonzero(counts == 0)[0])] += 1
    return counts


def sample_profiles(context: str, n: int = 100, mode: str = "balanced", seed: int = 0) -> pd.DataFrame:
    """``n`` distinct profiles of ``context`` with exact marginal counts (see module docstring).

    Columns: ``profile_id``, ``context``, one per attribute (level text), ``characteristic``.
    """
    ctx = get_context(context)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UserError(f"the number of profiles must be a whole number ≥ 1, got {n!r}")
    if n > ctx.n_combinations:
        raise UserError(f"{context} has only {ctx.n_combinations} distinct profiles; asked for {n}")
    rng = np.random.default_rng(stable_seed("stem", "profiles", context, mode, n, base_seed=seed))
    codes = np.empty((n, len(ctx.attributes)), dtype=np.int64)
    for j, attr in enumerate(ctx.attributes):
        counts = target_counts(attr, n, mode, rng)
        codes[:, j] = rng.permutation(np.repeat(np.arange(len(attr.levels)), counts))
    _balance_pairs(codes, [len(a.levels) for a in ctx.attributes], rng)
    _repair_duplicates(codes, rng)
    frame = pd.DataFrame({"profile_id": [f"{CONTEXT_PREFIX[context]}-S{i + 1:03d}" for i in range(n)],
                          "context": context})
    for j, attr in enumerate(ctx.attributes):
        frame[attr.name] = np.asarray(attr.levels, dtype=object)[codes[:, j]]
    records = frame.to_dict("records")
    frame["characteristic"] = [characteristic(ctx, {str(k): v for k, v in row.items()}) for row in records]
    return frame


def _balance_pairs(codes: np.ndarray, sizes: Sequence[int], rng: np.random.Generator, sweeps: int = 10) -> None:
    """Swap values within one attribute to bring every two-way table close to independence.

    Minimises Σ over attribute pairs and cells of (count − expected)², expected = n_a·n_b/n, by
    greedy swaps of two rows' values of one attribute (marginals never change). Near-orthogonal
    attributes keep one attribute's effect out of another's pairwise comparisons (no chance confounding).
    """
    n, m = codes.shape
    counts = {(j, k): np.zeros((sizes[j], sizes[k])) for j in range(m) for k in range(m) if j != k}
    margins = [np.bincount(codes[:, j], minlength=sizes[j]).astype(np.float64) for j in range(m)]
    dev = {}
    for (j, k), table in counts.items():
        np.add.at(table, (codes[:, j], codes[:, k]), 1.0)
        dev[j, k] = table - np.outer(margins[j], margins[k]) / n
    rows = rng.integers(n, size=(sweeps * n * m, 2))
    cols = rng.integers(m, size=sweeps * n * m)
    others = [[k for k in range(m) if k != j] for j in range(m)]
    for (r1, r2), j in zip(rows.tolist(), cols.tolist(), strict=True):
        a1, a2 = codes[r1, j], codes[r2, j]
        if a1 == a2:
            continue
        delta = 0.0
        for k in others[j]:
            b1, b2 = codes[r1, k], codes[r2, k]
            if b1 != b2:
                d = dev[j, k]
                delta += 2.0 * (d[a2, b1] + d[a1, b2] - d[a1, b1] - d[a2, b2]) + 4.0
        if delta < 0:
            for k in others[j]:
                b1, b2 = codes[r1, k], codes[r2, k]
                if b1 != b2:
                    for d in (dev[j, k], dev[k, j].T):
                        d[a1, b1] -= 1.0
                        d[a2, b2] -= 1.0
                        d[a2, b1] += 1.0
                        d[a1, b2] += 1.0
            codes[r1, j], codes[r2, j] = a2, a1


def _repair_duplicates(codes: np.ndarray, rng: np.random.Generator, max_rounds: int = 10_000) -> None:
    """Swap one attribute's value between a duplicated row and a random row until all rows differ."""
    n, m = codes.shape
    for _ in range(max_rounds):
        _, first, counts = np.unique(codes, axis=0, return_index=True, return_counts=True)
        if counts.max(initial=1) <= 1:
            return
        seen = np.zeros(n, dtype=bool)
        seen[first] = True
        dup = int(np.flatnonzero(~seen)[0])
        other, column = int(rng.integers(n)), int(rng.integers(m))
        codes[[dup, other], column] = codes[[other, dup], column]
    raise RuntimeError("could not draw distinct profiles; ask for fewer")


def marginal_counts(profiles: pd.DataFrame, context: str) -> pd.DataFrame:
    """Table 2: count and share of each level of each attribute over the sampled profiles."""
    ctx = get_context(context)
    rows = []
    n = len(profiles)
    for attr in ctx.attributes:
        counts = profiles[attr.name].value_counts()
        for level in attr.levels:
            c = int(counts.get(level, 0))
            rows.append({"context": context, "attribute": attr.name, "level": level, "count": c,
                         "share": c / n * 100.0 if n else np.nan})
    return pd.DataFrame(rows)


def progressive_profiles(context: str, fixed: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Profiles of the progressive experiment: step s crosses the first s attributes of ``progressive``.

    ``fixed`` (the ablation, e.g. ``{"college_tier": "IIT"}``) states that level in every step and
    drops the attribute from the steps. Columns: ``profile_id``, ``context``, ``step``, attributes,
    ``characteristic``.
    """
    ctx = get_context(context)
    fixed = dict(fixed or {})
    steps = [a for a in ctx.progressive if a not in fixed]
    rows: list[dict[str, Any]] = []
    tag = "A" if fixed else "P"
    for s in range(1, len(steps) + 1):
        included = steps[:s]
        for i, combo in enumerate(itertools.product(*(ctx.attribute(a).levels for a in included))):
            profile = {a: "" for a in ctx.names}
            profile.update(fixed)
            profile.update(dict(zip(included, combo, strict=True)))
            rows.append({"profile_id": f"{CONTEXT_PREFIX[context]}-{tag}{s}-{i + 1:04d}", "context": context,
                         "step": s, **profile, "characteristic": characteristic(ctx, profile)})
    return pd.DataFrame(rows)


def single_attribute_profiles(context: str) -> pd.DataFrame:
    """Each attribute's levels alone (others omitted), plus a ``baseline`` profile stating none."""
    ctx = get_context(context)
    prefix = CONTEXT_PREFIX[context]
    rows: list[dict[str, Any]] = [{"profile_id": f"{prefix}-1-baseline", "context": context, "varied": "",
                                   **{a: "" for a in ctx.names}, "characteristic": ""}]
    for attr in ctx.attributes:
        for level in attr.levels:
            profile = {a: "" for a in ctx.names}
            profile[attr.name] = level
            rows.append({"profile_id": f"{prefix}-1-{attr.name}-{level}", "context": context, "varied": attr.name,
                         **profile, "characteristic": characteristic(ctx, profile)})
    return pd.DataFrame(rows)


def attribute_columns(contexts: Sequence[str]) -> list[str]:
    """Every attribute column of the given contexts, in first-seen order."""
    out: dict[str, None] = {}
    for name in contexts:
        for attr in get_context(name).attributes:
            out.setdefault(attr.name, None)
    return list(out)
