"""When p(yes) — the decision probability from log-probabilities — is the primary measure. Pure.

A yes/no or multiple-choice answer is measured twice when log-probabilities were stored
(:mod:`.probabilities`): the sampled answer and the model's probability of each allowed answer. The
probability is the better measure only where it was read right (:mod:`counterbench.outcomes.logprobs`
reads it and records per answer whether it is complete, the mass the allowed answers hold and whether
the answer was forced). The rule, per model × use case, over the usable answers:

- **complete**: at least :data:`COMPLETE_SHARE` (90%) of them have a complete reading (every allowed
  answer among the listed tokens, or the missing ones provably negligible) — an incomplete value is
  missing, and p(yes) over a tenth of the answers missing is not the model's p(yes) over the study;
- **mass**: the allowed answers hold a median of at least :data:`MEDIAN_MASS` (half) of the model's
  probability at the answer — where they hold less, the model wanted to write something else there (a
  base model wanting digits after ``### ``), and p(yes) renormalises a sliver of its distribution;
- **not forced**: at most :data:`FORCED_SHARE` (50%) of the answers with a known flag were forced (the
  answer token sampled more than 5 nats below the model's preferred token, a constraint's doing).

Otherwise the sampled answers are primary, and :func:`why_sampled` says why in one sentence with the
numbers. Stores written before the completeness, mass and forced columns existed: completeness and mass
are read from the stored log-probabilities; forced is unknown and does not count against p(yes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["COMPLETE_SHARE", "FORCED_SHARE", "MEDIAN_MASS", "PrimaryVerdict", "decide", "why_sampled"]

#: the share of usable answers with a complete p(positive) from which it can be the primary measure
COMPLETE_SHARE = 0.9
#: the median probability mass the allowed answers must hold
MEDIAN_MASS = 0.5
#: the largest share of forced answers with which p(positive) can be primary
FORCED_SHARE = 0.5


@dataclass(frozen=True)
class PrimaryVerdict:
    """The rule's inputs and its answer for one model × use case."""

    n_answers: int
    n_complete: int
    median_mass: float
    n_forced: int
    n_forced_known: int

    @property
    def complete_share(self) -> float:
        return self.n_complete / self.n_answers if self.n_answers else float("nan")

    @property
    def forced_share(self) -> float:
        return self.n_forced / self.n_forced_known if self.n_forced_known else float("nan")

    @property
    def enough_complete(self) -> bool:
        return self.n_answers > 0 and self.complete_share >= COMPLETE_SHARE

    @property
    def enough_mass(self) -> bool:
        return math.isfinite(self.median_mass) and self.median_mass >= MEDIAN_MASS

    @property
    def few_forced(self) -> bool:
        return not self.n_forced_known or self.forced_share <= FORCED_SHARE

    @property
    def primary(self) -> bool:
        """p(positive) is the primary measure (module notes)."""
        return self.enough_complete and self.enough_mass and self.few_forced


def decide(n_answers: int, n_complete: int, median_mass: float, n_forced: int, n_forced_known: int
           ) -> PrimaryVerdict:
    """The verdict for one model × use case: ``n_answers`` usable answers, ``n_complete`` of them with a
    complete reading, the allowed answers' ``median_mass`` (NaN: none read), ``n_forced`` forced among
    ``n_forced_known`` answers with a known flag."""
    return PrimaryVerdict(int(n_answers), int(n_complete), float(median_mass), int(n_forced), int(n_forced_known))


def why_sampled(verdict: PrimaryVerdict, measure: str) -> str:
    """The reasons the sampled answers are primary, as clauses of one sentence (``""`` when p is primary)."""
    if verdict.primary:
        return ""
    reasons = []
    if not verdict.enough_complete:
        reasons.append(f"only {verdict.n_complete:,} of {verdict.n_answers:,} answers "
                       f"({_percent(verdict.complete_share)}) have a complete {measure} — the returned "
                       f"log-probabilities account for every allowed answer and its spellings — where {measure} "
                       f"needs {COMPLETE_SHARE:.0%}")
    if not verdict.enough_mass:
        if math.isfinite(verdict.median_mass):
            reasons.append(f"the allowed answers hold a median {_probability(verdict.median_mass)} of the model's "
                           f"probability at the answer, where {measure} needs {MEDIAN_MASS:g}")
        else:
            reasons.append("no answer's log-probabilities were read at the answer")
    if not verdict.few_forced:
        reasons.append(f"{verdict.n_forced:,} of {verdict.n_forced_known:,} answers ({_percent(verdict.forced_share)}) "
                       f"were forced — the answer token lay more than 5 nats below the model's preferred token — "
                       f"where {measure} allows {FORCED_SHARE:.0%}")
    return "; ".join(reasons)


def _percent(share: float) -> str:
    return f"{100.0 * share:.1f}%" if math.isfinite(share) else "n/a"


def _probability(value: float) -> str:
    """A probability readable at any size: 0.75, 0.031, 1.3e-07."""
    return f"{value:.2g}" if value >= 1e-3 or value == 0 else f"{value:.1e}"
