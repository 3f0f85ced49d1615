"""``counterbench audit hiring --jobs FILE --resumes FILE --baskets FILE --prompts FILE --variants FILE``.

The hiring study over a team's own files from the command line (and ``counterbench prompts``): the
study :func:`~counterbench.builtin.hiring.study.hiring_study` builds in Python; a file left out is the
built-in one. Presets pick jobs and variations by position, so ``--preset quick`` works on any job
file. Registered in the entry-point group ``counterbench.study_files`` (see
:mod:`counterbench.studies.files`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from counterbench.studies.files import StudyFiles


def _build(paths: dict[str, Path]) -> Any:
    from counterbench.builtin.hiring.study import hiring_study

    return hiring_study(**{name: str(path) for name, path in paths.items()})


STUDY_FILES = StudyFiles(
    options={
        "jobs": "your job descriptions (JSONL; docs/hiring.md); default: the built-in 100",
        "resumes": "one neutral resume per job (JSONL); default: the built-in ones",
        "baskets": "marker baskets (YAML or JSONL), e.g. another country's; default: Singapore",
        "prompts": "the prompt texts (the prompts.yaml format); default: the built-in ones",
        "variants": "the prompt variants --variant chooses from (the prompt_variants.yaml format); default: the "
                    "built-in ones",
    },
    aliases={"prompt-texts": "prompts"},
    build=_build,
)
