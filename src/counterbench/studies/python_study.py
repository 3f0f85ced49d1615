"""A base class for studies written in Python (intersectional profiles, several identities per prompt, ...).

Subclass :class:`PythonStudy`, set the class attributes and implement :meth:`rows`, which returns one
mapping per prompt with at least ``use_case``, ``language``, ``axis``, ``identifier``, ``profile_id``,
``question_variant``, ``system`` and ``user`` plus the columns your design varies (e.g. ``gender``,
``religion``, or ``option_A``/``option_B`` for a choice between two people). The base class numbers the
prompts, fills ``study``, ``variant`` and ``answer_type`` (from :attr:`outcomes`), and checks the
result. Register it under a name through the entry-point group ``counterbench.studies`` (see
``docs/extending.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import pandas as pd

from counterbench.columns import BASE_COLUMNS, VARIANTS
from counterbench.errors import UserError
from counterbench.outcomes import encode
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.base import Facet
from counterbench.studies.options import StudyOption, StudyOptions


class PythonStudy:
    """Defaults for the :class:`~counterbench.studies.base.Study` protocol; override what differs."""

    name: str = "python_study"
    title: str = "A Python study"
    description: str = ""
    source: str = "python"
    languages: Mapping[str, str] = {"en": "English"}
    axes: tuple[str, ...] = ()
    facets: tuple[Facet, ...] = ()
    outcomes: Mapping[str, OutcomeSpec] = {}
    slot_columns: tuple[str, ...] = ("variant", "use_case", "language", "axis", "profile_id", "question_variant")
    counterfactual_column: str = "identifier"
    presets: Mapping[str, Mapping[str, Any]] = {}
    canonical_pairs: Mapping[str, tuple[str, str]] = {}
    fairness_suffix: str | None = None

    def rows(self) -> Iterable[Mapping[str, Any]]:
        """One mapping per (standard) prompt; see the module docstring."""
        raise NotImplementedError

    def expand(self, variants: Sequence[str] = ("standard",)) -> pd.DataFrame:
        for v in variants:
            if v not in VARIANTS:
                raise UserError(f"unknown variant '{v}' (one of: {', '.join(VARIANTS)})")
        base = pd.DataFrame.from_records(list(self.rows()))
        missing = [c for c in ("use_case", "language", "identifier", "system", "user") if c not in base.columns]
        if missing:
            raise UserError(f"study {self.name}: rows() lacks column(s) {', '.join(missing)}")
        for column, default in (("axis", ""), ("profile_id", "P01"), ("question_variant", 1)):
            if column not in base.columns:
                base[column] = default
        unknown = sorted(set(base["use_case"]) - set(self.outcomes))
        if unknown:
            raise UserError(f"study {self.name}: use case {unknown[0]} has no outcome in `outcomes`")
        frames = []
        for variant in variants:
            frame = base.copy()
            if variant == "fairness":
                if self.fairness_suffix is None:
                    raise UserError(f"study {self.name} declares no fairness_suffix, so it has no fairness variant")
                frame["system"] = frame["system"] + self.fairness_suffix
            number = frame.groupby(["use_case", "language"], sort=False).cumcount() + 1
            suffix = "_fair" if variant == "fairness" else ""
            frame["prompt_id"] = [f"{uc}_{lang}_{n:05d}{suffix}" for uc, lang, n in
                                  zip(frame["use_case"], frame["language"], number, strict=True)]
            frame["study"] = self.name
            frame["variant"] = variant
            frame["answer_type"] = frame["use_case"].map(lambda uc: encode(self.outcomes[uc]))
            frames.append(frame)
        table = pd.concat(frames, ignore_index=True)
        design = [c for c in table.columns if c not in BASE_COLUMNS]
        table["question_variant"] = table["question_variant"].astype("int64")
        return table[[*BASE_COLUMNS, *design]]

    def system_prompt_for(self, use_case: str, variant: str = "standard") -> str:
        table = self.expand(("standard",))
        return str(table.loc[table["use_case"] == use_case, "system"].iloc[0])

    def canonical_use_case(self, name: str) -> str:
        if name not in self.outcomes:
            raise UserError(f"unknown use case '{name}' in study {self.name} (one of: {', '.join(self.outcomes)})")
        return name

    def canonical_identifier(self, name: str) -> str:
        return name


class DataFileStudy(PythonStudy):
    """A study whose prompts come from one data file: ``--data FILE`` on the command line, ``data: FILE`` in a
    study file (``study: NAME``, the path relative to the study file). Made without a file it has no prompts
    (its :meth:`rows` says what is needed), but its tables and facets can still analyse a store."""

    #: the ``--data`` option (its help names the file the study reads)
    data_option: StudyOption = StudyOption("the data file the prompts come from")

    def __init__(self, data: Path | None = None) -> None:
        self.data = data
        self.source = "built-in" if data is None else str(data)

    @property
    def study_options(self) -> StudyOptions:
        """``--data FILE``: the published file the prompts come from."""
        return StudyOptions(options={"data": self.data_option}, build=lambda values: type(self)(values.get("data")))

    def from_study_file(self, data: Mapping[str, Any], path: Path) -> Self:
        """A study file ``study: NAME`` with ``data: FILE`` (relative to the study file)."""
        return type(self)(self.study_options.in_study_file(data, study=self.name, path=path).get("data"))
