"""The paper's remaining analyses, from the parsed answers and the main tables of :mod:`.analysis`.

:func:`paper_tables` adds the per-class recoverability and the confusion matrix (App. K.1) and the temperature / repeat
stability (App. K.2). Each
table's description is in :data:`PAPER_TABLES`, and the reason a table is empty in :data:`REASONS`.
Pure: frames in, frames out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from counterbench.builtin.hiring import recovery_classes, stability

PAPER_TABLES: dict[str, str] = {
    "hiring_recovery_classes": "recall, precision and F1 of each true class (gender, ethnicity) per marker condition",
    "hiring_confusion": "confusion matrix of the recoverability answers: true class × answer (Cannot determine and "
                        "Unparsed included), counts and row shares",
    "hiring_stability": "Score & Shortlist repeated at each temperature: the mean score over the first n repeats, "
                        "the mean of repeat n, and the average across-resume variance across repeats",
}
REASONS: dict[str, str] = {
    "hiring_recovery_classes": "needs the recoverability use cases (recover_gender / recover_ethnicity)",
    "hiring_confusion": "needs the recoverability use cases (recover_gender / recover_ethnicity)",
    "hiring_stability": "needs the same Score & Shortlist prompts answered several times: run them again with "
                        "other `--generation-seed` values, or at other `--temperature` values, into the same store",
}


def paper_tables(frames: Mapping[str, pd.DataFrame], classes: Mapping[str, Sequence[str]],
                 ) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """The tables of :data:`PAPER_TABLES` and, for each empty one, why.

    ``frames``: the analysis inputs of :func:`.analysis.frames` (``recover``, ``scores``, ...).
    """
    recover, scores = frames["recover"], frames["scores"]
    tables: dict[str, pd.DataFrame] = {"hiring_stability": stability.stability(scores)}
    if recover.empty:
        tables["hiring_recovery_classes"] = tables["hiring_confusion"] = pd.DataFrame()
    else:
        tables["hiring_recovery_classes"] = recovery_classes.class_recoverability(recover, classes)
        tables["hiring_confusion"] = recovery_classes.confusion_matrix(recover, classes)
    unsupported = {name: REASONS[name] for name, table in tables.items() if table.empty}
    return tables, unsupported
