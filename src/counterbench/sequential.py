"""``--stop-when decided``: a sequential audit that stops each model when its verdicts are certain.

:func:`run_until_decided` sends a study's prompts one round at a time — whole slots, in the seeded random order of
:func:`counterbench.analyses.sequential.slot_rounds` — through :func:`counterbench.run.runner.run_prompts` into the
store, and after each round replays the looks on the answers stored so far
(:func:`counterbench.analyses.sequential.evaluate_looks`). A model stops at the first look where every comparison of
its family is decided, or at the full design, or when ``--max-cost`` runs out (the verdicts reached so far are
kept, the rest stay undecided).

Nothing of the sequential state lives outside the store: the rule is recorded in each round's run settings, the
order of the slots comes from the rule's seed and the prompts, and the looks are recomputed from the stored answers.
A run that is killed and started again sends nothing twice (the store's resume) and reaches the same looks, the
same verdicts and the same number of prompts as a run that was never interrupted.

All models are asked in the same rounds (one run of the engine per round, the models side by side as in any
run); a model that has stopped is left out of the next rounds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from counterbench.analyses.sequential import (
    SEQUENTIAL_COLUMNS,
    LookResult,
    evaluate_looks,
    family,
    slot_rounds,
    with_last_rounds,
)
from counterbench.errors import UserError
from counterbench.options import RunOptions, StoppingRule
from counterbench.run.runner import run_prompts
from counterbench.run.summary import RunSummary
from counterbench.stats.confidence_sequence import UNDECIDED

if TYPE_CHECKING:
    from counterbench.analyses.result import AnalysisResult
    from counterbench.models.base import Backend

__all__ = ["SequentialRun", "add_to_analysis", "run_until_decided", "sequential_summary"]

#: why a model's rounds ended
STOPPED_DECIDED = "decided"
STOPPED_FULL = "full design"
STOPPED_BUDGET = "budget"
STOPPED_INTERRUPTED = "interrupted"


@dataclass
class SequentialRun:
    """What a sequential audit did: the combined run summary, each model's verdicts and how far it went."""

    summary: RunSummary
    verdicts: pd.DataFrame
    rule: StoppingRule
    prompts_design: int
    prompts_sent: dict[str, int] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)


def _combined(summaries: Sequence[RunSummary]) -> RunSummary:
    """One summary for every round of every model: counters summed, the last round's status and settings."""
    last = summaries[-1]
    models: dict[str, dict[str, Any]] = {}
    totals: dict[str, Any] = {}
    for s in summaries:
        for model, counters in s.models.items():
            first = model not in models
            into = models.setdefault(model, {})
            for key, value in counters.items():
                numeric = isinstance(value, int | float) and not isinstance(value, bool)
                if key == "already_done":  # stored before this command: the first round's count
                    into[key] = value if first else into[key]
                else:
                    into[key] = (into.get(key, 0) + value) if numeric else value
        for key, value in s.totals.items():
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            totals[key] = (totals.get(key, 0) + value) if numeric else value
    status = next((s.status for s in summaries if s.status != "completed"), last.status)
    return dataclasses.replace(last, models=models, totals=totals, status=status,
                               elapsed_s=sum(s.elapsed_s for s in summaries),
                               notes=list(dict.fromkeys(n for s in summaries for n in s.notes)))


