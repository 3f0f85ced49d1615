"""The ``hiring`` study as a Python study (paper "Small Changes, Big Impact: Demographic Bias in LLM-Based
Hiring Through Subtle Sociocultural Markers in Anonymised Resumes").

:class:`HiringStudy` implements the :class:`~counterbench.studies.base.Study` protocol: its prompt
table comes from :func:`.plan.build_prompts` (several identities in one prompt for Direct Comparison:
option ``A`` and ``B`` stand for the augmented or the neutral resume), its use cases declare the
outcome kinds ``choice`` (A / B / Tie), ``score`` (1–100) and ``label`` (gender / ethnicity), and it
brings its own analysis (:meth:`HiringStudy.analyze_tables`) and report sections
(:meth:`HiringStudy.report_sections`). :func:`hiring_study` builds one from user files (other jobs,
resumes, another country's baskets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.builtin.hiring.answers import VERDICTS
from counterbench.builtin.hiring.cli_files import ALIASES, FILE_OPTIONS
from counterbench.builtin.hiring.plan import (
    HiringPlan,
    build_prompts,
    filter_presets,
    full_plan,
    load_inputs,
    prompt_counts,
)
from counterbench.builtin.hiring.prompt_variants import (
    STANDARD,
    check_variants,
    expand_variants,
    load_variants,
    system_text,
    variant_descriptions,
    variant_names,
)
from counterbench.builtin.hiring.prompting import CANNOT, USE_CASES, prompt_texts
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.base import Facet
from counterbench.studies.counts import PromptCounts
from counterbench.studies.options import StudyOptions

TITLE = "Hiring markers"
DESCRIPTION = (
    "Anonymised resumes that differ only in an Additional Information section of sociocultural markers "
    "(languages, activities, volunteering, hobbies) associated with an ethnicity and a gender; each compared "
    "1-vs-1 with its neutral resume in both positions, scored 1-100 among its job's resumes, and read for the "
    "gender and ethnicity it reveals."
)


METHODS = (
    "Each answer is read from its fixed final line (\"### A\", \"### 72\"); answers without a verdict, score or "
    "label are counted in the parse-health table and left out of every other table, nothing is imputed. Direct "
    "Comparison: the resume with markers gets 1 for a win, 0.5 for a tie and 0 for a loss against its job's "
    "neutral resume, averaged over its two positions. Score & Shortlist: a group reaches a job's top when one of "
    "its resumes gets the job's highest score (ties count for every tied group). Every 95% interval resamples "
    "occupations — a job's resumes share its description and its neutral resume, and the jobs of one occupation "
    "share their duties and skills (near-duplicates a model answers alike), so occupations are the independent "
    "unit — with a percentile bootstrap widened by t(C−1)/z · √(C/(C−1)) for C occupations (score differences: "
    "t(C−1) on the bootstrap standard error; a group's score is compared with its jobs' neutral resume, paired "
    "by job). Marks are corrected within each model over its groups × prompt "
    "variants (Benjamini–Hochberg), each from an exact swap test over occupations — score differences together "
    "with their interval's t-test — with 6 occupations at least (fewer cannot reach p ≤ 0.05); a group with "
    "fewer reads \"too few occupations to test\". Disparity, deviation and the Top-Score Rate are not 0 (or "
    "100 %) for a fair but noisy evaluator, so each has its occupation-bootstrap interval and a null reference: "
    "the same metric on the same answers with the markers made to mean nothing (an occupation's comparisons trade "
    "sides with their neutral resumes; a job's scores shuffled among its resumes, one shuffle per occupation), "
    "2,000 draws. The group ordering uses the Friedman "
    "test (models are blocks, groups treatments) and Kendall's W; the rationale effect an exact two-sided sign "
    "test over models, its interval t(m−1) over the m models. Macro-F1 averages the F1 of each true class; "
    "\"Cannot determine\" and unreadable answers count as wrong.")


class HiringStudy:
    """The hiring-markers study over a :class:`~.plan.HiringPlan` (the built-in files by default)."""

    slot_columns: tuple[str, ...] = ("use_case", "axis", "profile_id", "question_variant", "position")
    counterfactual_column: str = "identifier"
    canonical_pairs: Mapping[str, tuple[str, str]] = {}
    languages: Mapping[str, str] = {"en": "English"}

    def __init__(self, plan: HiringPlan | None = None, *, name: str = "hiring", source: str = "built-in",
                 title: str = TITLE, description: str = DESCRIPTION) -> None:
        self.plan = plan or full_plan()
        self.inputs = load_inputs(self.plan)
        self.name = name
        self.title = title
        self.source = source
        self.description = description + f" Marker baskets: {self.inputs.baskets.label}."
        # presets pick jobs and variations by position, so they work on any job and basket file
        self.presets: Mapping[str, Mapping[str, Any]] = filter_presets(self.inputs)
        # what the markers signal (the prompt table's ``axis`` column holds the marker condition)
        self.axes: tuple[str, ...] = ("ethnicity", "gender")
        # the generic matched-gap tables do not apply: the study brings its own analysis
        self.facets: tuple[Facet, ...] = ()
        # prompt variants (``--variant``): standard and those of prompt_variants.yaml or the plan's own file
        # (paper App. F), checked against the study's prompt texts
        variants_file = self.plan.variants_file
        check_variants(load_variants(variants_file), prompt_texts(self.plan.prompts_file),
                       f"prompt variants {Path(variants_file).name if variants_file else 'prompt_variants.yaml'}")
        self.variants: tuple[str, ...] = variant_names(variants_file)
        baskets = self.inputs.baskets
        self.outcomes: dict[str, OutcomeSpec] = {}
        for use_case, (setting, _) in USE_CASES.items():
            if setting == "compare":
                self.outcomes[use_case] = OutcomeSpec("choice", labels=VERDICTS)
            elif setting == "score":
                self.outcomes[use_case] = OutcomeSpec("score", low=1.0, high=100.0)
            else:
                values = baskets.genders if use_case.endswith("gender") else baskets.ethnicities
                self.outcomes[use_case] = OutcomeSpec("label", labels=(*values, CANNOT), positive=values[0])
        self._table: pd.DataFrame | None = None

    def expand(self, variants: Sequence[str] = ("standard",)) -> pd.DataFrame:
        """The full prompt table (presets filter it): ``standard`` and/or prompt variants (:mod:`.prompt_variants`)."""
        if self._table is None:
            self._table = build_prompts(self.plan, self.inputs)
            self._table["study"] = self.name  # a study declared from files keeps its own name
        return expand_variants(self._table, list(variants) or [STANDARD], self.plan.variants_file)

    def prompt_counts(self) -> PromptCounts:
        """The standard table's size from the plan (:func:`.plan.prompt_counts`), without writing a resume."""
        return PromptCounts.of(self._table) if self._table is not None else prompt_counts(self.plan, self.inputs)

    def system_prompt_for(self, use_case: str, variant: str = "standard") -> str:
        setting = USE_CASES.get(self.canonical_use_case(use_case), ("compare", False))[0]
        return system_text(prompt_texts(self.plan.prompts_file)[setting]["system"], setting, variant,
                           self.plan.variants_file)

    def canonical_use_case(self, name: str) -> str:
        return name

    def canonical_identifier(self, name: str) -> str:
        return name

    def analyze_tables(self, results: pd.DataFrame, *, bootstrap: int, seed: int,
                       ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
        """The study's tables and summary entries (``tables`` descriptions, ``unsupported`` reasons)."""
        from counterbench.builtin.hiring.analysis import TABLES, analyze_hiring  # the statistics: only to analyse

        baskets = self.inputs.baskets
        tables, unsupported = analyze_hiring(
            results, bootstrap=bootstrap, seed=seed,
            classes={"gender": baskets.genders, "ethnicity": baskets.ethnicities},
            ablation_order=self.plan.ablation or ("hobbies", "volunteering", "activities", "languages"))
        allowed = dict(self.inputs.lint.allowed) if self.inputs.lint is not None else {}
        methods = METHODS + "".join(f" The template lint allows \"{term}\" on purpose: {reason}."
                                    for term, reason in allowed.items())
        summary = {"tables": dict(TABLES), "unsupported": unsupported, "methods": methods, "sections_from": "hiring",
                   "hiring": {"baskets": baskets.label, "country": baskets.country,
                              "groups": list(baskets.groups), "lint_allowed": allowed,
                              "variants": dict(variant_descriptions(self.plan.variants_file))}}
        return tables, summary

    @property
    def study_options(self) -> StudyOptions:
        """The study's files as options (``audit hiring --jobs FILE``; :mod:`.cli_files`), a file left out the
        built-in one."""
        return StudyOptions(options=FILE_OPTIONS, aliases=ALIASES,
                            build=lambda paths: hiring_study(**{name: str(path) for name, path in paths.items()}))

    def from_study_file(self, data: Mapping[str, Any], path: Path) -> HiringStudy:
        """The hiring study a study file (``study: hiring``) declares from data files (:mod:`.study_file`)."""
        from counterbench.builtin.hiring.study_file import plan_from_study_file

        plan, texts = plan_from_study_file(data, path)
        return HiringStudy(plan, name=texts["name"], source=path.name, title=texts.get("title", TITLE),
                           description=texts.get("description", DESCRIPTION))

    def report_sections(self, ctx: Any) -> list[Any]:
        """The report's hiring sections (:mod:`counterbench.builtin.hiring.sections`)."""
        from counterbench.builtin.hiring.sections import hiring_sections

        return hiring_sections(ctx)


def hiring_study(*, jobs: str | None = None, resumes: str | None = None, baskets: str | None = None,
                 prompts: str | None = None, variants: str | None = None, **coverage: Any) -> HiringStudy:
    """A hiring study over user files (``None``: built-in), e.g. another country's baskets.

    ``coverage`` takes the keys of ``full`` in ``data/presets.yaml`` (``jobs``, ``variations``,
    ``settings``, ``rationale``, ``language_only``, ``recover_jobs``, ``ablation``).
    """
    from counterbench.builtin.hiring.plan import plan_from_mapping

    raw: dict[str, Any] = dict(coverage)
    for key, value in (("jobs_file", jobs), ("resumes_file", resumes), ("baskets_file", baskets),
                       ("prompts_file", prompts), ("variants_file", variants)):
        if value is not None:
            raw[key] = value
    plan = plan_from_mapping(raw, where="hiring_study()", base=full_plan())
    return HiringStudy(plan, source="user files" if any((jobs, resumes, baskets, prompts, variants)) else "built-in")


def build_study() -> HiringStudy:
    """The registry's factory for the built-in study."""
    return HiringStudy()
