"""Analysis profiles: the ``default`` rules, and the switches a study's own profile may flip.

A profile is a small bundle of switches, so every place that differs between profiles reads one
named field instead of branching on the profile's name. ``default`` is counterbench's; a study whose
published release used other rules ships them as a
:class:`counterbench.studies.profiles.StudyProfile` (the built-in study's release profile documents
each switch it flips), found here by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from counterbench.errors import UserError

__all__ = ["PROFILES", "PROFILE_DESCRIPTIONS", "AnalysisProfile", "get_profile", "profile_description"]


@dataclass(frozen=True)
class AnalysisProfile:
    """The switches of one analysis profile (see the module docstring)."""

    name: str
    #: the study profile rewrites values first (:attr:`StudyProfile.rewrite_values`)
    rewrite_values: bool
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
    from counterbench.studies.profiles import BUILTIN_PROFILES, study_profile

    if name not in BUILTIN_PROFILES:
        raise UserError(f"unknown analysis profile {name!r}; use one of: {', '.join([*PROFILES, *BUILTIN_PROFILES])}")
    return study_profile(name).analysis


def profile_description(name: str) -> str:
    """One sentence on the profile's rules, for the report's methods section."""
    if name in PROFILE_DESCRIPTIONS:
        return PROFILE_DESCRIPTIONS[name]
    from counterbench.studies.profiles import study_profile

    return study_profile(name).description
