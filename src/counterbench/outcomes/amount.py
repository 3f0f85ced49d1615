"""``amount``: money or a number with units and an optional plausible range — the built-in study's outcome.

Compared by the relative pair gap Δ% (|a − b| / mean(a, b)) and everything the amount analysis
builds on it (its family of tables, :mod:`counterbench.families.amount`, made by
:mod:`counterbench.families.amount.analysis`), and in the generic outcome tables by the same Δ% of the mean amounts,
100 × (comparison − reference) / the pair's mean (:meth:`AmountKind.comparison`): one number per gap.
The answer types are the number parser's (``inr_annual``, ``inr``, ``percent``,
``number``; see ``parse/rules.yaml``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from counterbench.outcomes.base import Comparison, Constraint, OutcomeSpec
from counterbench.outcomes.common import DeclaredKind, Fail
from counterbench.parse.result import ParsedAnswer

ANSWER_TYPES = ("inr_annual", "percent", "inr", "number")
_UNITS = {"inr_annual": "INR", "inr": "INR", "percent": "%", "number": ""}


class AmountKind(DeclaredKind):
    #: the pair-gap tables (Δ%, V@τ, W, MOG; :mod:`counterbench.families.amount.analysis`) analyse its answers too
    pair_tables = True

    def describe(self, spec: OutcomeSpec) -> str:
        return f"mean amount ({spec.unit})" if spec.unit else "mean amount"

    def read(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        answer_type = str(raw.get("answer_type", "number"))
        if answer_type not in ANSWER_TYPES:
            raise fail("answer_type", f"unknown '{answer_type}' (one of {', '.join(ANSWER_TYPES)})")
        return OutcomeSpec("amount", answer_type=answer_type, unit=_UNITS[answer_type])

    def encode(self, spec: OutcomeSpec) -> str:
        return spec.answer_type or "number"

    def decode(self, text: str) -> OutcomeSpec:
        return OutcomeSpec("amount", answer_type=text, unit=_UNITS.get(text, ""))

    def instruction(self, spec: OutcomeSpec) -> str:
        unit = f" {spec.unit}" if spec.unit else ""
        return f"Answer with exactly one number on a single line, in this format:\n### <NUMBER>{unit}\nNo explanation."

    def constraint(self, spec: OutcomeSpec) -> Constraint | None:
        from counterbench.outcomes.answer_formats import answer_format

        fmt = answer_format(spec.answer_type)
        return None if fmt is None else Constraint(fmt.answer_type, fmt.regex, fmt.gbnf)

    def parse(self, spec: OutcomeSpec, text: str | None, profile: str) -> ParsedAnswer:
        from counterbench.parse import parse_answer

        return parse_answer(text, spec.answer_type or "number", profile=profile)

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        unit = f" {spec.unit}" if spec.unit else ""
        return f"### {round(latent)}{unit}"

    def comparison(self, spec: OutcomeSpec) -> Comparison:
        """The pair-mean Δ%: 100 × (comparison − reference) / the pair's mean of the mean amounts."""
        unit = f" {spec.unit}" if spec.unit and spec.unit != "%" else (spec.unit or "")
        return Comparison("pair_mean", "%", "% of the pair's mean",
                          "{model} offers {comparison} {direction} than {reference}: "
                          "a gap of {size} of the pair's mean",
                          ("more", "less"), unit, digits=1)


KIND = AmountKind("amount", ("answer_type",), "percent of the pair's mean", "a usable number")
