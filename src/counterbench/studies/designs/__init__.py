"""Counterfactual designs: what a prompt varies.

- *single attribute*: one identifier of one axis per prompt; columns ``axis``, ``identifier``.
- *names grouped into groups*: as above, each identifier also has a ``group`` column (e.g. first names
  associated with a gender); analyses run at the name level and at the group level.
- *crossed attributes* (:class:`CrossedDesign`): several attributes stated in one prompt — every
  combination, or a seeded sample of them — with one column per attribute (``age``, ``gender``, ...);
  ``axis`` is ``crossed`` and ``identifier`` names the combination.
- Python studies add their own (intersectional profiles, several identities in one prompt: see
  ``docs/extending.md``), as long as the prompt table carries what varies as columns and the study
  names its :class:`~counterbench.studies.base.Facet` s.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

CROSSED_AXIS = "crossed"


@dataclass(frozen=True)
class Level:
    value: str
    phrases: Mapping[str, str]


@dataclass(frozen=True)
class CrossedDesign:
    """Attributes crossed in one prompt; ``sample`` combinations (seeded) or all of them."""

    attributes: Mapping[str, tuple[Level, ...]]
    sample: int | None = None
    seed: int = 0

    def combinations(self) -> list[tuple[Level, ...]]:
        every = list(itertools.product(*self.attributes.values()))
        if self.sample is None or self.sample >= len(every):
            return every
        chosen = np.sort(np.random.default_rng(self.seed).choice(len(every), size=self.sample, replace=False))
        return [every[i] for i in chosen]

    def as_axes(self) -> dict[str, tuple[Any, ...]]:
        """Attribute -> levels shaped like identifiers (``value``/``aliases``), for canonical pairs."""
        return {name: tuple(_AsIdentifier(lv.value) for lv in levels) for name, levels in self.attributes.items()}


@dataclass(frozen=True)
class _AsIdentifier:
    value: str
    aliases: tuple[str, ...] = ()


def combination_name(levels: tuple[Level, ...]) -> str:
    return " · ".join(lv.value for lv in levels)


def parse_crossed(ctx: Any, raw: Any, languages: Mapping[str, Any]) -> CrossedDesign | None:
    """``design: {crossed: {attributes: {age: [...], ...}, sample: N, seed: S}}`` or ``None``."""
    if raw is None:
        return None
    design = ctx.mapping(raw, "design")
    spec = ctx.mapping(design.get("crossed"), "design.crossed")
    attrs = ctx.mapping(spec.get("attributes"), "design.crossed.attributes")
    if len(attrs) < 2:
        raise ctx.fail("design.crossed.attributes", "crossing needs at least two attributes")
    parsed: dict[str, tuple[Level, ...]] = {}
    for name, levels in attrs.items():
        where = f"design.crossed.attributes.{name}"
        if not str(name).isidentifier():
            raise ctx.fail(where, "an attribute name must be a placeholder name (letters, digits, _)")
        if not isinstance(levels, list) or len(levels) < 2:
            raise ctx.fail(where, "an attribute needs at least two levels to compare")
        out = []
        for i, item in enumerate(levels):
            if isinstance(item, Mapping):
                value = ctx.text(item.get("value"), f"{where}[{i}].value")
                phrases = ctx.per_language(item.get("phrases"), f"{where}[{i}].phrases", languages)
            else:
                value = ctx.text(item, f"{where}[{i}]")
                phrases = {lang: value for lang in languages}
            out.append(Level(value, phrases))
        if len({lv.value for lv in out}) != len(out):
            raise ctx.fail(where, "levels must differ")
        parsed[str(name)] = tuple(out)
    sample = spec.get("sample")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 2):
        raise ctx.fail("design.crossed.sample", "expected a whole number of combinations, at least 2")
    seed = spec.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ctx.fail("design.crossed.seed", "expected a whole number")
    return CrossedDesign(parsed, sample, seed)
