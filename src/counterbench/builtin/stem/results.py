"""Every STEM table from a results frame, with the summary the report reads (the study's analysis hook).

:func:`analyze_results` is what ``counterbench analyze/report/audit stem`` run (through
:meth:`StemStudy.analyze_tables`): the tables of :mod:`.analysis` and :mod:`.analysis_designs`, each
saved under its name, and for every table the data cannot support, a one-line reason saying which run
would fill it (e.g. κ needs two models; the quick preset has no progressive experiment).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd

from counterbench.builtin.stem import analysis as A
from counterbench.builtin.stem import analysis_designs as D
from counterbench.builtin.stem import subgroups as G
from counterbench.builtin.stem import summaries as S
from counterbench.builtin.stem import truncation as T
from counterbench.builtin.stem.headline import extreme_gap_table
from counterbench.outcomes.readability import provenance

#: table name -> what it is (the report's and the CSV folder's vocabulary)
TABLES: dict[str, str] = {
    "stem_descriptive": "Descriptive statistics of the chosen level (MCV) and grade level (MGL) per cell",
    "stem_group_scores": "Mean outcome and mean z per attribute level (z within model × task × context × dataset "
                         "× role)",
    "stem_bias": "Mean absolute bias (MAB) and maximum difference bias (MDB) per attribute, z and raw units",
    "stem_pairwise": "Every pair of levels: Welch t, Cohen's d, BH-FDR, response and profile level side by side",
    "stem_shap": "Mean |SHAP| per attribute and level (exact linear SHAP on one-hot attributes)",
    "stem_shap_points": "Per-response SHAP values by attribute (a seeded sample, for the beeswarm)",
    "stem_shap_refused": "Cells whose SHAP attribution is refused, with the reason (design rank, profiles, variance)",
    "stem_kappa": "Cohen's κ and linear-weighted κ between models on the ranking task",
    "stem_progressive": "The progressive intersectional experiment: MGL per step",
    "stem_interaction_cells": "Interaction tables at the last step: cell means",
    "stem_interaction_gaps": "Interaction tables: within-row gaps and the extreme-cell gap (Welch)",
    "stem_single_attribute": "Single-attribute replication: mean z per level with 95% intervals",
    "stem_extremes": "Top and bottom profiles by mean z",
    "stem_positions": "Ranking task: share of choices per letter, χ² against uniform",
    "stem_position_interactions": "Ranking task: letter × attribute χ² tests of independence",
    "stem_extreme_gap": "Full intersectionality: the most privileged vs the most marginalised profile (designated "
                        "before the answers), with a null reference over all pairs of profiles",
    "stem_within_gaps": "Gaps inside one level of another attribute (e.g. medium of instruction within IIT), tested "
                        "over profiles",
    "stem_deciles": "Top and bottom tenth of profiles: each level's share there against its share of all profiles "
                    "(a random-tenth χ² test per attribute)",
    "stem_progressive_shap": "SHAP on the progressive experiment: mean |SHAP| per stated attribute and step, with "
                             "a null reference over profiles",
    "stem_single_bias": "Single-attribute replication: MAB and MDB per attribute (descriptive: one wording per "
                        "level)",
    "stem_kappa_average": "Average linear-weighted κ per model pair, with a null reference (profiles shuffled)",
    "stem_truncation": "Generation task: explanations cut at the token limit, share per attribute level",
    "stem_truncation_sensitivity": "Generation task: the gap per attribute (MDB) with cut explanations scored and "
                                   "dropped",
}

WHY_EMPTY: dict[str, str] = {
    "stem_kappa": "needs the ranking task answered by at least two models (run with two --model options)",
    "stem_progressive": "needs the progressive experiment (the paper preset; the quick preset leaves it out)",
    "stem_interaction_cells": "needs the progressive experiment (the paper preset)",
    "stem_interaction_gaps": "needs the progressive experiment (the paper preset)",
    "stem_single_attribute": "needs the single-attribute replication (the paper preset)",
    "stem_shap": "needs an identified linear model in some cell: more profiles than parameters, a one-hot design of "
                 "full rank and an outcome that varies (the refused cells say which failed)",
    "stem_shap_refused": "every cell's SHAP attribution is identified",
    "stem_positions": "needs ranking answers with a valid letter",
    "stem_position_interactions": "needs ranking answers that use at least two different letters",
    "stem_extreme_gap": "needs the progressive experiment (the paper preset)",
    "stem_truncation": "no explanation was cut at the token limit",
    "stem_within_gaps": "needs profiles at both ends of a compared attribute inside the subgroup (e.g. English- and "
                        "Hindi-medium IIT profiles: the main or paper preset)",
    "stem_deciles": "needs at least 20 profiles in a cell (the main or paper preset)",
    "stem_progressive_shap": "needs the progressive experiment (the paper preset)",
    "stem_single_bias": "needs the single-attribute replication (the paper preset)",
    "stem_kappa_average": "needs the ranking task answered by at least two models (run with two --model options)",
    "stem_truncation_sensitivity": "no explanation was cut at the token limit",
}



#: the report's "Methods" paragraph for this study (the generic one describes amount slots)
METHODS = (
    "Each answer is read from its fixed final line (a chosen level, or an explanation scored for reading "
    "level); unreadable answers are counted in the parse-health table and left out of every other table, "
    "nothing is imputed. {truncated} A student profile answers many problems, so the profile — not the prompt — is the "
    "independent unit: comparisons of two levels of an attribute use each profile's mean and a studentized "
    "permutation test over profiles (at least 3 a side); interaction gaps swap matched profiles (exact, at "
    "least 6 pairs); position tables use χ² only when every expected count is at least 5. Marks (*) are "
    "Benjamini–Hochberg corrected within each model's rows of a table; comparisons on too few profiles read "
    "\"too few … to test (n = …)\". The paper's response-level Welch tests are kept as labelled columns.")

TRUNCATED_METHODS = {
    "score": "An explanation cut at the token limit is scored on the text received, as the paper does, and "
             "counted as truncated in parse health and per attribute level (the truncation tables give the gaps "
             "with those explanations dropped).",
    "drop": "Explanations cut at the token limit are left out (the truncated option is drop; the paper scores "
            "them); the truncation tables give the gaps with them scored.",
}


def analyze_results(results: pd.DataFrame, *, math: str = "raw", seed: int = 0, truncated: str = "score",
                    convention: str = "counterbench", shap: str = "linear"
                    ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """(tables, summary) for the STEM study's responses in ``results`` (see module docstring).

    ``truncated``: ``score`` (the paper) scores explanations cut at the token limit, ``drop`` leaves them out
    (:mod:`.truncation` shows both either way). ``convention``: the bias table's z, MAB and extreme level,
    ``counterbench`` or ``paper`` (:mod:`.conventions`). ``shap``: ``linear`` (exact) or ``tree`` (TreeSHAP)."""
    from counterbench.analyses.health import parse_health
    from counterbench.version import __version__

    scored = A.outcome_frame(results, math=math, truncated="score")
    frame = scored if truncated == "score" else T.dropped(scored)
    scores, bias = A.bias_tables(frame, convention=convention, seed=seed)
    shap_table, points = A.shap_tables(frame, seed=seed, method=shap)
    cells, gaps = D.interaction_tables(frame, seed=seed)
    positions, position_tests = D.position_tables(frame)
    responses = results.assign(usable=results["status"].astype(str).eq("ok"),
                               out_of_range=False)
    tables = {
        "stem_descriptive": A.descriptive(frame),
        "stem_group_scores": scores,
        "stem_bias": bias,
        "stem_pairwise": A.pairwise_tables(frame, seed=seed),
        "stem_shap": shap_table,
        "stem_shap_points": points,
        "stem_shap_refused": A.shap_refusals(frame),
        "stem_kappa": A.kappa_table(frame),
        "stem_progressive": D.progressive_table(frame),
        "stem_interaction_cells": cells,
        "stem_interaction_gaps": gaps,
        "stem_single_attribute": D.single_attribute_table(frame),
        "stem_extremes": D.extremes_table(frame),
        "stem_positions": positions,
        "stem_position_interactions": position_tests,
        "stem_extreme_gap": extreme_gap_table(frame),
        "stem_within_gaps": G.within_gap_table(frame, seed=seed),
        "stem_deciles": G.decile_table(frame, seed=seed),
        "stem_progressive_shap": S.progressive_shap_table(frame, seed=seed),
        "stem_single_bias": S.single_bias_table(frame, seed=seed),
        "stem_kappa_average": S.kappa_average_table(frame, seed=seed),
        "stem_truncation": T.truncation_table(scored),
        "stem_truncation_sensitivity": T.sensitivity_table(scored),
        "parse_health": parse_health(responses),
    }
    unsupported = {name: WHY_EMPTY.get(name, "no scored responses for it yet")
                   for name, table in tables.items() if table.empty}
    models: dict[str, dict[str, Any]] = {}
    for model, part in results.groupby("model", sort=False):
        simulated = bool(part["simulated"].astype(bool).any()) if "simulated" in part.columns else \
            str(model).startswith("sim:")
        models[str(model)] = {"simulated": simulated, "n_responses": len(part),
                              "n_values": int(part["status"].astype(str).eq("ok").sum())}
    summary: dict[str, Any] = {
        "profile": "default",
        "counterbench_version": __version__,
        "analysed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "models": models,
        "simulated": {m: info["simulated"] for m, info in models.items()},
        "bootstrap": {"replicates": 0, "seed": seed},
        "ci_methods": {"stem": "marks: profile-level studentized permutation tests of pairs of levels, MAB "
                               "against its levels shuffled over profiles, exact swap "
                               "tests of interaction gaps over matched profiles, χ² position tests (expected "
                               "count ≥ 5), Benjamini–Hochberg within each model per table; the paper's "
                               "response-level Welch tests with BH over the whole table as labelled columns; 95% "
                               "t-intervals for single-attribute z means (units: problems)"},
        "readability": provenance(math),
        "tables": dict(TABLES),
        "unsupported": unsupported,
        "methods": METHODS.format(truncated=TRUNCATED_METHODS[truncated]),
        "truncated_explanations": truncated,
        "stem_convention": convention,
        "stem_shap_method": shap,
        "notes": [],
    }
    return tables, summary
