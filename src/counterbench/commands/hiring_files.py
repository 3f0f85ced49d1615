"""``--jobs``, ``--resumes``, ``--baskets``, ``--prompts``: the hiring study over your own files from the CLI.

``counterbench audit hiring --jobs jobs.jsonl --resumes resumes.jsonl --baskets baskets.yaml`` (and the
same options of ``counterbench prompts``) builds the study :func:`~counterbench.builtin.hiring.study.hiring_study`
builds in Python; a file left out is the built-in one. Presets pick jobs and variations by position, so
``--preset quick`` works on any job file. A study file (``study: hiring``) names its files itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from counterbench.errors import UserError

if TYPE_CHECKING:
    from counterbench.studies.base import Study

JobsOpt = Annotated[Path | None, typer.Option(
    "--jobs", help="Hiring study: your job descriptions (JSONL; docs/hiring.md); default: the built-in 100.")]
ResumesOpt = Annotated[Path | None, typer.Option(
    "--resumes", help="Hiring study: one neutral resume per job (JSONL); default: the built-in ones.")]
BasketsOpt = Annotated[Path | None, typer.Option(
    "--baskets", help="Hiring study: marker baskets (YAML or JSONL), e.g. another country's; default: Singapore.")]
PromptTextsOpt = Annotated[Path | None, typer.Option(
    "--prompts", "--prompt-texts", help="Hiring study: its prompt texts (the prompts.yaml format); default: built-in.")]


def study_with_files(study: str, *, jobs: Path | None = None, resumes: Path | None = None,
                     baskets: Path | None = None, prompts: Path | None = None) -> str | Study:
    """``study`` itself without hiring files; with them, the hiring study over those files."""
    given = {flag: path for flag, path in (("--jobs", jobs), ("--resumes", resumes), ("--baskets", baskets),
                                            ("--prompts", prompts)) if path is not None}
    if not given:
        return study
    flag = next(iter(given))
    if study != "hiring":
        if study.endswith((".yaml", ".yml")):
            raise UserError(f"{flag} cannot be combined with the study file {study}: a study file names its own "
                            "files (jobs:, resumes:, baskets:, prompts:)")
        raise UserError(f"{flag} is an option of the hiring study (`counterbench audit hiring {flag} FILE`); "
                        f"study {study} takes no such file")
    for flag, path in given.items():
        if not path.is_file():
            raise UserError(f"{flag} {path}: no such file")
    from counterbench.builtin.hiring.study import hiring_study

    study_object = hiring_study(jobs=str(jobs) if jobs else None, resumes=str(resumes) if resumes else None,
                                baskets=str(baskets) if baskets else None, prompts=str(prompts) if prompts else None)
    return cast("Study", study_object)  # the registry treats every built-in study as a Study the same way
