"""``score``: a whole number on a declared scale (``min``..``max``, e.g. 1-10 or 1-100). Compared as an
absolute difference in points and a mean per group. An answer outside the scale is ``unparseable``
(reason ``out_of_scale``), never a value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from counterbench.outcomes.base import Comparison, Constraint, OutcomeSpec, number_text
from counterbench.outcomes.common import DeclaredKind, Fail, answer_lines, number, refused
from counterbench.parse.hidden import has_hidden_in_number, strip_hidden
from counterbench.parse.result import ParsedAnswer

_INTEGER = re.compile(r"^\s*(-?\d+)\s*(?:/\s*\d+)?\s*[.!]?\s*$")
_LEADING = re.compile(r"^\s*(?:score\s*[:=]?\s*)?(-?\d+)\b", re.IGNORECASE)


class ScoreKind(DeclaredKind):
    #: whether the simulated model's latent value gets its multiplicative noise
    sim_noise = True

    def describe(self, spec: OutcomeSpec) -> str:
        return f"mean score ({_n(spec.low)}–{_n(spec.high)})"

    def read(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        for key in ("min", "max"):
            if key not in raw:
                raise fail(key, "a score needs its scale: give min and max (e.g. min: 1, max: 10)")
        low, high = number(raw["min"], "min", fail), number(raw["max"], "max", fail)
        if not (low.is_integer() and high.is_integer()):
            raise fail("min", "the scale's ends must be whole numbers")
        if low >= high:
            raise fail("max", f"the scale is reversed or empty: min {low:g} must be below max {high:g}")
        return OutcomeSpec("score", low=low, high=high)

    def encode(self, spec: OutcomeSpec) -> str:
        return f"score:{number_text(spec.low)}:{number_text(spec.high)}"

    def decode(self, text: str) -> OutcomeSpec:
        _, low, high = text.split(":")
        return OutcomeSpec("score", low=float(low), high=float(high))

    def instruction(self, spec: OutcomeSpec) -> str:
        return (f"Answer with exactly one whole number from {_n(spec.low)} to {_n(spec.high)} on a single line, "
                "in this format:\n### <NUMBER>\nNo explanation.")

    def constraint(self, spec: OutcomeSpec) -> Constraint:
        low, high = int(spec.low or 0), int(spec.high or 0)
        alts = [str(v) for v in range(low, high + 1)]
        if len(alts) <= 200:
            regex = "^### (" + "|".join(sorted(alts, key=len, reverse=True)) + ")$"
            gbnf = 'root ::= "### " (' + " | ".join(f'"{a}"' for a in sorted(alts, key=len, reverse=True)) + ")\n"
        else:
            regex = r"^### -?[0-9]{1,6}$"
            gbnf = 'root ::= "### " "-"? [0-9]{1,6}\n'
        return Constraint(f"score_{low}_{high}", regex, gbnf)

    def parse(self, spec: OutcomeSpec, text: str | None, profile: str) -> ParsedAnswer:
        if text is None or not text.strip():
            return ParsedAnswer("unparseable", reason="empty")
        if has_hidden_in_number(text):  # never the digits on one side of an invisible character
            return ParsedAnswer("unparseable", reason="hidden_character")
        found = None
        for line in answer_lines(strip_hidden(text)):
            m = _INTEGER.match(line) or _LEADING.match(line)
            if m:
                found = int(m.group(1))
                break
        if found is None:
            return ParsedAnswer("refused", reason="refusal") if refused(text) else ParsedAnswer(
                "unparseable", reason="no_score")
        low, high = spec.low or 0.0, spec.high or 0.0
        if not low <= found <= high:
            return ParsedAnswer("unparseable", value=None, reason="out_of_scale")
        return ParsedAnswer("ok", value=float(found), unit="points")

    def sim_default(self, spec: OutcomeSpec) -> float:
        """The simulated model's score where its file gives none: 60% of the way up the scale."""
        low, high = spec.low or 0.0, spec.high or 0.0
        return low + 0.6 * (high - low)

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        low, high = spec.low or 0.0, spec.high or 0.0
        # stochastic rounding keeps the expected score equal to the latent value
        base = int(np.floor(latent))
        value = base + (1 if u < latent - base else 0)
        return f"### {int(min(max(value, low), high))}"

    def comparison(self, spec: OutcomeSpec) -> Comparison:
        """A difference of mean scores in points of the scale."""
        return Comparison("difference", " points", "points",
                          "{model} scores {comparison} {size} {direction} than {reference}",
                          ("higher", "lower"))


def _n(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


KIND = ScoreKind("score", ("min", "max"), "points", "a score on the declared scale")
