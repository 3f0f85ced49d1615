"""``counterbench audit hiring --jobs FILE --resumes FILE --baskets FILE --prompts FILE --variants FILE``.

The hiring study over a team's own files from the command line (and ``counterbench prompts``): the
study :func:`~counterbench.builtin.hiring.study.hiring_study` builds in Python; a file left out is the
built-in one. Presets pick jobs and variations by position, so ``--preset quick`` works on any job
file. The study's ``study_options`` (see :mod:`counterbench.studies.options`).
"""

from __future__ import annotations

from counterbench.studies.options import StudyOption

FILE_OPTIONS = {
    "jobs": StudyOption("your job descriptions (JSONL; docs/hiring.md); default: the built-in 100"),
    "resumes": StudyOption("one neutral resume per job (JSONL); default: the built-in ones"),
    "baskets": StudyOption("marker baskets (YAML or JSONL), e.g. another country's; default: Singapore"),
    "prompts": StudyOption("the prompt texts (the prompts.yaml format); default: the built-in ones"),
    "variants": StudyOption("the prompt variants --variant chooses from (the prompt_variants.yaml format); "
                            "default: the built-in ones"),
}
#: another name -> a file option's name
ALIASES = {"prompt-texts": "prompts"}
