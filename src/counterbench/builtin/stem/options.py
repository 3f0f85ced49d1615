"""The STEM study's options, one definition for the command line, a study file and Python.

``counterbench audit stem --convention paper --truncated drop --shap tree --max-tokens-ranking 64``; in a
study file ``study: stem`` with ``convention: paper`` (paths relative to the file); from Python
``StemStudy(convention="paper", max_tokens_ranking=64)``. ``counterbench studies`` lists them (the
generic hook: :mod:`counterbench.studies.options`). The first four are read when the answers are
analysed (give them to ``analyze``/``report --store`` too); the token limits and the problem files
change the prompts.
"""

from __future__ import annotations

from counterbench.builtin.stem.conventions import CONVENTIONS
from counterbench.builtin.stem.design import RANKING_MAX_TOKENS, TRUNCATED_MODES
from counterbench.outcomes.readability import MATH_MODES
from counterbench.studies.options import StudyOption

#: how ``stem_shap`` attributes: ``linear`` (exact, the default) or ``tree`` (TreeSHAP, the ``shap`` extra); here,
#: not in :mod:`.analysis`, so that listing the options does not load the statistics
SHAP_METHODS = ("linear", "tree")

#: the options, by name (:class:`~.study.StemStudy` builds the study from them)
OPTIONS = {
    "convention": StudyOption("the bias table's z, MAB and extreme level: docs/stem.md", "choice", CONVENTIONS,
                              CONVENTIONS[0]),
    "truncated": StudyOption("what happens to explanations cut at the token limit (score: as the paper)", "choice",
                             TRUNCATED_MODES, TRUNCATED_MODES[0]),
    "shap": StudyOption("how stem_shap attributes (tree: TreeSHAP, the shap extra)", "choice", SHAP_METHODS,
                        SHAP_METHODS[0]),
    "readability-math": StudyOption("how maths in an explanation is scored for readability", "choice", MATH_MODES,
                                    MATH_MODES[0]),
    "max-tokens-ranking": StudyOption("output tokens a ranking prompt asks for (a reasoning model needs more)",
                                      "whole", default=RANKING_MAX_TOKENS),
    "max-tokens-generation": StudyOption("output tokens a generation prompt asks for (the paper's 512)", "whole",
                                         default=512),
    "math": StudyOption("your MATH copy (its folder or a JSONL file); default: the built-in problems", "path"),
    "jeebench": StudyOption("your JEEBench dataset.json (or JSONL); default: none", "file"),
}

