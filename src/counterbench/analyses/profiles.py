"""Analysis profiles: the ``default`` rules, and the switches a study's own profile may flip.

A profile is a small bundle of switches, so every place that differs between profiles reads one
named field instead of branching on the profile's name. ``default`` is counterbench's; a study whose
published release used other rules ships them as a
:class:`counterbench.parse.profiles.StudyProfile` (the built-in study's release profile documents
each switch it flips), found here by name.
"""

from __future__ import annotations

from counterbench.errors import UserError
from counterbench.parse.profiles import PROFILES as STUDY_PROFILES
from counterbench.parse.profiles import AnalysisProfile, study_profile

__all__ = ["PROFILES", "PROFILE_DESCRIPTIONS", "AnalysisProfile", "get_profile", "profile_description"]


PROFILES: dict[str, AnalysisProfile] = {
    "default": AnalysisProfile(
        name="default",
        rewrite_values=False,
        nonpositive="nan",
        dedup="mean",
        exclude_out_of_range=True,
        drop_fully_tied=False,
        mog_reselect=True,
        language_rho_per_use_case=True,
        adjust_missing=True,
    ),
}


#: one sentence per profile, for the report's methods section
PROFILE_DESCRIPTIONS: dict[str, str] = {
    "default": "counterbench's rules: Δ% undefined when a + b ≤ 0; duplicate answers averaged; values outside the "
    "plausibility bounds left out; identifier means adjusted for missing answers; fully tied Kendall's W "
    "matrices counted as W = 0; the language ρ per use case.",
}


def get_profile(name: str) -> AnalysisProfile:
    """The profile called ``name``; a :class:`UserError` names the known ones otherwise."""
    if name in PROFILES:
        return PROFILES[name]
    if name not in STUDY_PROFILES:
        raise UserError(f"unknown analysis profile {name!r}; use one of: {', '.join([*PROFILES, *STUDY_PROFILES])}")
    return study_profile(name).analysis


def profile_description(name: str) -> str:
    """One sentence on the profile's rules, for the report's methods section."""
    if name in PROFILE_DESCRIPTIONS:
        return PROFILE_DESCRIPTIONS[name]
    return study_profile(name).description
