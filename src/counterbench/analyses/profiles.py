"""Analysis profiles: ``default`` (the correct rules) and ``rupeebias-v1`` (the release's quirks).

Spec ``rupeebias.md`` §2–3. A profile is a small bundle of switches, so every place that differs
between the two profiles reads one named field instead of branching on the profile's name.

=========================  =============================  ======================================
switch                     ``default``                    ``rupeebias-v1`` (the release)
=========================  =============================  ======================================
counter-offer value        the counter-offer (INR/yr)     markup % over the offer,
                                                          ``(counter − offered)/offered × 100``
Δ% when a + b ≤ 0          NaN (undefined)                kept when a + b < 0 (negative Δ%, the
                                                          "signed mean"); NaN only at a + b = 0
duplicate answers          mean of the duplicates' values first row of (identifier, profile,
 (same model and cell)                                    question variant) in store order, then
                                                          missing values dropped
out-of-range values        excluded (treated as missing)  kept (the release kept every value)
fully tied W matrix        W = 0, p = 1, counted          dropped from the means
MOG interval               none: a maximum of noisy gaps  fixed pair (the observed top/bottom)
                           is biased up (descriptive)
language moderation ρ      per use case, then averaged    identifier means pooled over use cases
identifier means (MOG,     slot-adjusted: a missing       plain means of the available values
 deviation, W, ρ)          answer does not shift them
=========================  =============================  ======================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from counterbench.errors import UserError

__all__ = ["PROFILES", "PROFILE_DESCRIPTIONS", "AnalysisProfile", "get_profile"]


@dataclass(frozen=True)
class AnalysisProfile:
    """The switches of one analysis profile (see the module docstring)."""

    name: str
    counter_offer_markup: bool
    nonpositive: Literal["nan", "keep"]
    dedup: Literal["mean", "first"]
    exclude_out_of_range: bool
    drop_fully_tied: bool
    mog_reselect: bool
    language_rho_per_use_case: bool
    adjust_missing: bool


PROFILES: dict[str, AnalysisProfile] = {
    "default": AnalysisProfile(
        name="default",
        counter_offer_markup=False,
        nonpositive="nan",
        dedup="mean",
        exclude_out_of_range=True,
        drop_fully_tied=False,
        mog_reselect=True,
        language_rho_per_use_case=True,
        adjust_missing=True,
    ),
    "rupeebias-v1": AnalysisProfile(
        name="rupeebias-v1",
        counter_offer_markup=True,
        nonpositive="keep",
        dedup="first",
        exclude_out_of_range=False,
        drop_fully_tied=True,
        mog_reselect=False,
        language_rho_per_use_case=False,
        adjust_missing=False,
    ),
}


#: one sentence per profile, for the report's methods section
PROFILE_DESCRIPTIONS: dict[str, str] = {
    "default": "counterbench's rules: Δ% undefined when a + b ≤ 0; duplicate answers averaged; values outside the "
    "plausibility bounds left out; identifier means adjusted for missing answers; fully tied Kendall's W "
    "matrices counted as W = 0; English–Hinglish ρ per use case.",
    "rupeebias-v1": "the published release's analysis, quirks included: counter-offers as markup % over the "
    "offer with signed relative gaps; first answer kept for duplicates; every value kept; plain identifier "
    "means; fully tied W matrices dropped; English–Hinglish ρ on use cases pooled.",
}


def get_profile(name: str) -> AnalysisProfile:
    """The profile called ``name``; a :class:`UserError` names the known ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise UserError(f"unknown analysis profile {name!r}; use one of: {', '.join(PROFILES)}") from None
