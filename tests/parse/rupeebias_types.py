"""The answer type of each RupeeBias use case (and its release aliases), as the study declares it: the parse
tests use the study's own names, the parser takes answer types."""

from __future__ import annotations

import functools

from counterbench.studies.registry import load_study


@functools.cache
def answer_type(use_case: str) -> str:
    """The answer type RupeeBias declares for ``use_case`` (its own name or an alias)."""
    study = load_study("rupeebias")
    return str(study.definition.use_cases[study.canonical_use_case(use_case)].answer_type)
