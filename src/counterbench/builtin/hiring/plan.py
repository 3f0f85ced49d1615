"""What a hiring run covers: the inputs, the presets (``data/presets.yaml``) and the prompt table they make.

:func:`build_prompts` turns a :class:`HiringPlan` into the study's prompt table (the Direct
Comparison, Score & Shortlist and recoverability prompts, see :mod:`.prompting`), after checking every
resume template with the lint. Jobs chosen "by number" are taken round-robin over occupations in file
order (``civeng_1, electech_1, ..., civeng_2, ...``), so a small number still spreads over occupations
and gender dominance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import pandas as pd
import yaml

from counterbench.builtin.hiring.data import (
    CATEGORIES,
    GENDER_DOMINANCE,
    BasketSet,
    Job,
    ResumeTemplate,
    builtin_path,
    load_baskets,
    load_jobs,
    load_resumes,
    pair_jobs_resumes,
)
from counterbench.builtin.hiring.lint import LintTerms, check_templates, load_lint_terms
from counterbench.builtin.hiring.prompting import (
    compare_prompts,
    prompt_keys,
    prompt_texts,
    recover_prompts,
    resume_table,
    score_prompts,
    token_limits,
)
from counterbench.builtin.hiring.resumes import cumulative_conditions, single_conditions
from counterbench.errors import UserError, check_keys
from counterbench.studies.counts import PromptCounts

SETTINGS = ("compare", "score", "recover")
DUPLICATE_IDS = "two prompts got the same id: job ids and basket names must be unique"
ALL = ("all", tuple(CATEGORIES))


@dataclass(frozen=True)
class HiringPlan:
    """Inputs (``None``: built-in files) and coverage of one hiring run."""

    jobs_file: str | None = None
    resumes_file: str | None = None
    baskets_file: str | None = None
    prompts_file: str | None = None
    #: the prompt variants ``--variant`` chooses from (the ``prompt_variants.yaml`` format); None: built-in
    variants_file: str | None = None
    jobs: int | tuple[str, ...] | None = None
    variations: tuple[int, ...] | None = None
    settings: tuple[str, ...] = SETTINGS
    rationale: tuple[bool, ...] = (False, True)
    language_only: bool = True
    recover_jobs: int | tuple[str, ...] | None = 20
    ablation: tuple[str, ...] = ("hobbies", "volunteering", "activities", "languages")
    #: another country's lint lists (``lint_terms.yaml`` keys), extending or replacing the built-in ones
    lint_terms_file: str | None = None
    lint_mode: str = "extend"
    #: lint terms relaxed on purpose: (term, reason) pairs
    lint_allow: tuple[tuple[str, str], ...] = ()
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


@lru_cache(maxsize=1)
def _preset_file() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(builtin_path("presets.yaml").read_text(encoding="utf-8"))
    return data


def full_plan() -> HiringPlan:
    """The complete table the built-in study expands to (``full`` in ``data/presets.yaml``)."""
    return plan_from_mapping(_preset_file()["full"], where="presets.yaml full")


def filter_presets(inputs: HiringInputs | None = None) -> dict[str, dict[str, Any]]:
    """The study's presets: named filters on the full table (``presets`` in ``data/presets.yaml``),
    a preset's ``select`` (jobs and variations by position) resolved against ``inputs``."""
    presets = {}
    for name, spec in _preset_file()["presets"].items():
        preset = {key: value for key, value in spec.items() if key != "select"}
        select = spec.get("select")
        if select and inputs is not None:
            filters = dict(preset.get("filters") or {})
            filters.update(select_by_position(inputs, int(select.get("jobs", 0)), int(select.get("variations", 0))))
            preset["filters"] = filters
        presets[name] = preset
    return presets


