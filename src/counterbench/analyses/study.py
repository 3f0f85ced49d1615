"""One study's analysis from its answers: analyse by outcome kind. Pure: frames in, frames out.

``analyze_study(results, study, ...)`` is what ``counterbench analyze``, ``report``, ``audit`` and the
Python API (:func:`counterbench.analyze`, :func:`counterbench.audit`) all call, once the pipeline has read
the study's rows from the store (:mod:`counterbench.run.study_results`; a store may hold several
studies, they are never pooled). It runs the analysis of the table family of the pair-gap kinds (the amount
family's, found in :data:`.table_families.FAMILIES` by the answers' kinds) on those use cases and the generic
outcome tables
(:mod:`.outcome_tables`, :mod:`.table_registry`) on every use case
(amount ones included, in the amount kind's relative unit), and writes the study's own title,
languages, axes, use cases, canonical pairs and outcome kinds into the summary, from which the report
takes its wording. :func:`analyze_study_by_model` is the same analysis of an amount study one model's
answers at a time (bounded memory), from a function that gives each model's frame.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.analyses import outcome_tables as ot
from counterbench.analyses import probabilities
from counterbench.analyses.answer_checks import answer_checks, primary_probabilities
from counterbench.analyses.families import families_summary, mark_families
from counterbench.analyses.family_analysis import add_family_tables, answer_kinds, kinds_of_answers
from counterbench.analyses.isolation import FailedTables, isolated, merge_failures
from counterbench.analyses.model_summaries import ModelSummary, model_summary
from counterbench.analyses.model_workers import ModelShare, map_in_workers
from counterbench.analyses.noise_decomposition import NOISE_SPEC
from counterbench.analyses.prepare import (
    out_of_range_counts,
    with_excluded_unusable,
    with_out_of_range_note,
)
from counterbench.analyses.profiles import get_profile
from counterbench.analyses.repeats import has_repeats, within_prompt_means
from counterbench.analyses.result import AnalysisResult
from counterbench.analyses.study_findings import amount_findings_in_study_words, outcome_summary, study_names
from counterbench.analyses.study_summary import base_summary, count_other_use_cases, study_summary
from counterbench.analyses.table_families import analysed_kinds, analysing_family, pair_tables_apply
from counterbench.analyses.table_registry import TableInputs, build_registered_tables, build_tables
from counterbench.analyses.test_record import build_test_record, model_records, record_options
from counterbench.errors import UserError
from counterbench.outcomes import has_pair_tables
from counterbench.run.study_results import results_of_study
from counterbench.stats.blas import one_blas_thread
from counterbench.studies.base import Study
from counterbench.studies.hooks import hook


def resolve_study(study: str | Path | Study | None) -> Study:
    from counterbench.studies.registry import load_study

    return load_study(study)


def select_models(results: pd.DataFrame, models: Sequence[str] | None) -> pd.DataFrame:
    """The rows of ``models`` (all rows when ``None``); an unknown model is a :class:`UserError`."""
    if not models:
        return results
    known = [str(m) for m in results["model"].drop_duplicates()] if "model" in results.columns else []
    unknown = [m for m in models if m not in known]
    if unknown:
        raise UserError(f"no responses of model {unknown[0]} in the results (models: {', '.join(known) or 'none'})")
    return results[results["model"].isin(list(models))]


def _is_amount(results: pd.DataFrame) -> pd.Series:
    return answer_kinds(results).map(has_pair_tables).astype(bool)


@one_blas_thread
def analyze_study(
    results: pd.DataFrame,
    study: str | Path | Study | None = None,
    *,
    models: Sequence[str] | None = None,
    profile: str = "default",
    bootstrap: int = 2000,
    seed: int = 0,
    tau: float = 10.0,
    canonical_pairs: Mapping[str, tuple[str, str]] | None = None,
) -> AnalysisResult:
    """Every table of ``study``'s analysis from its results frame (see module docstring)."""
    rules = get_profile(profile)
    the_study = resolve_study(study)
    wanted = list(dict.fromkeys(models)) if models else None
    results = results_of_study(select_models(results, wanted), the_study.name)
    amount_mask = _is_amount(results)
    tables: dict[str, pd.DataFrame] = {}
    summary: dict[str, Any] = {}
    failed = FailedTables()
    amounts_analysed = False  # the amount kind's tables came out (its use cases had usable answers)
    if amount_mask.any():
        pairs = dict(the_study.canonical_pairs) if canonical_pairs is None else dict(canonical_pairs)
        amount_rows = results[amount_mask].reset_index(drop=True)
        try:
            analyze_family = analysing_family(kinds_of_answers(amount_rows)).study_analysis()
            amount = analyze_family(amount_rows, the_study, profile=profile, bootstrap=bootstrap, seed=seed, tau=tau,
                                    canonical_pairs=pairs)
        except UserError as err:
            if amount_mask.all():
                raise
            tables["parse_health"], summary["unsupported"] = _no_amount_answers(amount_rows, profile, err)
        else:
            tables.update(amount.tables)
            summary.update(amount.summary)
            amounts_analysed = True
    generic = results[~amount_mask].reset_index(drop=True)
    own = hook(the_study, "analyze_tables")  # a Python study with its own analysis
    gen_summary: dict[str, Any] = {}
    if not generic.empty and callable(own):  # its tables replace the generic outcome tables
        gen_tables, own_summary = isolated(f"{the_study.name} tables", lambda: own(generic, bootstrap=bootstrap,
                                                                                  seed=seed), lambda: ({}, {}), failed)
        gen_summary = {**base_summary(generic, bootstrap, seed), **own_summary}  # its summary overrides the basics
        mark_families(tables)  # the amount tables' family; the study's own tables keep their own rules
        tables.update(gen_tables)
    elif not results.empty:  # every use case, amount ones too; parse health: the amount analysis's for those
        spoken = ~_finding_covered(amount_mask, the_study)
        # the amount tables' out-of-range rule, here too: an excluded answer is one that could not be used
        gen_tables, gen_summary = _analyze_outcomes(with_excluded_unusable(results, rules), the_study, bootstrap,
                                                    seed, health=generic, finding_rows=spoken, failed=failed,
                                                    shared=tables)
        amount_health = tables.get("parse_health")
        tables.update(gen_tables)
        if amount_health is not None and "parse_health" in gen_tables:  # a mixed study: every use case's health
            tables["parse_health"] = _both_health(amount_health, gen_tables["parse_health"])
    else:  # no generic tables: the amount tables' own family per model
        mark_families(tables)
    add_family_tables(tables, summary, results[~amount_mask], the_study, failed, profile=profile, bootstrap=bootstrap,
                      seed=seed, tau=tau, canonical_pairs=the_study.canonical_pairs if canonical_pairs is None
                      else canonical_pairs)
    if amounts_analysed:  # the amount findings, on the shared family's marks
        summary["findings"] = amount_findings_in_study_words(tables, summary, the_study)
    if gen_summary:
        for key, value in gen_summary.items():
            if key in ("tables", "unsupported", "ci_methods") and key in summary:
                summary[key].update(value)
            elif key == "findings" and isinstance(summary.get(key), list) and isinstance(value, list):
                summary[key] = [*summary[key], *value]
            elif key == "marks" and isinstance(summary.get(key), dict) and isinstance(value, dict):
                summary[key].setdefault("families", {}).update(value.get("families", {}))
            elif key not in summary or key in ("outcome_models",):
                summary[key] = value
    summary.setdefault("marks", {}).setdefault("families", {}).update(families_summary(tables))
    if amount_mask.any() and not amount_mask.all():  # a mixed study: each model's answers of every use case
        count_other_use_cases(summary, with_excluded_unusable(results[~amount_mask], rules))
    summary.update(study_summary(the_study, results))
    # the kinds whose tables came out (an amount use case without a usable answer has none), which choose the
    # report's sections and the gate's rules
    summary["analysed_kinds"] = [k for k in dict.fromkeys(summary["outcome_kinds"].values())
                                 if amounts_analysed or not has_pair_tables(k)]
    summary["model_specs"] = model_specs(results)
    summary["out_of_range"] = out_of_range_counts(results)  # one statement of the rule, every use case's answers
    summary["notes"] = with_out_of_range_note(summary.get("notes") or [], summary["out_of_range"], rules)
    summary["test_record"] = build_test_record(the_study, model_records(results), record_options(
        profile, bootstrap, seed, tau, the_study.canonical_pairs if canonical_pairs is None else canonical_pairs))
    outcomes = getattr(the_study, "outcomes", None) or {}
    isolated("answer_checks", lambda: _add_answer_checks(tables, summary, answer_checks(results, primary_probabilities(
        results, outcomes, tables.get("decision_measures"))), the_study), lambda: None, failed)
    _compare_models(tables, summary, lambda: {str(m): model_summary(part, the_study, profile) for m, part in
                                              results.groupby("model", sort=False, observed=True)},
                    the_study, bootstrap, seed, failed)
    merge_failures(summary, failed)
    return AnalysisResult(tables=tables, summary=summary, study=the_study)


