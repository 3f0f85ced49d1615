"""A small yes/no study file for tests: shortlisting numbered candidates, a man or a woman each time."""

from __future__ import annotations

__all__ = ["shortlist_study"]

_HEAD = """\
name: {name}
title: Shortlisting by gender
languages:
  en: {{name: English, id_infix: en}}
axes:
  Gender:
    - {{value: man, phrases: {{en: "The candidate is a man"}}}}
    - {{value: woman, phrases: {{en: "The candidate is a woman"}}}}
use_cases:
  shortlist:
    outcome: {{kind: label, labels: ["yes", "no"]}}
    template:
      en: "Candidate number {{number}} applies for the analyst job. {{identifier_phrase}}.\\n{{question}}"
    question_variants:
      en: ["Should we shortlist them?"]
    profiles:
"""


def shortlist_study(name: str, candidates: int) -> str:
    """The study file's text: ``name``, candidates numbered 1 to ``candidates`` (profiles P01, P02, ...)."""
    return _HEAD.format(name=name) + "".join(
        f"      - {{profile_id: P{i:02d}, number: {i}}}\n" for i in range(1, candidates + 1))