def run_until_decided(study: Any, table: pd.DataFrame, models: Sequence[str | Backend], options: RunOptions,
                      rule: StoppingRule, *, say: Callable[[str], None] | None = None) -> SequentialRun:
    """Audit ``models`` on ``table`` (``study``'s prompts) round by round until each model's family is decided;
    ``say`` gets a line after each look (how many prompts are in and how many comparisons are decided)."""
    from counterbench.analyses.prepare import with_excluded_unusable
    from counterbench.analyses.profiles import get_profile
    from counterbench.run import study_results as read
    from counterbench.studies.registry import load_study

    the_study = load_study(study)
    if table.empty:
        raise UserError("--stop-when decided: no prompts to send")
    rounds = slot_rounds(table, the_study.slot_columns, rule.seed, rule.look_every)
    last_round = int(rounds.max())
    prompt_round = dict(zip(table["prompt_id"].astype(str), rounds.tolist(), strict=True))
    comparisons = with_last_rounds(family(the_study, table, rule), table, rounds)
    if not comparisons:
        raise UserError("--stop-when decided: these prompts hold no comparison to decide (each needs a level and "
                        "its reference in the same slots); drop --stop-when or keep more of the design")
    opts = dataclasses.replace(options, stopping=rule)
    rules = get_profile(opts.parse_profile)
    summaries: list[RunSummary] = []
    frames: list[pd.DataFrame] = []
    sent: dict[str, int] = {}
    stopped: dict[str, str] = {}
    spent = 0.0
    active = list(range(len(models)))  # the models still asked, by their place in ``models``
    finished: dict[int, tuple[str, LookResult, int, str]] = {}  # place -> (label, its looks, prompts, why)
    for r in range(last_round + 1):
        if not active:
            break
        part = table[rounds <= r]
        budget = None if opts.max_cost is None else max(0.0, opts.max_cost - spent)
        summary = run_prompts(part, [models[i] for i in active], dataclasses.replace(opts, max_cost=budget))
        summaries.append(summary)
        spent += float(summary.totals.get("cost_usd", 0.0) or 0.0) + float(summary.cost_unsure_usd or 0.0)
        sent_ids, fps = set(part["prompt_id"].astype(str)), set(summary.config_fps)
        ended = None if summary.status == "completed" else (
            STOPPED_BUDGET if summary.status == "max_cost" else STOPPED_INTERRUPTED)
        for place, label in zip(list(active), list(summary.models), strict=True):  # the run keeps the models' order
            results = read.load_model_results(summary.store, the_study.name, label, opts.parse_profile)
            if not results.empty:  # this audit's answers, with the analysis's out-of-range rule
                results = with_excluded_unusable(results[results["prompt_id"].astype(str).isin(sent_ids)
                                                         & results["config_fp"].isin(fps)], rules)
            look = evaluate_looks(results.reset_index(drop=True), the_study, comparisons, prompt_round, rule,
                                  last_round, upto=r)
            if say is not None:
                decided = int((look.verdicts["verdict"] != UNDECIDED).sum()) if len(look.verdicts) else 0
                say(f"{label}: look {r + 1} of at most {last_round + 1}: {len(part):,} of {len(table):,} prompts "
                    f"in, {decided} of {len(comparisons)} comparisons decided")
            why = ended or (None if look.stop_look is None else
                            STOPPED_FULL if look.stop_look == last_round else STOPPED_DECIDED)
            finished[place] = (label, look, len(part), why or STOPPED_FULL)
            if why is not None:
                active.remove(place)
        if ended is not None:
            break
    for place in sorted(finished):
        label, look, model_sent, stop_reason = finished[place]
        sent[label] = model_sent
        stopped[label] = stop_reason
        frames.append(look.verdicts.assign(model=label, looks=look.looks, prompts_sent=model_sent,
                                           prompts_design=len(table), stopped=stop_reason))
    verdicts = (pd.concat(frames, ignore_index=True).reindex(columns=list(SEQUENTIAL_COLUMNS)) if frames
                else pd.DataFrame(columns=list(SEQUENTIAL_COLUMNS)))
    return SequentialRun(_combined(summaries), verdicts, rule, len(table), sent, stopped)


def sequential_summary(run: SequentialRun) -> list[str]:
    """A line per model: prompts needed of the design, why it stopped, its verdicts counted."""
    lines = []
    for model, part in run.verdicts.groupby("model", sort=False):
        said = part["verdict"].astype(str).value_counts()
        words = ", ".join(f"{int(n)} {name}" for name, n in said.items())
        share = run.prompts_sent.get(str(model), 0) / max(1, run.prompts_design)
        lines.append(f"{model}: {run.prompts_sent.get(str(model), 0):,} of {run.prompts_design:,} prompts "
                     f"({share:.0%}), stopped: {run.stopped.get(str(model), '?')}; {words}")
    return lines


def add_to_analysis(result: AnalysisResult, run: SequentialRun) -> None:
    """Put a sequential audit's verdicts beside the fixed analysis: the ``sequential_verdicts`` table and, in the
    summary, the rule and each model's prompts and why it stopped (the report's section reads both)."""
    result.tables["sequential_verdicts"] = run.verdicts.reset_index(drop=True)
    result.summary["sequential"] = {
        "rule": run.rule.as_dict(), "prompts_design": run.prompts_design, "prompts_sent": dict(run.prompts_sent),
        "stopped": dict(run.stopped), "boundary": "asymptotic confidence sequence (normal mixture), Student-widened; "
                                                "the last look of each comparison: the fixed t-interval",
    }
    result.summary.setdefault("tables", {})["sequential_verdicts"] = (
        "--stop-when decided: each comparison of the model's family, its verdict (gap, no gap above the margin, "
        "undecided), the interval it was read from (a confidence sequence: valid at the stopping time) and when")
