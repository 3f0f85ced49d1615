"""The ``choice`` kind in the matrix: a Python study per design (two applicants, A and B, both orders).

A choice prompt holds two identities, so it is a Python study (YAML has one identity per prompt). Each
option's identity is in ``option_A`` / ``option_B``; what it has of its own (its group, its crossed
attributes) in ``option_A_<column>``, which the analysis maps back to the person chosen. A slot is the
unordered pair in one profile and question, so the two orders of a pair (position bias) share it.

- ``single``: the applicant's origin (Avaland, Borland, Zorland), one axis;
- ``grouped``: six names in two groups (``north`` is planted), facets per name and per group;
- ``crossed``: origin × age, each applicant one combination, facets per attribute.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from counterbench.outcomes import get_kind
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.base import Facet
from counterbench.studies.python_study import PythonStudy
from tests.matrix.planted import CHOICE_QUESTION, NAMES, PLANTED_LEVEL, PROFILES, QUESTIONS, use_case

ORIGINS = ("Avaland", "Borland", PLANTED_LEVEL)
AGES = ("30", "50")


def _choice_spec() -> OutcomeSpec:
    def fail(key: str, problem: str) -> Exception:
        raise AssertionError(f"{key}: {problem}")

    return get_kind("choice").spec({"kind": "choice", "options": ["A", "B"]}, fail)


def _people(design: str) -> list[dict[str, str]]:
    """Each applicant a design offers: ``identifier``, its phrase, and its own attributes."""
    if design == "single":
        return [{"identifier": o, "phrase": f"an applicant from {o}", "origin": o} for o in ORIGINS]
    if design == "grouped":
        return [{"identifier": n, "phrase": n, "group": g} for g, names in NAMES.items() for n in names]
    return [{"identifier": f"{o}, {a}", "phrase": f"a {a}-year-old applicant from {o}", "origin": o, "age": a}
            for o, a in itertools.product(ORIGINS, AGES)]


class ChoiceMatrixStudy(PythonStudy):
    """Which of two applicants a model funds, in one of the matrix's designs."""

    slot_columns = ("variant", "use_case", "language", "pair", "profile_id", "question_variant")

    def __init__(self, design: str) -> None:
        self.design = design
        self.name = f"matrix_choice_{design}"
        self.title = f"Planted choice effect, {design} design"
        self.outcomes: Mapping[str, OutcomeSpec] = {use_case("choice"): _choice_spec()}
        people = _people(design)
        ids = tuple(p["identifier"] for p in people)
        if design == "single":
            self.axes = ("origin",)
            self.facets = (Facet("origin", "identifier", ids, ids[0], "origin", "axis"),)
        elif design == "grouped":
            self.axes = ("name",)
            self.facets = (Facet("name", "identifier", ids, ids[0], "name", "axis"),
                           Facet("name (groups)", "group", tuple(NAMES), next(iter(NAMES)), "name", "group"))
        else:
            self.axes = ("origin", "age")
            self.facets = (Facet("origin", "origin", ORIGINS, ORIGINS[0], None, "attribute"),
                           Facet("age", "age", AGES, AGES[0], None, "attribute"))
        self.people = people

    def rows(self) -> Iterable[Mapping[str, Any]]:
        spec = self.outcomes[use_case("choice")]
        system = get_kind("choice").instruction(spec)
        axis = "name" if self.design == "grouped" else "origin" if self.design == "single" else "crossed"
        for first, second in itertools.combinations(self.people, 2):
            for a, b in ((first, second), (second, first)):
                own = {f"option_{label}_{key}": value for label, person in (("A", a), ("B", b))
                       for key, value in person.items() if key not in ("identifier", "phrase")}
                for profile in PROFILES:
                    for q, question in enumerate(QUESTIONS, start=1):
                        yield {"use_case": use_case("choice"), "language": "en", "axis": axis,
                               "identifier": f"{a['identifier']} vs {b['identifier']}",
                               "profile_id": profile["profile_id"], "question_variant": q,
                               "pair": f"{first['identifier']}|{second['identifier']}",
                               "option_A": a["identifier"], "option_B": b["identifier"], **own, "system": system,
                               "user": f"Two applicants each run {profile['task']}.\nA: {a['phrase']}\n"
                                       f"B: {b['phrase']}\n{CHOICE_QUESTION} {question}"}
