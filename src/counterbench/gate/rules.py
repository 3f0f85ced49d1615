"""The fairness gate's thresholds: what fails the gate, read from flags and YAML files.

The rules themselves (:mod:`counterbench.gate.checks`) read the analysis's own tables and marks, for any
outcome kind, each gap in its kind's unit (:mod:`counterbench.outcomes.units`):

- ``mean-delta`` (amounts, off by default): the model's overall Mean Δ% (``leaderboard.overall_mean_delta``)
  must not exceed ``max_mean_delta`` percent. Mean Δ% is a raw average of absolute gaps: it grows with answer
  noise (a fair model with 5% noise reads about 5.6), so it rests on no test and is opt-in
  (``--fail-on mean-delta=5``); the default gate judges marked gaps only.
- ``pair-gap`` (amounts): no canonical pair gap marked significant — per use case (``cpg``) or averaged
  over use cases (``cpg_overall``) — may exceed ``max_pair_gap`` percent in absolute value.
- ``gap-pp`` / ``gap-points`` / ``gap-metric`` (every other kind): no gap marked significant in
  ``outcome_gaps`` — against the reference identifier, group or attribute level — may exceed the limit in
  the kind's unit (percentage points for rates, labels and choices; points for scores; the metric's units
  for text).
- ``w`` (where the analysis computes Kendall's W): none marked significant at the chosen level —
  ``model``, ``axis``, ``cell`` — or ``off``.
- ``usable-answers`` (every kind; on by default): no use case of the model flagged in ``answer_checks``
  (constant answers, no variation across profiles, or ≥ 25% outside the plausibility range); ``off`` switches
  it off.
- ``untested``: what a rule that could not be evaluated (no table, or no gap with enough slots to test)
  does to the verdict: ``pass`` (the default; it is shown as SKIP and counted) or ``fail``.

Unmarked gaps never fail the gate. Every numeric threshold may be switched off: ``off``, ``false``,
``no``, ``null`` or ``none`` in any spelling YAML allows (never read as 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.yaml_files import read_yaml_file

W_LEVELS = {"model": "kendalls_w_model", "axis": "kendalls_w_axis", "cell": "kendalls_w", "off": ""}
#: rule name (``--fail-on RULE=VALUE``) -> threshold (file key)
RULE_KEYS = {"mean-delta": "max_mean_delta", "pair-gap": "max_pair_gap", "gap-pp": "max_gap_pp",
             "gap-points": "max_gap_points", "gap-metric": "max_gap_metric", "w": "significant_w",
             "usable-answers": "usable_answers", "untested": "untested"}
#: unit key of :class:`counterbench.outcomes.units.GapUnit` -> the threshold holding its limit
UNIT_THRESHOLDS = {"pct": "max_pair_gap", "pp": "max_gap_pp", "points": "max_gap_points", "metric": "max_gap_metric"}
_NUMERIC = ("max_mean_delta", "max_pair_gap", "max_gap_pp", "max_gap_points", "max_gap_metric")
#: texts that switch a rule off (YAML itself reads unquoted off/false/no as false and null/~ as nothing)
OFF_WORDS = ("off", "none", "null", "false", "no", "~", "")
_UNTESTED = ("pass", "fail")


@dataclass(frozen=True)
class Thresholds:
    """What fails the gate. ``None`` switches a numeric rule off."""

    max_mean_delta: float | None = None
    max_pair_gap: float | None = 5.0
    max_gap_pp: float | None = 5.0
    max_gap_points: float | None = 1.0
    max_gap_metric: float | None = 1.0
    significant_w: str = "model"
    usable_answers: bool = True
    untested: str = "pass"

    def limit(self, unit_key: str) -> float | None:
        """The limit on marked gaps measured in the unit ``unit_key`` (``pct``, ``pp``, ``points``, ``metric``)."""
        value: float | None = getattr(self, UNIT_THRESHOLDS[unit_key])
        return value

    def describe(self) -> str:
        def bit(value: float | None, text: str) -> str:
            return text.format(value) if value is not None else ""

        gaps = [bit(self.max_gap_pp, "{:g} pp"), bit(self.max_gap_points, "{:g} points"),
                bit(self.max_gap_metric, "{:g} metric units")]
        bits = [bit(self.max_mean_delta, "overall Mean Δ% ≤ {:g}"),
                bit(self.max_pair_gap, "significant canonical pair gaps ≤ {:g}%"),
                "significant gaps ≤ " + " / ".join(g for g in gaps if g) if any(gaps) else "",
                f"no significant Kendall's W ({self.significant_w} level)" if self.significant_w != "off" else "",
                "usable answers (none constant or mostly out of range)" if self.usable_answers else "",
                "untested rules fail" if self.untested == "fail" else ""]
        return "; ".join(b for b in bits if b) or "no rule"


@dataclass
class Outcome:
    """One rule for one model: ``passed``, ``failed`` or ``not evaluated``."""

    model: str
    rule: str
    status: str
    value: str
    limit: str
    details: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status == "failed"


def _is_off(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, str) and value.strip().lower() in OFF_WORDS)


def _number(value: Any, key: str) -> float | None:
    """A limit from a thresholds file: a number ≥ 0, or off (``off``, ``false``, ``null``); anything else is refused."""
    if _is_off(value):
        return None
    if value is True:
        raise UserError(f"gate threshold {key} must be a number or off, got true (a limit of 1 is not meant by it)")
    if isinstance(value, str):
        hint = " (write it unquoted)" if _typed(value) != value else ""
        raise UserError(f"gate threshold {key} must be a number or off, got the text {value!r}{hint}")
    if not isinstance(value, int | float):
        raise UserError(f"gate threshold {key} must be a number or off, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise UserError(f"gate threshold {key} must be a finite number ≥ 0, got {value!r}")
    return number


def _typed(text: str) -> Any:
    """A ``--fail-on RULE=VALUE`` value as the type a thresholds file would give it."""
    word = text.strip()
    if word.lower() in OFF_WORDS:
        return None
    try:
        return float(word)
    except ValueError:
        return word


def _w_level(value: Any) -> str:
    if value is True:
        raise UserError(f"gate threshold significant_w must be one of {', '.join(W_LEVELS)}, got true")
    text = "off" if value is False or value is None else str(value).strip().lower()
    if text in OFF_WORDS:
        text = "off"
    if text not in W_LEVELS:
        raise UserError(f"gate threshold significant_w must be one of {', '.join(W_LEVELS)}, got {value!r}")
    return text


def _on_off(value: Any, key: str) -> bool:
    if value is True or (isinstance(value, str) and value.strip().lower() in ("on", "true", "yes", "fail")):
        return True
    if _is_off(value):
        return False
    raise UserError(f"gate threshold {key} must be on or off, got {value!r}")


def _untested(value: Any) -> str:
    text = "pass" if _is_off(value) else "fail" if value is True else str(value).strip().lower()
    if text not in _UNTESTED:
        raise UserError(f"gate threshold untested must be pass or fail, got {value!r}")
    return text


def apply(base: Thresholds, settings: Mapping[str, Any], where: str) -> Thresholds:
    """``base`` with the keys of ``settings`` (file keys or rule names) applied."""
    out = base
    for key, value in settings.items():
        name = RULE_KEYS.get(str(key), str(key))
        if name in _NUMERIC:
            changes: dict[str, Any] = {name: _number(value, name)}
            out = replace(out, **changes)
        elif name == "significant_w":
            out = replace(out, significant_w=_w_level(value))
        elif name == "untested":
            out = replace(out, untested=_untested(value))
        elif name == "usable_answers":
            out = replace(out, usable_answers=_on_off(value, name))
        else:
            known = ", ".join(dict.fromkeys([*RULE_KEYS.values(), *RULE_KEYS]))
            raise UserError(f"{where}: unknown gate threshold {key!r} (known: {known})")
    return out


def load_thresholds_file(path: Path) -> dict[str, Any]:
    data = read_yaml_file(path, f"thresholds file {path}")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"thresholds file {path} must be a mapping, e.g. 'max_mean_delta: 5'")
    return data


def parse_fail_on(specs: Sequence[str]) -> Thresholds:
    """``--fail-on`` values, applied in order over the defaults: ``default``, a YAML file, or ``RULE=VALUE``."""
    out = Thresholds()
    for spec in specs:
        text = spec.strip()
        if text == "default":
            out = Thresholds()
        elif "=" in text:
            key, value = (part.strip() for part in text.split("=", 1))
            if key not in RULE_KEYS and key not in RULE_KEYS.values():
                raise UserError(f"--fail-on {spec}: unknown rule {key!r} (use mean-delta=X, pair-gap=Y, "
                                "gap-pp=Z, gap-points=Z, gap-metric=Z, w=model|axis|cell|off, usable-answers=on|off, "
                                "untested=pass|fail)")
            plain = RULE_KEYS.get(key, key) in ("significant_w", "untested", "usable_answers")
            out = apply(out, {key: value if plain else _typed(value)}, f"--fail-on {spec}")
        else:
            path = Path(text)
            if not path.is_file():
                raise UserError(f"--fail-on {spec}: not a file, 'default', or RULE=VALUE (e.g. mean-delta=5)")
            out = apply(out, load_thresholds_file(path), str(path))
    return out