def _no_amount_answers(rows: pd.DataFrame, profile: str, err: UserError) -> tuple[pd.DataFrame, dict[str, str]]:
    """A study mixing kinds whose amount use cases have no usable answer (all refused, unparseable or out of
    range): their parse health, and why the amount tables are missing; the other use cases' tables still
    come out (the amount analysis alone would stop with ``err``)."""
    from counterbench.analyses.health import parse_health
    from counterbench.analyses.prepare import prepare_results

    use_cases = ", ".join(dict.fromkeys(rows["use_case"].astype(str)))
    reason = (f"no usable standard answer in the amount use cases ({use_cases}): every one is missing, refused, "
              f"unparseable, out of range or an error (see parse_health)")
    del err  # its wording speaks of the whole run; here the other use cases have answers
    return parse_health(prepare_results(rows, get_profile(profile)).responses), {"amount_tables": reason}


def _compare_models(tables: dict[str, pd.DataFrame], summary: dict[str, Any],
                    summaries: Callable[[], Mapping[str, ModelSummary]], study: Study, bootstrap: int, seed: int,
                    failed: FailedTables) -> None:
    """``model_differences`` and ``model_ranks`` from every model's slot summaries (:mod:`.model_findings`)."""
    from counterbench.analyses.model_findings import add_model_comparison

    isolated(("model_differences", "model_ranks"), lambda: add_model_comparison(
        tables, summary, summaries(), study, bootstrap=bootstrap, seed=seed), lambda: None, failed)


