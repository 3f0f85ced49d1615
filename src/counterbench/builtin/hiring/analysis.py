"""The hiring study's analysis: stored answers -> every table (paper "Small Changes, Big Impact" §3.4–4.3).

:func:`analyze_hiring` takes a results frame (one row per response: the prompt table's design columns,
``model``, ``use_case`` and the raw ``response``), re-parses each answer from its fixed final line with
:mod:`.answers` (the raw text is kept, so this is always possible) and returns the tables by name plus
the reasons a table is empty. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from counterbench.builtin.hiring import controls, metrics, noise_floor, ordering, recoverability
from counterbench.builtin.hiring.answers import parse_label, parse_score, parse_verdict, rationale_chars
from counterbench.builtin.hiring.paper_analyses import PAPER_TABLES, paper_tables
from counterbench.builtin.hiring.prompt_variants import split_variants
from counterbench.builtin.hiring.recoverability import CANNOT
from counterbench.builtin.hiring.resumes import cumulative_conditions
from counterbench.builtin.hiring.stability import primary_run
from counterbench.models.base import RETRYABLE_STATUSES

#: table name -> one-line description (the report and ``summary.json`` use these)
TABLES: dict[str, str] = {
    "hiring_win_rates": "Direct Comparison win rate per group vs the neutral resume (ideal 0.5), job-bootstrap CIs",
    "hiring_top_score_rates": "Score & Shortlist Top-Score Rate per group (ideal 100 %), ties counted for every group, "
                              "job-bootstrap CIs and the within-job permutation null",
    "hiring_scores": "mean score per group, its difference from the neutral resume (paired by job, marked) and "
                     "from the mean over the groups (descriptive), occupation-bootstrap CIs",
    "hiring_bias_summary": "normalised disparity and deviation from ideal per model × setting × prompt variant, "
                           "job-bootstrap CIs and the same metric under the swap / permutation null",
    "hiring_relative_advantage": "relative advantage (Value_g − mean)/mean × 100 per group",
    "hiring_group_ranks": "average rank of each group across models (1 = best)",
    "hiring_friedman": "Friedman χ² and Kendall's W of the group ordering across models",
    "hiring_rationale_deltas": "per-model change of disparity and deviation when a rationale is asked for",
    "hiring_rationale_tests": "exact sign test and bootstrap over models of the rationale effect",
    "hiring_job_fit": "win rate by ethnicity within male-, female-dominated and neutral jobs",
    "hiring_recoverability": "macro-F1 of gender and ethnicity recovered from each resume, per marker condition",
    "hiring_ablation": "recoverability as marker categories are removed cumulatively",
    "hiring_length_control": "regression of the outcome on resume length within job × ethnicity",
    "hiring_language_only": "win rate per ethnicity when only the languages line differs from the neutral resume "
                            "(byte-identical prompts counted once)",
    "hiring_position_effect": "share of first-position choices, ties and consistent verdicts",
    "hiring_parse_health": "answers per status and reason (hostile output is classified, never a value), and how "
                           "many wrote a rationale before their final line",
    **PAPER_TABLES,
}
SETTING_OF = {"compare": "compare", "compare_rationale": "compare", "score": "score", "score_rationale": "score",
              "recover_gender": "recover", "recover_ethnicity": "recover"}


def _column(frame: pd.DataFrame, name: str, default: Any) -> pd.Series:
    return frame[name] if name in frame.columns else pd.Series(default, index=frame.index)


def _parse_one(setting: str, text: str, answer_type: str) -> tuple[str, str | None, Any]:
    if setting == "compare":
        parsed = parse_verdict(text)
        value: Any = parsed.unit
    elif setting == "score":
        parsed = parse_score(text)
        value = parsed.value
    else:
        labels = answer_type.split(":", 1)[1].split("|") if ":" in answer_type else []
        parsed = parse_label(text, labels)
        value = parsed.unit
    return parsed.status, parsed.reason, value if parsed.status == "ok" else None


def _parse(results: pd.DataFrame) -> pd.DataFrame:
    """Adds ``setting``, ``hiring_status``, ``hiring_reason``, ``hiring_answer`` (verdict, score or label)."""
    setting = results["use_case"].map(SETTING_OF).astype(str).tolist()
    text = _column(results, "response", None).astype(object).where(lambda s: s.notna(), "").astype(str).tolist()
    answer_type = _column(results, "answer_type", "").astype(str).tolist()
    stored = _column(results, "status", "ok").astype(str).tolist()
    cache: dict[tuple[str, str, str], tuple[str, str | None, Any]] = {}
    status, reason, answer = [], [], []
    for key, kept in zip(zip(setting, text, answer_type, strict=True), stored, strict=True):
        if kept in RETRYABLE_STATUSES:  # no answer, or one that did not finish: a cut-off "### A" is no verdict
            got: tuple[str, str | None, Any] = (kept, kept, None)
        else:
            got = cache.get(key) or cache.setdefault(key, _parse_one(*key))
        status.append(got[0])
        reason.append(got[1])
        answer.append(got[2])
    return results.assign(setting=setting, hiring_status=status,
                          hiring_reason=pd.Series(reason, index=results.index, dtype=object),
                          hiring_answer=pd.Series(answer, index=results.index, dtype=object))


def frames(results: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The analysis inputs (``comparisons``, ``scores``, ``recover``) and the parsed rows (``parsed``)."""
    parsed = _parse(results[results["use_case"].isin(list(SETTING_OF))])
    parsed = parsed.assign(rationale=parsed["use_case"].str.endswith("_rationale"))
    comp = parsed[parsed["setting"].eq("compare")].assign(
        verdict=lambda f: f["hiring_answer"].where(f["hiring_answer"].isin(["A", "B", "Tie"])))
    scores = parsed[parsed["setting"].eq("score")]
    scores = scores.assign(score=pd.to_numeric(scores["hiring_answer"], errors="coerce"))
    recover = parsed[parsed["setting"].eq("recover")].assign(predicted=lambda f: f["hiring_answer"])
    return {"parsed": parsed, "comparisons": comp, "scores": scores, "recover": recover}


