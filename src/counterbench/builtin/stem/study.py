"""The ``stem`` study as a built-in Python study (the :class:`~counterbench.studies.base.Study` protocol).

``counterbench prompts stem`` expands the paper's design (:meth:`StemDesign.paper`); the presets are
subsets of that table (``presets.yaml``): ``quick`` keeps 8 sampled profiles per context chosen to cover
as many attribute levels as possible, 2 subjects and 2 generation problems; ``main`` the main experiment's
100 profiles per context; ``paper`` keeps everything.

A user's MATH copy and JEEBench ``dataset.json`` are given through the environment, since a registered
study is built without arguments: ``COUNTERBENCH_STEM_MATH`` (the MATH directory or a JSONL file) and
``COUNTERBENCH_STEM_JEEBENCH`` (``dataset.json``); see ``docs/stem.md``. So are the per-task output-token
limits each prompt asks for, ``COUNTERBENCH_STEM_RANKING_TOKENS`` (16) and
``COUNTERBENCH_STEM_GENERATION_TOKENS`` (512, the paper's); ``--max-tokens`` overrides both at once. So is
the readability maths handling of the analysis, ``COUNTERBENCH_STEM_READABILITY_MATH`` (``raw``, the default,
or ``placeholder``; from Python also ``StemStudy(readability_math=...)``), and what happens to explanations
cut at the token limit, ``COUNTERBENCH_STEM_TRUNCATED`` (``score``, the default and the paper's rule, or
``drop``; from Python ``StemStudy(truncated=...)``), and the bias table's conventions,
``COUNTERBENCH_STEM_CONVENTION`` (``counterbench``, the default, or ``paper``: :mod:`.conventions`; from Python
``StemStudy(convention=...)``), and how ``stem_shap`` attributes, ``COUNTERBENCH_STEM_SHAP`` (``linear``,
exact, the default, or ``tree``: TreeSHAP with the ``shap`` extra; from Python ``StemStudy(shap=...)``), all
read when the answers are analysed.

Use cases: ``ranking`` (outcome ``choice`` over A–E; the prompt table's ``option_<L>`` columns give each
letter's level) and ``generation`` (outcome ``text`` scored by the ``mgl`` readability metric).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import pandas as pd

from counterbench.builtin.stem.analysis import SHAP_METHODS
from counterbench.builtin.stem.conventions import CONVENTIONS
from counterbench.builtin.stem.design import (
    GENERATION_ANSWER_TYPE,
    LETTERS,
    TRUNCATED_MODES,
    StemDesign,
    build_prompt_table,
    presets,
    prompt_texts,
)
from counterbench.builtin.stem.profiles import get_context
from counterbench.errors import UserError
from counterbench.outcomes.base import OutcomeSpec
from counterbench.outcomes.readability import MATH_MODES
from counterbench.studies.base import Facet

MATH_ENV = "COUNTERBENCH_STEM_MATH"
JEEBENCH_ENV = "COUNTERBENCH_STEM_JEEBENCH"
READABILITY_MATH_ENV = "COUNTERBENCH_STEM_READABILITY_MATH"
TRUNCATED_ENV = "COUNTERBENCH_STEM_TRUNCATED"
CONVENTION_ENV = "COUNTERBENCH_STEM_CONVENTION"
SHAP_ENV = "COUNTERBENCH_STEM_SHAP"
#: per-task output-token limits (each prompt's ``requested_max_tokens``; ``--max-tokens`` overrides both)
TOKEN_ENVS = {"ranking_tokens": "COUNTERBENCH_STEM_RANKING_TOKENS",
              "generation_tokens": "COUNTERBENCH_STEM_GENERATION_TOKENS"}


def _env_tokens() -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for name, env in TOKEN_ENVS.items():
        raw = (os.environ.get(env) or "").strip()
        if not raw:
            out[name] = None
            continue
        try:
            out[name] = int(raw)
        except ValueError:
            raise UserError(f"{env} must be a whole number of tokens, got {raw!r}") from None
    return out


def _choice(given: str | None, name: str, env: str, allowed: Sequence[str], what: str) -> str:
    """An analysis option: ``given`` (the constructor's), else ``$env``, else the first of ``allowed``; a value
    outside ``allowed`` is a one-line :class:`~counterbench.errors.UserError` naming where it came from."""
    chosen, source = given, name
    if chosen is None:
        chosen, source = os.environ.get(env) or allowed[0], env
    if chosen not in allowed:
        raise UserError(f"{source} must be one of {', '.join(allowed)} ({what}), got {chosen!r}")
    return chosen


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

    def __init__(self, design: StemDesign | None = None, *, readability_math: str | None = None,
                 truncated: str | None = None, convention: str | None = None, shap: str | None = None) -> None:
        self._readability_math = readability_math
        self._truncated = truncated
        self._convention = convention
        self._shap = shap
        if shap is not None:
            self.shap_method()
        if convention is not None:
            self.convention()
        if readability_math is not None:
            self.readability_math()  # a bad value fails here, not at analysis time
        if truncated is not None:
            self.truncated()
        self.design = design or StemDesign.paper(math_path=os.environ.get(MATH_ENV) or None,
                                                 jeebench_path=os.environ.get(JEEBENCH_ENV) or None, **_env_tokens())
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

    def system_prompt_for(self, use_case: str, variant: str = "standard") -> str:
        return str(prompt_texts()["system"])

    def canonical_use_case(self, name: str) -> str:
        return name

    def canonical_identifier(self, name: str) -> str:
        return name

    def readability_math(self) -> str:
        """How generated maths is scored: the constructor's choice, else ``$COUNTERBENCH_STEM_READABILITY_MATH``,
        else ``raw`` (see :mod:`counterbench.outcomes.readability`)."""
        return _choice(self._readability_math, "readability_math", READABILITY_MATH_ENV, MATH_MODES,
                       "how maths is scored for readability")

    def truncated(self) -> str:
        """What happens to explanations cut at the token limit: the constructor's choice, else
        ``$COUNTERBENCH_STEM_TRUNCATED``, else ``score`` (scored on the text received, as the paper)."""
        return _choice(self._truncated, "truncated", TRUNCATED_ENV, TRUNCATED_MODES,
                       "what happens to explanations cut at the token limit")

    def convention(self) -> str:
        """The bias table's conventions: the constructor's choice, else ``$COUNTERBENCH_STEM_CONVENTION``, else
        ``counterbench`` (``paper``: z within subject, MAB as Eq. 3, Table 4's extreme group)."""
        return _choice(self._convention, "convention", CONVENTION_ENV, CONVENTIONS,
                       "the bias table's z, MAB and extreme level")

    def shap_method(self) -> str:
        """How ``stem_shap`` attributes: the constructor's choice, else ``$COUNTERBENCH_STEM_SHAP``, else
        ``linear`` (exact); ``tree`` (TreeSHAP) needs the ``shap`` extra and says so in one line when missing."""
        chosen = _choice(self._shap, "shap", SHAP_ENV, SHAP_METHODS, "how SHAP attributes the outcome")
        if chosen == "tree":
            missing = []
            for name in ("shap", "sklearn"):
                try:
                    importlib.import_module(name)
                except ImportError:
                    missing.append(name)
            if missing:
                source = "shap" if self._shap is not None else SHAP_ENV
                raise UserError(f"{source}=tree (TreeSHAP) needs the optional packages shap and scikit-learn "
                                f"({' and '.join(missing)} missing): pip install 'counterbench[shap]'")
        return chosen

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


def create_study() -> StemStudy:
    """The registry's factory for ``stem``."""
    return StemStudy()
