"""Neutral resumes from any model: the generation prompt table, and the answers turned into templates.

1. :func:`generation_table` — one prompt per job (the ``generation`` prompt of ``data/prompts.yaml``:
   a plausible candidate with minor weaknesses, the four placeholders kept). Run it with any backend
   (``counterbench.run_prompts(table, ["openai:gpt-4o-mini"], store=...)`` or ``counterbench run
   --prompts``).
2. :func:`templates_from_answers` — the stored answers (``prompt_id``/``profile_id``, ``response``)
   become resume templates: code fences and text around the resume are dropped, the Additional
   Information section must hold the four placeholders, and the lint must pass. Good templates are
   written to a ``resumes.jsonl`` the study can load; each rejected answer comes back with its reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from counterbench.errors import UserError
from counterbench.studies.hiring.data import BasketSet, Job, ResumeTemplate, load_baskets
from counterbench.studies.hiring.lint import lint_template
from counterbench.studies.hiring.prompting import generation_prompts, prompt_texts
from counterbench.studies.hiring.resumes import find_section

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*$")


def generation_table(jobs: list[Job] | tuple[Job, ...], prompts_file: str | None = None) -> pd.DataFrame:
    """One resume-generation prompt per job (``profile_id`` = ``job_id``)."""
    return generation_prompts(list(jobs), prompt_texts(prompts_file))


def clean_answer(text: str) -> str:
    """The answer without Markdown code fences and surrounding blank lines."""
    lines = [line.rstrip() for line in str(text).replace("\r\n", "\n").split("\n") if not _FENCE.match(line)]
    return "\n".join(lines).strip() + "\n"


@dataclass(frozen=True)
class Rejected:
    job_id: str
    reason: str


def templates_from_answers(answers: pd.DataFrame, out: str | Path, baskets: BasketSet | None = None,
                           ) -> tuple[list[ResumeTemplate], list[Rejected]]:
    """Write the answers that make valid, lint-clean templates to ``out`` (JSONL); return kept and rejected."""
    if "response" not in answers.columns or "profile_id" not in answers.columns:
        raise UserError("the answers need columns profile_id (the job) and response (the generated resume)")
    kept: list[ResumeTemplate] = []
    rejected: list[Rejected] = []
    basket_list = (baskets or load_baskets()).baskets
    for job_id, response in zip(answers["profile_id"].astype(str), answers["response"], strict=True):
        if not isinstance(response, str) or not response.strip():
            rejected.append(Rejected(job_id, "empty answer"))
            continue
        text = clean_answer(response)
        try:
            find_section(text, where=f"generated resume for {job_id}")
        except UserError as err:
            rejected.append(Rejected(job_id, str(err)))
            continue
        findings = lint_template(text, basket_list)
        if findings:
            first = findings[0]
            rejected.append(Rejected(job_id, f"carries a {first.category} ('{first.term}') on line {first.line}"))
            continue
        kept.append(ResumeTemplate(job_id, text, "generated"))
    path = Path(out)
    if not path.parent.is_dir():
        raise UserError(f"cannot write {path}: folder {path.parent} does not exist")
    path.write_text("".join(json.dumps({"job_id": t.job_id, "text": t.text, "weakness": t.weakness},
                                       ensure_ascii=False) + "\n" for t in kept), encoding="utf-8")
    return kept, rejected