def model_specs(results: pd.DataFrame) -> dict[str, str]:
    """model -> the model string it was run from (``local:/models/x.gguf`` for ``x``), where it differs."""
    if not {"model", "model_spec"} <= set(results.columns):
        return {}
    pairs = results[["model", "model_spec"]].dropna().drop_duplicates("model")
    return {str(m): str(s) for m, s in zip(pairs["model"], pairs["model_spec"], strict=True) if str(m) != str(s)}


def _add_answer_checks(tables: dict[str, pd.DataFrame], summary: dict[str, Any], checks: pd.DataFrame,
                       study: Study) -> None:
    """The ``answer_checks`` table; its flagged models named first in the findings and left unranked."""
    from counterbench.analyses.answer_checks import DESCRIPTION, check_sentences, unrank

    tables["answer_checks"] = checks
    summary.setdefault("tables", {})["answer_checks"] = DESCRIPTION
    if pair_tables_apply(analysed_kinds(summary, tables)):  # the amount kind's leaderboard
        tables["leaderboard"] = unrank(tables["leaderboard"], checks)
    labels = study_names(study)
    flagged = set(checks.loc[checks["flagged"].astype(bool), "model"].astype(str)) if len(checks) else set()
    kept = [line for line in summary.get("findings") or [] if not _speaks_of(str(line), flagged)]
    summary["findings"] = [*check_sentences(checks, labels), *kept]


def _speaks_of(line: str, models: set[str]) -> bool:
    """Whether a finding is about one of ``models`` (a flagged model's gaps are not findings)."""
    text = line.removeprefix("Largest in a single use case: ")
    return any(text.startswith(f"{m}{end}") for m in models for end in (" ", ":", "'s"))


def _both_health(amounts: pd.DataFrame, others: pd.DataFrame) -> pd.DataFrame:
    """The parse health of a study mixing kinds: the amount use cases' rows (counted under the amount
    rules, e.g. out-of-range values) and the other use cases', in the amount table's columns."""
    if amounts.empty or others.empty:
        return others if amounts.empty else amounts
    columns = list(dict.fromkeys([*amounts.columns, *others.columns]))
    return pd.concat([amounts.reindex(columns=columns), others.reindex(columns=columns)], ignore_index=True)


def only_amounts(study: Study) -> bool:
    """True when every use case of ``study`` has an outcome of the pair-gap tables (an amount: its store can be
    analysed model by model)."""
    outcomes = getattr(study, "outcomes", None) or {}
    return bool(outcomes) and all(has_pair_tables(spec.kind) for spec in outcomes.values())


