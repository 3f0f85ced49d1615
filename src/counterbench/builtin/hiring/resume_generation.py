"""Neutral resume templates from any model, resumable and linted (``counterbench hiring resumes``).

1. :func:`plan_resumes` — the jobs (built-in or a user's ``jobs.jsonl``) that have no resume yet in the
   output file; resumes already there (generated earlier, or written or fixed by hand) are kept as
   they are and never asked for again.
2. The generation prompts of those jobs go through the ordinary run engine into a store
   (:func:`default_store`: next to the output file), so every answer is saved as it arrives and a
   stopped run resumes where it stopped; answers that failed (``error``) are re-sent on the next run.
3. :func:`collect_resumes` — each stored answer is cleaned and checked (the Additional Information
   section with its four placeholders, and the lint: no name, pronoun, nationality or basket term).
   Good templates are added to the output file (written through a temporary file and a rename); the
   rejected ones go, with their reason and text, to ``<out>.rejected.jsonl`` for a person to fix.

:func:`generate_resumes` does all three from Python.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.builtin.hiring.data import BasketSet, Job, ResumeTemplate, load_baskets, load_jobs, load_resumes
from counterbench.builtin.hiring.generate import (
    Rejected,
    check_answers,
    generation_table,
    template_rows,
    write_jsonl,
)
from counterbench.builtin.hiring.lint import LintTerms
from counterbench.errors import UserError
from counterbench.models.base import GenerationConfig

#: a resume is a few hundred words: the token limit the generation runs with unless told otherwise
DEFAULT_MAX_TOKENS = 1024


def default_store(out: Path) -> Path:
    """Where the answers are kept: ``resumes.jsonl`` -> ``resumes.generation.db`` in the same folder."""
    return out.with_name(f"{out.stem}.generation.db")


def rejected_path(out: Path) -> Path:
    """Where rejected answers go: ``resumes.jsonl`` -> ``resumes.rejected.jsonl``."""
    return out.with_name(f"{out.stem}.rejected.jsonl")


@dataclass
class ResumePlan:
    """What a generation run has to do."""

    out: Path
    jobs: tuple[Job, ...]
    baskets: BasketSet
    #: templates already in the output file, kept as they are
    existing: list[ResumeTemplate]
    #: the generation prompts of the jobs without a template (empty when every job has one)
    table: pd.DataFrame
    #: the lint's term lists and the terms allowed on purpose (``None``: the built-in lists)
    lint: LintTerms | None = None


def plan_resumes(out: str | Path, *, jobs: str | Path | None = None, baskets: str | Path | None = None,
                 prompts: str | None = None, lint: LintTerms | None = None) -> ResumePlan:
    """Check the files and find the jobs that still need a resume (see the module notes)."""
    target = Path(out)
    if target.is_dir():
        raise UserError(f"--out {target} is a folder; give the resumes file to write, e.g. {target / 'resumes.jsonl'}")
    if not target.parent.is_dir():
        raise UserError(f"cannot write {target}: folder {target.parent} does not exist")
    job_list = load_jobs(jobs)
    basket_set = load_baskets(baskets)
    try:
        has_entries = target.is_file() and bool(target.read_text(encoding="utf-8").strip())
    except UnicodeDecodeError as err:
        raise UserError(f"{target}: not UTF-8 text (byte {err.start}); give a resumes file in JSONL") from None
    existing = list(load_resumes(target)) if has_entries else []
    have = {t.job_id for t in existing}
    todo = [j for j in job_list if j.job_id not in have]
    table = generation_table(todo, prompts) if todo else pd.DataFrame()
    return ResumePlan(target, job_list, basket_set, existing, table, lint)


@dataclass
class ResumeOutcome:
    """What a generation run produced."""

    out: Path
    kept_before: int
    generated: list[ResumeTemplate] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    #: (job_id, why) for jobs whose prompt has no answer yet (failed, or the run stopped first)
    unanswered: list[tuple[str, str]] = field(default_factory=list)
    rejected_file: Path | None = None
    #: where the terms allowed on purpose were recorded (``None``: none allowed)
    allowed_file: Path | None = None

    @property
    def complete(self) -> bool:
        return not self.rejected and not self.unanswered

    def lines(self) -> list[str]:
        total = self.kept_before + len(self.generated)
        out = [f"{total} resume(s) in {self.out}: {len(self.generated)} generated now, {self.kept_before} kept from "
               "before"]
        if self.rejected:
            out.append(f"{len(self.rejected)} rejected, with their reasons and text in {self.rejected_file} (fix one "
                       f"and add it to {self.out.name}, or rerun with another --generation-seed or --temperature):")
            out += [f"  {r.job_id}: {r.reason}" for r in self.rejected]
        if self.allowed_file is not None:
            out.append(f"terms the lint allowed on purpose, with their reasons: {self.allowed_file}")
        if self.unanswered:
            out.append(f"{len(self.unanswered)} without an answer yet (rerun the same command to try again):")
            out += [f"  {job}: {why}" for job, why in self.unanswered]
        return out


def _stored_answers(store: Path, model: str, config: GenerationConfig, prompt_ids: Sequence[str]) -> pd.DataFrame:
    from counterbench.run.results import load_results

    if not store.is_file():
        return pd.DataFrame(columns=["prompt_id", "profile_id", "status", "response", "finish_reason", "error"])
    try:
        frame = load_results(store, [model])
    except UserError:  # nothing of this model stored yet
        return pd.DataFrame(columns=["prompt_id", "profile_id", "status", "response", "finish_reason", "error"])
    wanted = set(prompt_ids)
    mine = frame["prompt_id"].isin(wanted) & frame["config_fp"].eq(config.fingerprint())
    return frame[mine]


def collect_resumes(plan: ResumePlan, store: str | Path, model: str, config: GenerationConfig) -> ResumeOutcome:
    """Check the stored answers of ``plan``'s prompts and write the output and rejected files."""
    outcome = ResumeOutcome(plan.out, kept_before=len(plan.existing))
    if not plan.table.empty:
        answers = _stored_answers(Path(store), model, config, plan.table["prompt_id"].astype(str).tolist())
        by_job = {str(r["profile_id"]): r for r in answers.to_dict("records")}
        usable = []
        for job_id in plan.table["profile_id"].astype(str):
            row = by_job.get(job_id)
            if row is None or row.get("status") == "error":
                why = "not answered yet" if row is None else f"the request failed ({_short(row.get('error'))})"
                outcome.unanswered.append((job_id, why))
            elif row.get("finish_reason") == "length":
                outcome.rejected.append(Rejected(job_id, f"cut off at the token limit ({config.max_tokens} tokens); "
                                                 "rerun with a larger --max-tokens", str(row.get("response") or "")))
            else:
                usable.append({"profile_id": job_id, "response": row.get("response")})
        kept, rejected = check_answers(pd.DataFrame(usable, columns=["profile_id", "response"]), plan.baskets,
                                       plan.lint)
        outcome.generated, outcome.rejected = kept, outcome.rejected + rejected
    order = {j.job_id: i for i, j in enumerate(plan.jobs)}
    every = sorted([*plan.existing, *outcome.generated], key=lambda t: order.get(t.job_id, len(order)))
    if outcome.generated:
        write_jsonl(plan.out, template_rows(every))
    rejected_file = rejected_path(plan.out)
    if outcome.rejected:
        outcome.rejected_file = write_jsonl(rejected_file, [{"job_id": r.job_id, "reason": r.reason, "text": r.text}
                                                            for r in outcome.rejected])
    elif rejected_file.is_file():
        rejected_file.unlink()  # every job it listed has a resume now, or is waiting for an answer
    if plan.lint is not None and plan.lint.allowed:
        outcome.allowed_file = write_allowed(plan.out, plan.lint.allowed)
    return outcome


