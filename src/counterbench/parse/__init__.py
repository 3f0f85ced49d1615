"""Answer parsing: numbers (INR, LPA, lakh, crore, %, ranges), refusals, plausibility flags.

Profiles: ``default`` (the correct rules) and any a study brings to recompute its published numbers
(:mod:`counterbench.parse.profiles`; :func:`parse_profiles` lists them). The words
the parsers know live in ``rules.yaml`` (package data). Start with :func:`parse_answer` and
:func:`parse_series`; each module's docstring states its decisions.
"""

from counterbench.parse.api import DEFAULT_PROFILE, parse_answer, parse_profiles, parse_series
from counterbench.parse.result import STATUSES, ParsedAnswer
from counterbench.parse.rules import AnswerType, answer_type_names, resolve_answer_type

__all__ = [
    "DEFAULT_PROFILE",
    "STATUSES",
    "AnswerType",
    "ParsedAnswer",
    "answer_type_names",
    "parse_answer",
    "parse_profiles",
    "parse_series",
    "resolve_answer_type",
]
