"""The ``bbq`` study over BBQ's published per-category file (Parrish et al. 2022, "BBQ: A Hand-Built Bias
Benchmark for Question Answering"; ``docs/bbq.md``).

Decisions: one prompt per published example — its context and question, then the three answers as options
``A``–``C`` in the published order — with the ``choice`` kind's instruction as the system prompt. Each
option stands for its answer's role (``target``, ``other``, ``unknown``: :mod:`.data`), so the generic
choice tables compare how often each role is chosen when offered; a slot is one example. The study's own
table, ``bbq_scores`` (:mod:`.scores`), has the published accuracy and bias scores per category.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from counterbench.builtin.bbq.data import LETTERS, ROLES, BBQItem, read_items
from counterbench.errors import UserError
from counterbench.outcomes import get_kind
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.base import Facet
from counterbench.studies.options import StudyOption
from counterbench.studies.python_study import DataFileStudy

ANSWER: OutcomeSpec = get_kind("choice").spec({"kind": "choice", "options": list(LETTERS)},
                                              lambda key, problem: ValueError(f"{key}: {problem}"))
NEEDS_DATA = "study bbq needs one of BBQ's published files: `counterbench audit bbq --data Age.jsonl ...` (docs/bbq.md)"


class BBQStudy(DataFileStudy):
    """BBQ's questions from ``data``; without it the study has no prompts."""

    name = "bbq"
    title = "BBQ questions"
    description = ("BBQ's published questions (Parrish et al. 2022) in ambiguous and disambiguated contexts, three "
                   "answers each; accuracy and the published bias scores per category.")
    outcomes: Mapping[str, OutcomeSpec] = {"answer": ANSWER}
    slot_columns = ("variant", "use_case", "language", "profile_id", "question_variant")
    variants = ("standard",)
    axes = ("bbq",)
    #: how often each answer role is chosen when offered, against the non-target person, within each example
    facets = (Facet("role", "identifier", ROLES, "other", "bbq", "axis"),)

    data_option = StudyOption("one of BBQ's published per-category JSONL files (e.g. Age.jsonl)")

    def __init__(self, data: Path | None = None) -> None:
        super().__init__(data)
        self._items: list[BBQItem] = read_items(data) if data is not None else []

    @property
    def study_tables(self) -> tuple[Any, ...]:
        """``bbq_scores`` (:mod:`.scores`), imported when the analysis asks: it brings the analysis layer, which
        listing or expanding the study does not need."""
        from counterbench.builtin.bbq.scores import SCORES

        return (SCORES,)

    def rows(self) -> Iterable[Mapping[str, Any]]:
        if not self._items:
            raise UserError(NEEDS_DATA)
        system = get_kind("choice").instruction(ANSWER)
        for item in self._items:
            options = "\n".join(f"{x}. {text}" for x, text in zip(LETTERS, item.answers, strict=True))
            yield {"use_case": "answer", "language": "en", "axis": "bbq",
                   "identifier": f"{item.condition} · {item.polarity}",
                   "profile_id": f"{item.category}-{item.example_id}", "question_variant": 1,
                   "bbq_category": item.category, "bbq_label": item.label, "context_condition": item.condition,
                   "question_polarity": item.polarity,
                   **{f"option_{x}": role for x, role in zip(LETTERS, item.roles, strict=True)},
                   "system": system, "user": f"{item.context} {item.question}\n{options}"}

    def expand(self, variants: Sequence[str] = ("standard",)) -> Any:
        for variant in variants:
            if variant not in self.variants:
                raise UserError(f"study bbq has only the standard variant, not {variant!r}")
        return super().expand(variants)


def create_study() -> BBQStudy:
    """The entry point: the study without data (``--data FILE`` gives it its prompts)."""
    return BBQStudy()