@one_blas_thread
def analyze_study_by_model(load: Callable[[str], pd.DataFrame], models: Sequence[str], study: str | Path | Study,
                           *, profile: str = "default", bootstrap: int = 2000, seed: int = 0, tau: float = 10.0,
                           canonical_pairs: Mapping[str, tuple[str, str]] | None = None,
                           workers: int = 1) -> AnalysisResult:
    """The analysis of an amount study (:func:`only_amounts`), ``models`` one at a time (its family's
    ``analysis_by_model``; ``load(model)`` gives that model's results of the study), with the study's wording and
    the generic outcome tables; ``workers`` > 1 analyses that many models at once (:mod:`.model_workers`)."""
    the_study = resolve_study(study)
    pairs = dict(the_study.canonical_pairs) if canonical_pairs is None else dict(canonical_pairs)

    rules = get_profile(profile)
    failed = FailedTables()
    shares: dict[str, ModelShare] = {}  # what each model's answers add beside the family's tables

    def checked(model: str) -> pd.DataFrame:  # every model's answers checked, usable or not; its slot summaries kept
        results = load(model)
        summary: ModelSummary = isolated(("model_differences", "model_ranks"), lambda: model_summary(
            results, the_study, profile), dict, failed)
        shares[model] = ModelShare(answer_checks(results), model_specs(results), model_records(results), summary)
        return results

    def outcome_tables(results: pd.DataFrame) -> dict[str, pd.DataFrame]:
        return outcome_table_frames(with_excluded_unusable(results, rules), the_study, bootstrap, seed, failed)

    def map_models(task: Callable[[str], Any], names: Sequence[str]) -> list[Any]:
        def with_share(model: str) -> tuple[Any, ModelShare | None, dict[str, str]]:
            return task(model), shares.get(model), dict(failed.reasons)  # a worker's share comes back with it

        done = map_in_workers(with_share, list(names), workers)
        for model, (_, share, reasons) in zip(names, done, strict=True):
            if share is not None:
                shares[model] = share
            for name, reason in reasons.items():
                failed.reasons.setdefault(name, reason)
        return [out for out, _, _ in done]

    kinds = [spec.kind for spec in (getattr(the_study, "outcomes", None) or {}).values()]
    analyze_by_model = analysing_family(kinds, by_model=True).study_analysis_by_model()
    result = analyze_by_model(checked, list(models), the_study, profile=profile, bootstrap=bootstrap, seed=seed,
                              tau=tau, canonical_pairs=pairs, extra_tables=outcome_tables, map_models=map_models)
    ordered = [shares[m] for m in models if m in shares]
    checks = [share.checks for share in ordered]
    specs = {k: v for share in ordered for k, v in share.specs.items()}
    records = {k: v for share in ordered for k, v in share.records.items()}
    summaries = {m: shares[m].summary for m in models if m in shares}
    mark_families(result.tables)  # one family per model over every table (:mod:`.families`)
    result.summary["findings"] = amount_findings_in_study_words(result.tables, result.summary, the_study)
    _add_outcome_summary(result, the_study, bootstrap, seed)
    health = result.tables.get("parse_health", pd.DataFrame(columns=["language", "use_case"]))
    result.summary.update(study_summary(the_study, health[["language", "use_case"]]))
    result.summary["model_specs"] = specs
    result.summary["test_record"] = build_test_record(the_study, records, record_options(
        profile, bootstrap, seed, tau, pairs))
    isolated("answer_checks", lambda: _add_answer_checks(result.tables, result.summary, pd.concat(
        checks, ignore_index=True) if checks else answer_checks(pd.DataFrame()), the_study), lambda: None, failed)
    _compare_models(result.tables, result.summary, lambda: summaries, the_study, bootstrap, seed, failed)
    merge_failures(result.summary, failed)
    result.study = the_study
    return result


def _pairs_speak_for_amounts(study: Study) -> bool:
    """True when the amount analysis's canonical-pair finding speaks for the amount use cases (a study
    with canonical pairs whose every facet is an axis of identifiers: no groups, no crossed attributes —
    a crossed design's pairs are attribute levels, which the pair analysis of identifiers does not
    compare); otherwise the generic finding speaks for them too."""
    return bool(study.canonical_pairs) and all(f.kind == "axis" for f in study.facets)


def _finding_covered(amount_mask: pd.Series, study: Study) -> pd.Series:
    """Rows whose finding is the canonical-pair finding of the amount analysis (see above)."""
    return amount_mask if _pairs_speak_for_amounts(study) else pd.Series(False, index=amount_mask.index)


