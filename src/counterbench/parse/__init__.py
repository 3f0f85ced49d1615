"""Answer parsing: numbers (INR, LPA, lakh, crore, %, ranges), refusals, plausibility flags.

Implements spec `rupeebias.md` §2. Two profiles: ``default`` (the correct rules) and
``rupeebias-v1`` (the published release's lenient parser, for recomputing its numbers). The words
the parsers know live in ``rules.yaml`` (package data). Start with :func:`parse_answer` and
:func:`parse_series`; each module's docstring states its decisions.
"""

from counterbench.parse.api import DEFAULT_PROFILE, PROFILES, parse_answer, parse_series
from counterbench.parse.result import STATUSES, ParsedAnswer
from counterbench.parse.rules import AnswerType, resolve_answer_type, valid_use_case_names

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "STATUSES",
    "AnswerType",
    "ParsedAnswer",
    "parse_answer",
    "parse_series",
    "resolve_answer_type",
    "valid_use_case_names",
]
