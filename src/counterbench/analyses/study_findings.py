"""The study's words in its analysis summary: findings naming languages and use cases as the study does,
and the generic outcome tables' part of the summary (interval methods, marks, findings, descriptions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from counterbench.analyses import outcome_findings, probabilities
from counterbench.analyses import outcome_tables as ot
from counterbench.analyses.direction import favourable_of
from counterbench.analyses.names_sample import names_sample_findings
from counterbench.analyses.noise_decomposition import NOISE_SPEC
from counterbench.analyses.table_registry import registered_summary
from counterbench.studies.base import Study
from counterbench.studies.hooks import hook


def amount_findings_in_study_words(tables: Mapping[str, pd.DataFrame], summary: Mapping[str, Any], study: Study
                             ) -> list[str]:
    """The amount analysis's plain-words findings, naming languages as the study does (``English``, ``Español``)."""
    from counterbench.analyses.findings import findings

    overall = tables.get("cpg_overall")
    if overall is None or overall.empty:
        return list(summary.get("findings") or [])
    present = set(overall["model"].astype(str))
    models = [m for m in summary.get("models", {}) if m in present]
    return findings(tables, models, study_names(study), favourable_of(study))


def study_names(study: Study) -> dict[str, str]:
    """What findings call languages and use cases: the study's names and labels."""
    return {**dict(study.languages), **dict(hook(study, "use_case_labels"))}


def outcome_summary(tables: Mapping[str, pd.DataFrame], study: Study, bootstrap: int, seed: int,
                     finding_gaps: pd.DataFrame) -> dict[str, Any]:
    """The generic tables' part of the summary: interval methods, marks, findings, descriptions, gaps."""
    registered = registered_summary(tables, (*hook(study, "study_tables"), NOISE_SPEC))  # NOISE_SPEC: --repeats
    unsupported = dict(registered["unsupported"])
    named = (*probabilities.PROBABILITY_TABLES, probabilities.DECISION_MEASURES[0])
    decision = {name: frame for name, frame in tables.items() if name in named}
    return {
        "ci_methods": {"outcomes": f"slot-cluster bootstrap, {bootstrap} replicates, seed {seed}: gaps and "
                                   "language shifts ±t·se with the small-sample factor and degrees of freedom "
                                   "(level means: 95% percentile intervals); p from the swap test of matched slots",
                       "crossed_regression": "slot-clustered CR1 standard errors, t with clusters − 1 degrees "
                                             "of freedom",
                       "group_gaps_over_names": "names as a sample of their group: Welch's t over the names' "
                                                "slot-adjusted means, Welch–Satterthwaite degrees of freedom"},
        "marks": probabilities.with_families(outcome_findings.marks_summary(), decision),
        "findings": probabilities.findings_by_measure(
            outcome_findings.outcome_findings(finding_gaps, study_names(study), outcomes=study.outcomes,
                                              favourable=favourable_of(study)),
            decision, study_names(study), favourable_of(study))
        + names_sample_findings(tables.get("group_gaps_over_names"), study_names(study), study.outcomes),
        "tables": ({name: desc for name, (_, desc) in ot.OUTCOME_TABLES.items()} | registered["tables"]
                   | probabilities.descriptions(decision)),
        "unsupported": unsupported,
        "added_tables": registered["added_tables"],
    }
