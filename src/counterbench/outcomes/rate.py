"""``rate``: a percentage (an interest rate, a hike). Compared as a difference in percentage points and
as a relative difference. Answers are ``### <NUMBER> %``; parsed by the shared number parser's
``percent`` rules (so ``12 percent`` and ``12%`` both read as 12)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from counterbench.outcomes.base import Comparison, Constraint, OutcomeSpec
from counterbench.outcomes.common import DeclaredKind, Fail, number
from counterbench.parse.result import ParsedAnswer

REGEX = r"^### (0|[1-9][0-9]{0,2})(\.[0-9]{1,2})? %$"
GBNF = 'root ::= "### " int frac? " %"\nint ::= "0" | [1-9] [0-9]{0,2}\nfrac ::= "." [0-9] [0-9]?\n'


class RateKind(DeclaredKind):
    #: whether the simulated model's latent value gets its multiplicative noise
    sim_noise = True

    def describe(self, spec: OutcomeSpec) -> str:
        return "mean rate (%)"

    def read(self, raw: Mapping[str, Any], fail: Fail) -> OutcomeSpec:
        low = high = None
        if "range" in raw:
            rng = raw["range"]
            if not isinstance(rng, list) or len(rng) != 2:
                raise fail("range", "expected [lowest, highest]")
            low, high = number(rng[0], "range", fail), number(rng[1], "range", fail)
            if low >= high:
                raise fail("range", f"the lowest value must be below the highest, got [{low:g}, {high:g}]")
        decimals = int(number(raw.get("decimals", 2), "decimals", fail))
        return OutcomeSpec("rate", low=low, high=high, extra=(("decimals", decimals),))

    def encode(self, spec: OutcomeSpec) -> str:
        return "rate"

    def decode(self, text: str) -> OutcomeSpec:
        return OutcomeSpec("rate", extra=(("decimals", 2),))

    def instruction(self, spec: OutcomeSpec) -> str:
        return ("Answer with exactly one percentage on a single line, in this format:\n### <NUMBER> %\n"
                "No ranges, no explanation.")

    def constraint(self, spec: OutcomeSpec) -> Constraint:
        return Constraint("rate", REGEX, GBNF)

    def parse(self, spec: OutcomeSpec, text: str | None, profile: str) -> ParsedAnswer:
        from counterbench.parse import parse_answer

        answer = parse_answer(text, "percent", profile=profile)
        if answer.status == "ok" and answer.value is not None and spec.low is not None and spec.high is not None:
            out = not (spec.low <= answer.value <= spec.high)
            return ParsedAnswer("ok", answer.value, "%", answer.is_range, out, answer.reason)
        return answer

    #: the noise ``counterbench power`` assumes: half a percentage point
    power_noise = 0.5

    def sim_default(self, spec: OutcomeSpec) -> float:
        """The simulated model's rate (%) where neither its file nor its preset gives one."""
        return 8.0

    def simulate(self, spec: OutcomeSpec, latent: float, u: float) -> str:
        return f"### {max(latent, 0.0):.2f} %"

    def comparison(self, spec: OutcomeSpec) -> Comparison:
        """A difference of mean rates in percentage points."""
        return Comparison("difference", " pp", "percentage points",
                          "{model} gives {comparison} a rate {size} {direction} than {reference}",
                          ("higher", "lower"), "%")


KIND = RateKind("rate", ("range", "decimals"), "percentage points", "a usable rate")
