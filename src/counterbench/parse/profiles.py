"""Rule profiles: ``--parse-profile NAME`` chooses how answers are parsed and analysed.

Every verb parses and analyses with the ``default`` rules unless ``--parse-profile`` names another. A
study whose published release used different rules ships them as a :class:`StudyProfile` — its parser
for the amount answer types and its analysis switches (:class:`AnalysisProfile`) — registered in
:data:`PROFILES` through the entry-point group ``counterbench.profiles``, so the parsing and analysis
layers find it by name without knowing the study.

An analysis profile is a small bundle of switches, so every place that differs between profiles reads
one named field instead of branching on the profile's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from counterbench.errors import UserError
from counterbench.registry import Registry

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.parse.result import ParsedAnswer
    from counterbench.parse.rules import AnswerType

__all__ = ["DEFAULT_PROFILE", "PROFILES", "AnalysisProfile", "StudyProfile", "profile_names", "study_profile"]

DEFAULT_PROFILE = "default"


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


@dataclass(frozen=True)
class StudyProfile:
    """A study's own parse and analysis rules, under one name (``--parse-profile NAME``)."""

    name: str
    #: one sentence for the report's methods section
    description: str
    #: parses one answer of an amount answer type
    parser: Callable[[str | None, AnswerType], ParsedAnswer]
    analysis: AnalysisProfile
    #: rewrites the analysis values (``frame``, indexed like the full ``results`` it came from) before
    #: any other rule, when ``analysis.rewrite_values`` is on
    rewrite_values: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame] | None = None


#: every study's own profile (``default`` is not one of them: it is the parse and analysis layers' own)
PROFILES: Registry[StudyProfile] = Registry("parse profile", "counterbench.profiles")


def profile_names() -> list[str]:
    """``default`` and every study's profile, for messages and option help."""
    return [DEFAULT_PROFILE, *PROFILES.names()]


def study_profile(name: str) -> StudyProfile:
    """The study profile called ``name``; a :class:`UserError` lists the known names otherwise."""
    if not isinstance(name, str) or name not in PROFILES:
        raise UserError(f"unknown parse profile {name!r}; valid profiles: {', '.join(profile_names())}")
    return PROFILES.get(name)
