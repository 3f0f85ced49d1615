"""The simulated model's effect rules (``effects:`` in a ``sim:FILE.yaml``) and outcome-kind baselines.

See :mod:`counterbench.models.sim_profile` for the file format and :mod:`counterbench.models.simulated`
for what it means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from counterbench.errors import nearest


@dataclass(frozen=True)
class Effect:
    """Multiply the expected value by ``multiply`` and add ``add`` where ``match`` holds and ``unless`` does not."""

    match: Mapping[str, tuple[str, ...]]
    unless: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    multiply: float = 1.0
    add: float = 0.0

    def applies(self, meta: Mapping[str, Any]) -> bool:
        def holds(cond: Mapping[str, tuple[str, ...]]) -> bool:
            return all(_meta_text(meta.get(k)) in values for k, values in cond.items())

        return holds(self.match) and not (self.unless and holds(self.unless))


def _meta_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def number(value: Any, key: str) -> float:
    """``value`` as a finite number (``ValueError`` naming ``key`` for text, a boolean, ``.nan`` or ``.inf``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} must be a number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{key} must be a finite number, got {value!r}")
    return out


def probability(value: Any, key: str) -> float:
    """``value`` as a probability in [0, 1] (``ValueError`` naming ``key`` otherwise)."""
    out = number(value, key)
    if not 0.0 <= out <= 1.0:
        raise ValueError(f"{key} is a probability and must be between 0 and 1, got {value!r}")
    return out


def _mapping(value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a mapping")
    return value


def _effect(value: Any, index: int) -> Effect:
    where = f"effects[{index}]"
    raw = _mapping(value, where)
    keys = ("match", "unless", "multiply", "add")
    unknown = [str(k) for k in raw if k not in keys]
    if unknown:
        hint = nearest(unknown[0], keys) or f" ({', '.join(keys)})"
        raise ValueError(f"{where}: unknown key '{unknown[0]}'{hint}")

    def cond(key: str) -> dict[str, tuple[str, ...]]:
        m = _mapping(raw.get(key) or {}, f"{where}.{key}")
        return {str(k): tuple(_meta_text(x) for x in (v if isinstance(v, list) else [v])) for k, v in m.items()}

    match = cond("match")
    if not match:
        raise ValueError(f"{where}: give match: {{COLUMN: VALUE}} (e.g. identifier, group, gender, use_case)")
    multiply = number(raw.get("multiply", 1.0), f"{where}.multiply")
    if multiply <= 0:
        raise ValueError(f"{where}.multiply must be positive")
    return Effect(match, cond("unless"), multiply, number(raw.get("add", 0.0), f"{where}.add"))


def _kind_default(spec: Any) -> float:
    """The latent value where a simulation file gives none: the kind's ``sim_default(spec)`` (without one, 60%
    of the way up its ``low``–``high`` scale, an even chance between its labels, or 8)."""
    from counterbench.outcomes import kind_member

    return float(kind_member(spec, "sim_default")(spec))
