"""Profiles a study brings: parse and analysis rules that reproduce that study's published numbers.

Every verb parses and analyses with the ``default`` rules unless ``--parse-profile`` names another. A
study whose published release used different rules ships them as a :class:`StudyProfile` — its parser
for the amount answer types and its analysis switches
(:class:`counterbench.analyses.profiles.AnalysisProfile`) — in a module named in :data:`BUILTIN_PROFILES`,
so the parsing and analysis layers find it by name without knowing the study.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from counterbench.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.analyses.profiles import AnalysisProfile
    from counterbench.parse.result import ParsedAnswer
    from counterbench.parse.rules import AnswerType

__all__ = ["BUILTIN_PROFILES", "DEFAULT_PROFILE", "StudyProfile", "profile_names", "study_profile"]

DEFAULT_PROFILE = "default"
#: profile name -> module whose ``PROFILE`` is that :class:`StudyProfile`
BUILTIN_PROFILES: dict[str, str] = {
    "rupeebias-v1": "counterbench.studies.rupeebias.profile",
}


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


def profile_names() -> list[str]:
    """``default`` and every study's profile, for messages and option help."""
    return [DEFAULT_PROFILE, *BUILTIN_PROFILES]


@functools.cache
def study_profile(name: str) -> StudyProfile:
    """The study profile called ``name``; a :class:`UserError` lists the known names otherwise."""
    module = BUILTIN_PROFILES.get(name)
    if module is None:
        raise UserError(f"unknown parse profile {name!r}; valid profiles: {', '.join(profile_names())}")
    profile: StudyProfile = importlib.import_module(module).PROFILE
    return profile