def select_by_position(inputs: HiringInputs, jobs: int, variations: int) -> dict[str, list[Any]]:
    """Filters for the first ``jobs`` jobs (in turn over gender dominance) and the first ``variations``
    basket variations (with 0, the neutral resume); 0 keeps all."""
    out: dict[str, list[Any]] = {}
    if jobs:
        by_dominance = [[j for j in inputs.jobs if j.gender_dominance == d] for d in GENDER_DOMINANCE]
        chosen: list[str] = []
        for rank in range(max(len(group) for group in by_dominance)):
            chosen += [group[rank].job_id for group in by_dominance if rank < len(group)]
        out["profile"] = chosen[:jobs]
    if variations:
        order = list(dict.fromkeys(b.variation for b in inputs.baskets.baskets))
        out["question_variant"] = [0, *order[:variations]]
    return out


def plan_from_mapping(raw: Mapping[str, Any], *, where: str = "hiring plan", base: HiringPlan | None = None,
                      ) -> HiringPlan:
    """A plan from a preset-style mapping (unknown keys and bad values are UserErrors)."""
    allowed = {"description", "jobs", "variations", "settings", "rationale", "language_only", "recover_jobs",
               "ablation", "jobs_file", "resumes_file", "baskets_file", "prompts_file", "variants_file"}
    check_keys(raw, sorted(allowed), where)
    plan = base or HiringPlan()
    changes: dict[str, Any] = {}
    for key in ("jobs", "recover_jobs"):
        if key in raw:
            value = raw[key]
            changes[key] = value if isinstance(value, int) and not isinstance(value, bool) else tuple(map(str, value))
    if "variations" in raw:
        changes["variations"] = tuple(int(v) for v in raw["variations"])
    if "settings" in raw:
        bad = [s for s in raw["settings"] if s not in SETTINGS]
        if bad or not raw["settings"]:
            raise UserError(f"{where}: settings must be some of {', '.join(SETTINGS)}, got {raw['settings']}")
        changes["settings"] = tuple(raw["settings"])
    if "rationale" in raw:
        changes["rationale"] = tuple(bool(v) for v in raw["rationale"])
    if "ablation" in raw:
        changes["ablation"] = tuple(map(str, raw["ablation"]))
        if changes["ablation"]:
            cumulative_conditions(changes["ablation"])  # validates the order
    for key in ("language_only",):
        if key in raw:
            changes[key] = bool(raw[key])
    for key in ("description", "jobs_file", "resumes_file", "baskets_file", "prompts_file", "variants_file"):
        if key in raw:
            changes[key] = str(raw[key])
    return replace(plan, **changes)


def _round_robin(jobs: Sequence[Job]) -> list[Job]:
    seen: dict[str, int] = {}
    ranked = []
    for i, job in enumerate(jobs):
        rank = seen.get(job.occupation, 0)
        seen[job.occupation] = rank + 1
        ranked.append((rank, i, job))
    return [job for _, _, job in sorted(ranked, key=lambda t: (t[0], t[1]))]


def select_jobs(jobs: Sequence[Job], choice: int | tuple[str, ...] | None) -> list[Job]:
    """All jobs, the first ``choice`` round-robin over occupations, or the listed job ids."""
    if choice is None:
        return list(jobs)
    if isinstance(choice, int):
        if choice < 1:
            raise UserError(f"the number of jobs must be at least 1, got {choice}")
        return _round_robin(jobs)[:choice]
    known = {j.job_id: j for j in jobs}
    missing = [c for c in choice if c not in known]
    if missing:
        raise UserError(f"unknown job_id '{missing[0]}' (the job file has e.g. {', '.join(list(known)[:3])})")
    return [known[c] for c in choice]


@dataclass(frozen=True)
class HiringInputs:
    jobs: tuple[Job, ...]
    resumes: tuple[ResumeTemplate, ...]
    baskets: BasketSet
    lint: LintTerms | None = None


def load_inputs(plan: HiringPlan) -> HiringInputs:
    """Load and lint the plan's files."""
    jobs, resumes, baskets = load_jobs(plan.jobs_file), load_resumes(plan.resumes_file), load_baskets(plan.baskets_file)
    pair_jobs_resumes(jobs, resumes)
    lint = load_lint_terms(plan.lint_terms_file, mode=plan.lint_mode, allow=dict(plan.lint_allow))
    check_templates(resumes, baskets.baskets, lint)
    return HiringInputs(jobs, resumes, baskets, lint)


