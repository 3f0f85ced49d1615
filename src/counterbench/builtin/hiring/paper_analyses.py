"""The paper's remaining analyses, from the parsed answers and the main tables of :mod:`.analysis`.

:func:`paper_tables` adds the per-class recoverability and the confusion matrix (App. K.1), the
temperature / repeat stability (App. K.2) the across-model summaries (Figs. 3, 5, 13, Table 14)
and the prompt variants (App. F).
Each table's description is in :data:`PAPER_TABLES`, the reason a table is empty in :data:`REASONS`.
Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from counterbench.builtin.hiring import across_models, prompt_variants, recovery_classes, stability

PAPER_TABLES: dict[str, str] = {
    "hiring_recovery_classes": "recall, precision and F1 of each true class (gender, ethnicity) per marker condition",
    "hiring_confusion": "confusion matrix of the recoverability answers: true class × answer (Cannot determine and "
                        "Unparsed included), counts and row shares",
    "hiring_model_ranking": "models ranked by their mean disparity over settings × prompt variants, with their mean "
                            "deviation from the ideal",
    "hiring_across_models": "mean, minimum and maximum over models of disparity and deviation per setting × prompt "
                            "variant",
    "hiring_rank_first": "how many of the models rank each group first (win rate; mean score), per setting × prompt "
                         "variant and, for Direct Comparison, job category",
    "hiring_job_fit_models": "win rate per ethnicity within male-, female-dominated and neutral jobs, averaged over "
                             "models, and its range",
    "hiring_prompt_variants": "disparity and deviation per prompt variant (--variant) and their change from the "
                              "standard prompts",
    "hiring_stability": "Score & Shortlist repeated at each temperature: the mean score over the first n repeats, "
                        "the mean of repeat n, and the average across-resume variance across repeats",
}
REASONS: dict[str, str] = {
    "hiring_recovery_classes": "needs the recoverability use cases (recover_gender / recover_ethnicity)",
    "hiring_confusion": "needs the recoverability use cases (recover_gender / recover_ethnicity)",
    "hiring_model_ranking": "needs at least two models (it compares models)",
    "hiring_across_models": "needs at least two models (it compares models)",
    "hiring_rank_first": "needs at least two models (it compares models)",
    "hiring_job_fit_models": "needs Direct Comparison answers of at least two models",
    "hiring_prompt_variants": "needs the answers of at least two prompt variants: add e.g. `--variant standard "
                              "--variant no-full-range`",
    "hiring_stability": "needs the same Score & Shortlist prompts answered several times: run them again with "
                        "other `--generation-seed` values, or at other `--temperature` values, into the same store",
}


def paper_tables(frames: Mapping[str, pd.DataFrame], main: Mapping[str, pd.DataFrame],
                 classes: Mapping[str, Sequence[str]], every: Mapping[str, pd.DataFrame] | None = None,
                 ) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """The tables of :data:`PAPER_TABLES` and, for each empty one, why.

    ``frames``: the analysis inputs of :func:`.analysis.frames` (``recover``, ``scores``, ...) of the main
    prompt variant's primary run; ``main``: the tables :func:`.analysis.analyze_hiring` made from them;
    ``every``: the inputs of every prompt variant answered (default ``frames``), and under ``repeats`` the
    scores of every run of the main variant when there are more than the primary one.
    """
    every = every or frames
    recover, scores = frames["recover"], frames["scores"]
    tables: dict[str, pd.DataFrame] = {"hiring_stability": stability.stability(every.get("repeats", scores))}
    summary = main["hiring_bias_summary"]
    many = not summary.empty and summary["model"].nunique() >= 2
    empty = pd.DataFrame()
    tables["hiring_model_ranking"] = across_models.model_ranking(summary) if many else empty
    tables["hiring_across_models"] = across_models.across_model_means(summary) if many else empty
    tables["hiring_rank_first"] = across_models.rank_first(main["hiring_win_rates"], main["hiring_scores"],
                                                           frames["comparisons"]) if many else empty
    tables["hiring_prompt_variants"] = prompt_variants.variant_summary(every["comparisons"], every["scores"])
    fit = main["hiring_job_fit"]
    tables["hiring_job_fit_models"] = across_models.job_fit_over_models(fit) \
        if not fit.empty and fit["model"].nunique() >= 2 else empty
    if recover.empty:
        tables["hiring_recovery_classes"] = tables["hiring_confusion"] = pd.DataFrame()
    else:
        tables["hiring_recovery_classes"] = recovery_classes.class_recoverability(recover, classes)
        tables["hiring_confusion"] = recovery_classes.confusion_matrix(recover, classes)
    unsupported = {name: REASONS[name] for name, table in tables.items() if table.empty}
    return tables, unsupported