def outcome_table_frames(results: pd.DataFrame, study: Study, bootstrap: int, seed: int,
                         failed: FailedTables | None = None) -> dict[str, pd.DataFrame]:
    """The generic outcome tables (:data:`.outcome_tables.OUTCOME_TABLES`) of ``results``' standard rows;
    a table that fails is left empty and named in ``failed`` (:mod:`.isolation`)."""
    failed = failed if failed is not None else FailedTables()
    is_standard = (results["variant"].astype(str).eq("standard") if "variant" in results.columns
                   else pd.Series(True, index=results.index))
    standard = results[is_standard]
    measured = ot.measured_rows(standard, study.outcomes)
    rows = within_prompt_means(measured)  # --repeats: one number per prompt, its repeats' mean
    unusable: pd.DataFrame = (standard.loc[~standard["status"].astype(str).eq("ok")] if "status" in standard.columns
                              else standard.iloc[0:0])
    # the registered tables: per identity and gaps (one bootstrap pass), language shifts, the crossed
    # regression, any a package or a test adds
    tables = build_registered_tables(TableInputs(rows, study, bootstrap, seed, {}, failed=failed,
                                                 unusable=unusable.reset_index(drop=True)))
    if has_repeats(measured):  # --repeats: the noise within prompts, between prompts and between slots
        tables.update(build_tables([NOISE_SPEC], TableInputs(measured, study, bootstrap, seed, tables, failed=failed)))
    # the decision probabilities (label and choice use cases run with --logprobs); none otherwise
    tables.update(isolated(probabilities.PROBABILITY_TABLES, lambda: probabilities.probability_tables(
        standard, study, bootstrap, seed, tables), dict, failed))
    own = tuple(hook(study, "study_tables"))  # the study's own tables, after (and seeing) the generic ones
    if own:
        variant_rows = within_prompt_means(ot.measured_rows(results[~is_standard], study.outcomes))  # a study
        # table may compare them
        tables.update(build_tables(own, TableInputs(rows, study, bootstrap, seed, tables, failed=failed,
                                                    unusable=unusable.reset_index(drop=True),
                                                    variant_rows=variant_rows)))
    return tables


def _add_outcome_summary(result: AnalysisResult, study: Study, bootstrap: int, seed: int) -> None:
    """Merge the generic tables' summary into an amount store's analysis (:func:`analyze_study_by_model`)."""
    gaps = result.tables["outcome_gaps"]
    spoken = gaps.iloc[0:0] if _pairs_speak_for_amounts(study) else gaps
    extra = outcome_summary(result.tables, study, bootstrap, seed, spoken)
    summary = result.summary
    summary["findings"] = [*summary.get("findings", []), *extra["findings"]]
    summary.setdefault("ci_methods", {}).update(extra["ci_methods"])
    summary.setdefault("marks", {}).setdefault("families", {}).update(extra["marks"]["families"])
    summary["marks"]["families"].update(families_summary(result.tables))
    summary.setdefault("tables", {}).update(extra["tables"])
    unsupported = summary.setdefault("unsupported", {})
    for name in [*ot.OUTCOME_TABLES, *extra["added_tables"]]:
        unsupported.pop(name, None)
    unsupported.update(extra["unsupported"])
    summary["added_tables"] = extra["added_tables"]


def _analyze_outcomes(results: pd.DataFrame, study: Study, bootstrap: int, seed: int, *,
                      health: pd.DataFrame | None = None, finding_rows: pd.Series | None = None,
                      failed: FailedTables | None = None, shared: dict[str, pd.DataFrame] | None = None
                      ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """The generic tables and their summary; ``health``: the rows the parse-health table counts (default
    all; empty: no table), ``finding_rows``: the rows whose gaps the findings speak for (default all),
    ``shared``: tables built before (the amount tables), re-marked in place with the generic ones in one
    family per model (:mod:`.families`)."""
    from counterbench.analyses.health import parse_health

    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0:
        raise UserError(f"--bootstrap must be a whole number ≥ 0, got {bootstrap!r}")
    failed = failed if failed is not None else FailedTables()
    tables = outcome_table_frames(results, study, bootstrap, seed, failed)
    both = {**(shared or {}), **tables}
    mark_families(both)
    for part in (shared if shared is not None else {}, tables):
        part.update({name: both[name] for name in part})
    counted = results if health is None else health
    if not counted.empty:
        responses = counted.assign(usable=counted["status"].astype(str).eq("ok"),
                                   out_of_range=counted.get("out_of_range", pd.Series(False, index=counted.index))
                                   .fillna(False).astype(bool))
        tables["parse_health"] = isolated("parse_health", lambda: parse_health(responses), pd.DataFrame, failed)
    gaps = tables["outcome_gaps"]
    if finding_rows is not None and not gaps.empty:
        spoken = set(results.loc[finding_rows, "use_case"].astype(str)) if "use_case" in results.columns else set()
        gaps = gaps[gaps["use_case"].astype(str).isin(spoken)]
    summary = {**base_summary(results, bootstrap, seed), **outcome_summary(tables, study, bootstrap, seed, gaps)}
    return tables, summary