def recover_conditions(plan: HiringPlan) -> list[tuple[str, tuple[str, ...]]]:
    """The recoverability conditions: all markers, the cumulative ablation, the single-category ones."""
    if not plan.ablation:
        return [ALL]
    steps = cumulative_conditions(plan.ablation)
    kept_sets = {frozenset(kept) for _, kept in steps}
    return steps + [c for c in single_conditions() if frozenset(c[1]) not in kept_sets]


@dataclass(frozen=True)
class _Parts:
    """What a plan's table is made of: its baskets, jobs, prompt texts and token limits, and its parts
    (setting, the resumes it asks about, rationale) in table order."""

    baskets: BasketSet
    jobs: list[Job]
    texts: dict[str, dict[str, str]]
    limits: dict[str, int]
    parts: list[tuple[str, pd.DataFrame, tuple[bool, ...]]]


def _parts(plan: HiringPlan, inp: HiringInputs, *, texts: bool = True) -> _Parts:
    """The parts of the plan's table (``texts=False``: the resumes without their texts, for counting)."""
    baskets = inp.baskets
    if plan.variations is not None:
        chosen = tuple(b for b in baskets.baskets if b.variation in plan.variations)
        if not chosen:
            raise UserError(f"no basket has variation {', '.join(map(str, plan.variations))}")
        baskets = BasketSet(baskets.name, baskets.country, baskets.label, chosen)
    prompts, limits = prompt_texts(plan.prompts_file), token_limits(plan.prompts_file)
    jobs = select_jobs(inp.jobs, plan.jobs)
    parts: list[tuple[str, pd.DataFrame, tuple[bool, ...]]] = []
    if "compare" in plan.settings or "score" in plan.settings:
        conditions = [ALL, ("only-languages", ("languages",))] if plan.language_only else [ALL]
        resumes = resume_table(jobs, inp.resumes, baskets, conditions, texts=texts)
        if "compare" in plan.settings:
            parts.append(("compare", resumes[resumes["condition"].isin(["neutral", "all"])], plan.rationale))
            if plan.language_only:
                parts.append(("compare", resumes[resumes["condition"].isin(["neutral", "only-languages"])], (False,)))
        if "score" in plan.settings:
            parts.append(("score", resumes[resumes["condition"].isin(["neutral", "all"])], plan.rationale))
    if "recover" in plan.settings:
        recover_jobs = select_jobs(inp.jobs, plan.recover_jobs)
        parts.append(("recover", resume_table(recover_jobs, inp.resumes, baskets, recover_conditions(plan),
                                              texts=texts), ()))
    return _Parts(baskets, jobs, prompts, limits, parts)


def build_prompts(plan: HiringPlan, inputs: HiringInputs | None = None) -> pd.DataFrame:
    """The prompt table of ``plan`` (see the module docstring)."""
    made = _parts(plan, inputs or load_inputs(plan))
    tables = []
    for setting, resumes, rationale in made.parts:
        if setting == "recover":
            tables.append(recover_prompts(resumes, made.baskets, texts=made.texts, limits=made.limits))
        else:
            make = compare_prompts if setting == "compare" else score_prompts
            tables.append(make(resumes, made.jobs, rationale=rationale, texts=made.texts, limits=made.limits))
    table = pd.concat(tables, ignore_index=True)
    if table["prompt_id"].duplicated().any():
        raise UserError(DUPLICATE_IDS)
    return table


def prompt_counts(plan: HiringPlan, inputs: HiringInputs | None = None) -> PromptCounts:
    """What :func:`build_prompts` makes of ``plan``, counted without writing a resume or a prompt: the same
    jobs, baskets and conditions, each prompt's id, use case and identifier (and the same refusal of two
    prompts with one id)."""
    parts = _parts(plan, inputs or load_inputs(plan), texts=False).parts
    keys = [key for setting, resumes, rationale in parts for key in prompt_keys(setting, resumes, rationale=rationale)]
    if len({prompt_id for prompt_id, _, _ in keys}) < len(keys):
        raise UserError(DUPLICATE_IDS)
    return PromptCounts.of_rows(len(keys), (use_case for _, use_case, _ in keys), (group for _, _, group in keys))