def allowed_path(out: Path) -> Path:
    """Where the terms allowed on purpose are recorded: ``resumes.jsonl`` -> ``resumes.lint_allowed.yaml``."""
    return out.with_name(f"{out.stem}.lint_allowed.yaml")


def write_allowed(out: Path, allowed: Mapping[str, str]) -> Path:
    """Record each term the lint allowed and why, as a study file's ``lint.allow`` list (paste it there: the
    study lints the templates again when it loads them)."""
    import yaml

    path = allowed_path(out)
    body = yaml.safe_dump({"allow": [{"term": term, "reason": reason} for term, reason in allowed.items()]},
                          allow_unicode=True, sort_keys=False)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(f"# terms the lint allowed on purpose for {out.name}; copy under `lint:` in the study file\n"
                         + body, encoding="utf-8")
    os.replace(temporary, path)
    return path


def _short(error: Any) -> str:
    text = " ".join(str(error or "no detail").split())
    return text if len(text) <= 160 else text[:157] + "..."


def generate_resumes(model: str, out: str | Path, *, jobs: str | Path | None = None,
                     baskets: str | Path | None = None, prompts: str | None = None, store: str | Path | None = None,
                     config: GenerationConfig | None = None, **run_options: Any) -> ResumeOutcome:
    """Generate the missing neutral resumes of ``jobs`` with ``model`` into ``out`` (see the module notes).

    ``run_options`` go to :func:`counterbench.run.runner.run_prompts` (``concurrency``, ``timeout``, ...).
    """
    from counterbench.run.runner import run_prompts

    plan = plan_resumes(out, jobs=jobs, baskets=baskets, prompts=prompts)
    where = Path(store) if store is not None else default_store(plan.out)
    generation = config or GenerationConfig(max_tokens=DEFAULT_MAX_TOKENS)
    if not plan.table.empty:
        run_options.setdefault("retry_errors", True)
        run_prompts(plan.table, [model], store=str(where), config=generation, **run_options)
    return collect_resumes(plan, where, model, generation)
