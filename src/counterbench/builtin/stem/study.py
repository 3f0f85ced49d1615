"""The ``stem`` study as a built-in Python study (the :class:`~counterbench.studies.base.Study` protocol).

``counterbench prompts stem`` expands the paper's design (:meth:`StemDesign.paper`); the presets are
subsets of that table (``presets.yaml``): ``quick`` keeps 8 sampled profiles per context chosen to cover
as many attribute levels as possible, 2 subjects and 2 generation problems; ``main`` the main experiment's
100 profiles per context; ``paper`` keeps everything.

The study's options (:mod:`.options`: the bias table's convention, what happens to explanations cut at
the token limit, how SHAP attributes, how maths is scored, the per-task output-token limits, a user's
MATH copy and JEEBench file) are keyword arguments here, ``--NAME VALUE`` after the study's name on the
command line and keys of a study file (``study: stem``); ``--max-tokens`` (a run option) overrides both
token limits at once.

Use cases: ``ranking`` (outcome ``choice`` over A–E; the prompt table's ``option_<L>`` columns give each
letter's level) and ``generation`` (outcome ``text`` scored by the ``mgl`` readability metric).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.builtin.stem.design import (
    GENERATION_ANSWER_TYPE,
    LETTERS,
    StemDesign,
    build_prompt_table,
    presets,
    prompt_counts,
    prompt_texts,
)
from counterbench.builtin.stem.options import OPTIONS
from counterbench.builtin.stem.profiles import get_context
from counterbench.errors import UserError
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.base import Facet
from counterbench.studies.counts import PromptCounts
from counterbench.studies.options import StudyOptions


def _build(values: dict[str, Any], label: str = "--") -> StemStudy:
    """The study with these options (by option name); ``label`` starts a message about a value."""
    return StemStudy(**{name.replace("-", "_"): value for name, value in values.items()}, label=label)


#: the study's options (:mod:`.options`), read by ``audit``/``prompts``/``analyze``/``report``
STUDY_OPTIONS = StudyOptions(options=OPTIONS, build=_build)


def coverage_pick(profiles: pd.DataFrame, attributes: Sequence[str], k: int) -> list[str]:
    """``k`` profile ids covering as many (attribute, level) pairs as possible (greedy, ties by id order)."""
    rows = profiles.sort_values("profile_id")
    chosen: list[str] = []
    covered: set[tuple[str, str]] = set()
    candidates = {str(r["profile_id"]): {(a, str(r[a])) for a in attributes} for r in rows.to_dict("records")}
    while len(chosen) < min(k, len(candidates)):
        best = max((pid for pid in candidates if pid not in chosen),
                   key=lambda pid: (len(candidates[pid] - covered), -list(candidates).index(pid)))
        chosen.append(best)
        covered |= candidates[best]
    return chosen


class StemStudy:
    """The STEM-explanations study (see module docstring)."""

    name = "stem"
    title = "STEM explanations audit: intersectional student profiles in Indian and American STEM education"
    source = "built-in"
    description = ("Does a model pick simpler explanations, or write simpler ones, for students described as "
                   "rural, low-income, disabled, caste-oppressed, ...? Intersectional profiles (India: 8 attributes; "
                   "USA: 7), a ranking task (choose one of five explanations of levels 1–5) and a generation task "
                   "(write an explanation, scored for readability).")
    slot_columns = ("use_case", "language", "role", "context", "experiment", "question_variant")
    counterfactual_column = "profile_id"
    canonical_pairs: Mapping[str, tuple[str, str]] = {}
    languages: Mapping[str, str] = {"en": "English"}

    study_options = STUDY_OPTIONS

    def __init__(self, design: StemDesign | None = None, *, convention: str | None = None,
                 truncated: str | None = None, shap: str | None = None, readability_math: str | None = None,
                 max_tokens_ranking: int | None = None, max_tokens_generation: int | None = None,
                 math: str | Path | None = None, jeebench: str | Path | None = None, label: str = "") -> None:
        """Options left at ``None`` keep their default (:mod:`.options`); a bad value is a one-line
        :class:`~counterbench.errors.UserError` naming the valid ones (``label`` starts it: ``--`` on the command
        line). The token limits and problem files change ``design`` (default: the paper's)."""
        given = {"convention": convention, "truncated": truncated, "shap": shap, "readability-math": readability_math,
                 "max-tokens-ranking": max_tokens_ranking, "max-tokens-generation": max_tokens_generation,
                 "math": math, "jeebench": jeebench}
        chosen = STUDY_OPTIONS.values({k: v for k, v in given.items() if v is not None}, study="stem", prefix=label)
        self.chosen: dict[str, Any] = {name: chosen.get(name, option.default)
                                        for name, option in STUDY_OPTIONS.options.items()}
        if self.chosen["shap"] == "tree":
            _tree_shap_available(f"{label}shap")
        inputs: dict[str, Any] = {"ranking_tokens": chosen.get("max-tokens-ranking"),
                  "generation_tokens": chosen.get("max-tokens-generation"),
                  "math_path": str(chosen["math"]) if "math" in chosen else None,
                  "jeebench_path": str(chosen["jeebench"]) if "jeebench" in chosen else None}
        if design is None:
            self.design = StemDesign.paper(**inputs)
        else:
            self.design = replace(design, **{k: v for k, v in inputs.items() if v is not None}).validated()
        names: dict[str, None] = {}
        for ctx in self.design.contexts:
            for attr in get_context(ctx).attributes:
                names.setdefault(attr.name, None)
        self.axes = tuple(names)
        self.outcomes: Mapping[str, OutcomeSpec] = {
            "ranking": OutcomeSpec("choice", labels=LETTERS),
            "generation": OutcomeSpec("text", metrics=(GENERATION_ANSWER_TYPE.split(":", 1)[1],)),
        }
        # the generic per-facet tables do not apply (a profile varies every attribute at once); the
        # study's own analysis (:mod:`.analysis`) compares the levels of each attribute
        self.facets: tuple[Facet, ...] = ()

    @cached_property
    def table(self) -> pd.DataFrame:
        return build_prompt_table(self.design)

    @cached_property
    def presets(self) -> Mapping[str, Mapping[str, Any]]:
        out: dict[str, Mapping[str, Any]] = {}
        for name, spec in presets()["presets"].items():
            filters: dict[str, Any] = {}
            if "profiles_per_context" in spec:
                main = self.table[self.table["experiment"].eq("main")]
                ids: list[str] = []
                for ctx in self.design.contexts:
                    part = main[main["context"].eq(ctx)].drop_duplicates("profile_id")
                    ids += coverage_pick(part, list(get_context(ctx).names), int(spec["profiles_per_context"]))
                filters["profile"] = ids
            if "experiments" in spec:
                chosen = self.table[self.table["experiment"].isin(list(spec["experiments"]))]
                filters["profile"] = list(dict.fromkeys(chosen["profile_id"]))
            if "question_variants" in spec:
                filters["question_variant"] = [int(v) for v in spec["question_variants"]]
            out[str(name)] = {"description": str(spec.get("description", "")), "filters": filters}
        return out

    def expand(self, variants: Sequence[str] = ("standard",)) -> pd.DataFrame:
        """The prompt table (the study has one variant, ``standard``)."""
        return self.table[self.table["variant"].isin(list(variants))].reset_index(drop=True)

    def prompt_counts(self) -> PromptCounts:
        """The table's size from the design (:func:`.design.prompt_counts`), without writing a prompt."""
        if "table" in self.__dict__:  # built already (the presets need it)
            return PromptCounts.of(self.expand())
        return prompt_counts(self.design)

    def system_prompt_for(self, use_case: str, variant: str = "standard") -> str:
        return str(prompt_texts()["system"])

    def canonical_use_case(self, name: str) -> str:
        return name

    def canonical_identifier(self, name: str) -> str:
        return name

    def readability_math(self) -> str:
        """How generated maths is scored (``raw``, the default, or ``placeholder``; see
        :mod:`counterbench.outcomes.readability`)."""
        return str(self.chosen["readability-math"])

    def truncated(self) -> str:
        """What happens to explanations cut at the token limit (``score``, the default and the paper's rule)."""
        return str(self.chosen["truncated"])

    def convention(self) -> str:
        """The bias table's conventions (``counterbench``, the default; ``paper``: z within subject, MAB as Eq. 3,
        Table 4's extreme group)."""
        return str(self.chosen["convention"])

    def shap_method(self) -> str:
        """How ``stem_shap`` attributes (``linear``, exact, the default; ``tree``: TreeSHAP, the ``shap`` extra)."""
        return str(self.chosen["shap"])

    def from_study_file(self, data: Mapping[str, Any], path: Path) -> StemStudy:
        """A study file ``study: stem`` whose other keys are the study's options (paths relative to the file)."""
        return _build(STUDY_OPTIONS.in_study_file(data, study="stem", path=path), label="")

    def analyze_tables(self, results: pd.DataFrame, *, bootstrap: int = 0, seed: int = 0
                       ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
        """The study's own analysis (used instead of the generic outcome tables): :mod:`.results`.

        ``bootstrap`` is accepted for the common hook and unused: the STEM tables use t-tests, FDR and
        closed-form SHAP, as the paper does. Maths in the generated texts is scored as
        :meth:`readability_math` says."""
        from counterbench.builtin.stem.results import analyze_results

        return analyze_results(results, math=self.readability_math(), seed=seed, truncated=self.truncated(),
                               convention=self.convention(), shap=self.shap_method())

    def report_sections(self, ctx: Any) -> list[Any]:
        """The study's report sections, one per table: :mod:`.sections` (the paper's tables, in its order)
        with :mod:`.sections_extra` (truncation after the descriptive statistics, the interaction grids and
        the extreme-profile gap after the progressive experiment) and :mod:`.sections_headline` (each after
        the table it extends)."""
        from counterbench.builtin.stem import sections_headline as H
        from counterbench.builtin.stem.sections import stem_sections
        from counterbench.builtin.stem.sections_extra import (
            extreme_gap_section,
            interaction_grid_section,
            truncation_section,
        )

        out = stem_sections(ctx)
        out.insert(1, truncation_section(ctx))
        after = {"stem_kappa": [H.kappa_average_section],
                 "stem_progressive": [interaction_grid_section, extreme_gap_section, H.progressive_shap_section,
                                      H.within_gap_section],
                 "stem_single_attribute": [H.single_bias_section], "stem_extremes": [H.decile_section]}
        for key, makers in after.items():
            keys = [s.key for s in out]
            at = keys.index(key) + 1 if key in keys else len(out)
            out[at:at] = [make(ctx) for make in makers]
        return out


def _tree_shap_available(label: str) -> None:
    """TreeSHAP needs the optional packages shap and scikit-learn: a one-line mistake when they are missing."""
    missing = []
    for name in ("shap", "sklearn"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise UserError(f"{label} tree (TreeSHAP) needs the optional packages shap and scikit-learn "
                        f"({' and '.join(missing)} missing): pip install 'counterbench[shap]'")


def create_study() -> StemStudy:
    """The registry's factory for ``stem``."""
    return StemStudy()