def parse_health(parsed: pd.DataFrame) -> pd.DataFrame:
    """Counts per model × use case × status × reason, with how many answers wrote something before their
    final line (``with_rationale``) and the median length of that text in characters."""
    keys = ["model", "use_case", "hiring_status", "hiring_reason"]
    text = _column(parsed, "response", None).tolist()
    chars = pd.Series([rationale_chars(t) if isinstance(t, str) else 0 for t in text], index=parsed.index,
                      dtype="float64")
    frame = parsed.assign(hiring_reason=parsed["hiring_reason"].fillna(""), rationale_chars=chars,
                          has_rationale=chars.gt(0), kept_chars=chars.where(chars.gt(0)))
    out = frame.groupby(keys, sort=False).agg(n=("rationale_chars", "size"), with_rationale=("has_rationale", "sum"),
                                              rationale_median_chars=("kept_chars", "median"))
    out["with_rationale"] = out["with_rationale"].astype("int64")
    return out.reset_index().rename(columns={"hiring_status": "status", "hiring_reason": "reason"})


def analyze_hiring(results: pd.DataFrame, *, bootstrap: int = 5000, seed: int = 0,
                   classes: Mapping[str, Sequence[str]] | None = None,
                   ablation_order: Sequence[str] = ("hobbies", "volunteering", "activities", "languages"),
                   ) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """Every hiring table by name, and ``unsupported``: table -> why it is empty.

    The main tables hold one prompt variant (``--variant``; ``standard`` when it was run) and one run per
    model × use case (:func:`.stability.primary_run`: the default temperature, the first repeat); every
    variant answered is compared in ``hiring_prompt_variants``, every repeat and temperature in
    ``hiring_stability``.
    """
    every = primary_run(results)
    repeats = results
    results, _ = split_variants(every)
    f = frames(results)
    comp, scores, recover = f["comparisons"], f["scores"], f["recover"]
    tables: dict[str, pd.DataFrame] = {}
    unsupported: dict[str, str] = {}
    main = comp[_column(comp, "condition", "all").eq("all")]
    wr = metrics.win_rates(main, n_boot=bootstrap, seed=seed) if not main.empty else pd.DataFrame()
    tsr = metrics.top_score_rates(scores) if not scores.empty else pd.DataFrame()
    floors = []
    if not main.empty:
        floors.append(noise_floor.win_rate_floor(main, n_boot=bootstrap, seed=seed))
    if not tsr.empty:
        tsr_floor, tsr_groups = noise_floor.top_score_floor(scores, n_boot=bootstrap, seed=seed)
        floors.append(tsr_floor)
        tsr = tsr.merge(tsr_groups, on=["model", "rationale", "group"], how="left")
    tables["hiring_win_rates"] = wr
    tables["hiring_top_score_rates"] = tsr
    tables["hiring_scores"] = (metrics.score_means(scores, n_boot=bootstrap, seed=seed) if not scores.empty
                               else pd.DataFrame())
    empty_wr = wr if not wr.empty else pd.DataFrame(columns=["model", "rationale", "group", "win_rate"])
    empty_tsr = tsr if not tsr.empty else pd.DataFrame(columns=["model", "rationale", "group", "tsr"])
    summary = metrics.bias_summary(empty_wr, empty_tsr)
    if floors and not summary.empty:
        summary = summary.merge(pd.concat(floors, ignore_index=True), on=["model", "setting", "rationale"], how="left")
    tables["hiring_bias_summary"] = summary
    rel = []
    if not wr.empty:
        rel.append(metrics.relative_advantage(wr, "win_rate").rename(columns={"win_rate": "value"})
                   .assign(setting="compare"))
    if not tables["hiring_scores"].empty:
        rel.append(metrics.relative_advantage(tables["hiring_scores"], "mean_score")
                   .rename(columns={"mean_score": "value"}).assign(setting="score"))
    tables["hiring_relative_advantage"] = pd.concat(rel, ignore_index=True) if rel else pd.DataFrame()
    ranks, tests = [], []
    for setting, frame, value in (("compare", wr, "win_rate"), ("score", tables["hiring_scores"], "mean_score")):
        if frame.empty:
            continue
        r, t = ordering.group_ordering(frame, value)
        ranks.append(r.assign(setting=setting))
        tests.append(t.assign(setting=setting))
    tables["hiring_group_ranks"] = pd.concat(ranks, ignore_index=True) if ranks else pd.DataFrame()
    friedman = pd.concat(tests, ignore_index=True) if tests else pd.DataFrame()
    tables["hiring_friedman"] = friedman if not friedman.empty and friedman["chi2"].notna().any() else pd.DataFrame()
    deltas, signs = ordering.rationale_effect(summary, n_boot=bootstrap, seed=seed) if not summary.empty else (
        pd.DataFrame(), pd.DataFrame())
    tables["hiring_rationale_deltas"], tables["hiring_rationale_tests"] = deltas, signs
    has_fit = not main.empty and "gender_dominance" in main.columns
    tables["hiring_job_fit"] = controls.job_fit(main) if has_fit else pd.DataFrame()
    tables["hiring_position_effect"] = controls.position_effect(main, n_boot=bootstrap, seed=seed) if not main.empty \
        else pd.DataFrame()
    tables["hiring_length_control"] = controls.length_control(main if not main.empty else None,
                                                              scores if not scores.empty else None)
    tables["hiring_language_only"] = controls.language_only(comp, n_boot=bootstrap, seed=seed) if not comp.empty \
        else pd.DataFrame()
    known = dict(classes or {})
    for attribute, part in (recover.groupby("attribute") if not recover.empty else ()):
        known.setdefault(str(attribute), [c for c in dict.fromkeys(part["truth"]) if c != CANNOT])
    if not recover.empty:
        table = recoverability.recoverability(recover, known)
        tables["hiring_recoverability"] = table
        curve = recoverability.ablation_curve(table, [name for name, _ in cumulative_conditions(ablation_order)])
        steps = curve.groupby(["model", "attribute"])["step"].nunique() if not curve.empty else pd.Series(dtype=int)
        tables["hiring_ablation"] = curve if not steps.empty and steps.max() >= 2 else pd.DataFrame()
    else:
        tables["hiring_recoverability"] = tables["hiring_ablation"] = pd.DataFrame()
    tables["hiring_parse_health"] = parse_health(f["parsed"]) if not f["parsed"].empty else pd.DataFrame()
    reasons = {
        "hiring_win_rates": "needs Direct Comparison answers (use cases compare / compare_rationale)",
        "hiring_top_score_rates": "needs Score & Shortlist answers (use cases score / score_rationale)",
        "hiring_scores": "needs Score & Shortlist answers (use cases score / score_rationale)",
        "hiring_group_ranks": "needs win rates or scores",
        "hiring_friedman": "needs at least two models that answered every group (the test compares models)",
        "hiring_rationale_deltas": "needs both prompt variants (with and without a rationale) for the same models",
        "hiring_rationale_tests": "needs both prompt variants (with and without a rationale) for the same models",
        "hiring_job_fit": "needs Direct Comparison answers",
        "hiring_recoverability": "needs the recoverability use cases (recover_gender / recover_ethnicity)",
        "hiring_ablation": "needs the recoverability answers under at least two of the cumulative marker conditions "
                           "(all, -hobbies, -hobbies-volunteering, ..., none); the quick preset asks with all markers "
                           "only",
        "hiring_language_only": "needs Direct Comparison answers for language-only resumes (condition only-languages)",
        "hiring_position_effect": "needs Direct Comparison answers",
        "hiring_length_control": "needs answers from at least three resumes of different lengths",
        "hiring_relative_advantage": "needs win rates or scores",
        "hiring_bias_summary": "needs win rates or Top-Score Rates",
        "hiring_parse_health": "no answers of the hiring study",
    }
    for name, table in tables.items():
        if table.empty:
            unsupported[name] = reasons[name]
    every_frames = frames(every) if every is not results else f
    if repeats is not every:  # the stability table: every run of the main prompt variant's scores
        scored = repeats[repeats["use_case"].map(SETTING_OF).eq("score")]
        every_frames = {**every_frames, "repeats": frames(split_variants(scored)[0])["scores"]}
    extra, extra_unsupported = paper_tables(f, tables, known, every_frames)  # the paper's remaining analyses
    tables.update(extra)
    unsupported.update(extra_unsupported)
    return tables, unsupported
