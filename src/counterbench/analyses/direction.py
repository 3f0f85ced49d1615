"""Which direction of a gap is favourable, and so who a gap is unfavourable to. Pure.

A study may declare per use case which direction of its outcome favours the person asked about (the study
hook ``favourable``; a study file's ``favourable: higher | lower``): a salary or an approval is favourable
when higher, a rent, a deposit or an interest rate when lower. Without a declaration a finding states the
direction only (who gets more) and names nobody as disadvantaged; impact ratios select the higher side.

Gaps averaged over use cases (``cpg_overall``) take the use cases' common direction; when the use cases
declare different directions (or some declare none) the average names nobody.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from counterbench.errors import UserError
from counterbench.studies.hooks import hook

__all__ = ["FAVOURABLE", "common_direction", "disadvantaged", "favourable_of", "unfavourable_words"]

#: the directions a use case may declare favourable
FAVOURABLE = ("higher", "lower")


def favourable_of(study: object) -> dict[str, str]:
    """The study's declared favourable directions (use case -> ``higher`` / ``lower``); a value that is neither
    is a :class:`~counterbench.errors.UserError`."""
    declared = dict(hook(study, "favourable") or {})
    out: dict[str, str] = {}
    for use_case, value in declared.items():
        text = str(value).strip().lower()
        if text not in FAVOURABLE:
            raise UserError(f"study {getattr(study, 'name', '?')}: favourable for use case {use_case} must be "
                            f"higher or lower, got {value!r}")
        out[str(use_case)] = text
    return out


def common_direction(favourable: Mapping[str, str], use_cases: Iterable[str]) -> str | None:
    """The direction every one of ``use_cases`` declares, or ``None`` when they differ or one declares none."""
    found = {favourable.get(str(u)) for u in use_cases}
    return next(iter(found)) if len(found) == 1 and None not in found else None


def disadvantaged(first: str, second: str, gap: float, direction: str | None) -> str | None:
    """Who a gap of ``first`` vs ``second`` (``gap`` > 0: ``first`` gets more) is unfavourable to under
    ``direction`` (``higher`` / ``lower`` favourable); ``None`` without a direction or a gap."""
    if direction not in FAVOURABLE or not math.isfinite(gap) or gap == 0:
        return None
    more, less = (first, second) if gap > 0 else (second, first)
    return less if direction == "higher" else more


def unfavourable_words(first: str, second: str, gap: float, direction: str | None) -> str:
    """``"; lower is favourable, so the gap is unfavourable to X"`` — empty without a declared direction."""
    who = disadvantaged(first, second, gap, direction)
    return f"; {direction} is favourable, so the gap is unfavourable to {who}" if who is not None else ""
