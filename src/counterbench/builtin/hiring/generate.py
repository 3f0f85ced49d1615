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
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from counterbench.builtin.hiring.data import BasketSet, Job, ResumeTemplate, load_baskets
from counterbench.builtin.hiring.lint import LintTerms, lint_template
from counterbench.builtin.hiring.prompting import generation_prompts, prompt_texts, token_limits
from counterbench.builtin.hiring.resumes import find_section
from counterbench.errors import UserError

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*$")
_OPENING = re.compile(r"^\s*(sure|certainly|of course|okay|ok|here is|here's|below is|the following)\b[^\n]*$",
                      re.IGNORECASE)
_CLOSING = re.compile(r"^\s*(let me know|i hope|feel free|note:|this resume|if you)", re.IGNORECASE)


def generation_table(jobs: list[Job] | tuple[Job, ...], prompts_file: str | None = None) -> pd.DataFrame:
    """One resume-generation prompt per job (``profile_id`` = ``job_id``)."""
    return generation_prompts(list(jobs), prompt_texts(prompts_file), token_limits(prompts_file))


def clean_answer(text: str) -> str:
    """The answer without Markdown code fences, surrounding blank lines and a model's chatter around the
    resume: a first paragraph such as "Here is the resume:" and a last one such as "Let me know if ..."."""
    lines = [line.rstrip() for line in str(text).replace("\r\n", "\n").split("\n") if not _FENCE.match(line)]
    paragraphs = "\n".join(lines).strip().split("\n\n")
    if len(paragraphs) > 1 and _OPENING.match(paragraphs[0]):
        paragraphs = paragraphs[1:]
    if len(paragraphs) > 1 and _CLOSING.match(paragraphs[-1]) and "[" not in paragraphs[-1]:
        paragraphs = paragraphs[:-1]
    return "\n\n".join(paragraphs).strip() + "\n"


@dataclass(frozen=True)
class Rejected:
    job_id: str
    reason: str
    text: str = ""


def check_answers(answers: pd.DataFrame, baskets: BasketSet | None = None, lint: LintTerms | None = None,
                  ) -> tuple[list[ResumeTemplate], list[Rejected]]:
    """The answers (``profile_id`` = job, ``response``) that make valid, lint-clean templates, and the rest.

    An answer is rejected when it is empty, has no Additional Information section with the four
    placeholders, or carries a name, a pronoun, a nationality or any basket term (the lint; ``lint``: other
    term lists, or terms allowed on purpose, :func:`.lint.load_lint_terms`).
    """
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
            rejected.append(Rejected(job_id, str(err), text))
            continue
        findings = lint_template(text, basket_list, lint)
        if findings:
            first = findings[0]
            rejected.append(Rejected(job_id, f"carries a {first.category} ('{first.term}') on line {first.line}",
                                     text))
            continue
        kept.append(ResumeTemplate(job_id, text, "generated"))
    return kept, rejected


def write_jsonl(path: str | Path, rows: list[dict[str, str]]) -> Path:
    """Write ``rows`` as JSONL through a temporary file and a rename, so a crash never leaves half a file."""
    target = Path(path)
    if not target.parent.is_dir():
        raise UserError(f"cannot write {target}: folder {target.parent} does not exist")
    temporary = target.with_name(f".{target.name}.tmp")
    temporary.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    os.replace(temporary, target)
    return target


def template_rows(templates: list[ResumeTemplate]) -> list[dict[str, str]]:
    return [{"job_id": t.job_id, "text": t.text, "weakness": t.weakness} for t in templates]


def templates_from_answers(answers: pd.DataFrame, out: str | Path, baskets: BasketSet | None = None,
                           ) -> tuple[list[ResumeTemplate], list[Rejected]]:
    """Write the answers that make valid, lint-clean templates to ``out`` (JSONL); return kept and rejected."""
    kept, rejected = check_answers(answers, baskets)
    write_jsonl(out, template_rows(kept))
    return kept, rejected
