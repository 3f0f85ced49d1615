"""``counterbench power``: the smallest gap between two identities a design finds 80% of the time."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from counterbench.commands.common import LanguageOpt, PresetOpt, QuestionVariantOpt, UseCaseOpt, filters_from_options
from counterbench.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.outcomes.units import GapUnit


#: the noise assumed without --noise-sd, per unit key where the kind declares none (its ``power_noise``: half a
#: percentage point for rates): 3% for relative gaps (amounts), a yes/no answer at a 50% rate (σ = 50
#: percentage points, the widest), one point on a score scale, one unit of a text metric
DEFAULT_NOISE = {"pct": 0.03, "pp": 50.0, "points": 1.0, "metric": 1.0}


def default_noise(unit: GapUnit) -> float:
    """The noise assumed for ``unit``'s kind without --noise-sd: its ``power_noise``, else the unit's."""
    from counterbench.outcomes import get_kind, member

    own = member(get_kind(unit.kind), "power_noise")
    return float(own) if own is not None else DEFAULT_NOISE[unit.key]


@dataclass(frozen=True)
class _WithinRepeats:
    """``--repeats K --repeat-noise-sd S`` without ``--noise-sd``: the kind's default noise, S of it within prompts."""

    within: float
    repeats: int


def _noise(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--noise-sd must be a number (e.g. 0.03 for 3% noise), got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise UserError(f"--noise-sd must be positive (e.g. 0.03 for 3% noise on amounts), got {text!r}")
    return value


def _units(table: pd.DataFrame) -> dict[str, GapUnit]:
    """Each use case's comparison, from its prompts' answer type."""
    from counterbench.outcomes.units import gap_unit, kind_of

    if "answer_type" not in table.columns:
        return {str(u): gap_unit(None) for u in table["use_case"].unique()}
    types = table.groupby("use_case", sort=False)["answer_type"].first()
    return {str(u): gap_unit(kind_of(t if isinstance(t, str) else None)) for u, t in types.items()}


def _measured(store: Path, models: list[str] | None, study: str,
              repeats: int | None = None) -> dict[str, dict[str, float]]:
    """Per model, the noise of its answers in each unit the study's use cases have (a fraction for amounts,
    from log answers; the kind's own unit otherwise: percentage points of "yes" for a label, points for a
    score), after slot and identity effects — of a prompt's mean over its repeats (``--repeats``), projected to
    ``repeats`` repeats when given (the within-prompt noise measured between the store's repeats)."""
    from counterbench.analyses import outcome_tables as ot
    from counterbench.analyses.power import (
        noise_from_values,
        noise_in_unit,
        repeated_noise,
        within_prompt_noise,
    )
    from counterbench.analyses.prepare import prepare_results
    from counterbench.analyses.profiles import get_profile
    from counterbench.analyses.repeats import within_prompt_means
    from counterbench.outcomes.units import gap_unit
    from counterbench.run.results import load_results
    from counterbench.run.study_results import results_of_study
    from counterbench.studies.registry import load_study

    if not store.expanduser().is_file():
        raise UserError(f"store {store} does not exist; run some prompts first "
                        f"(`counterbench run ... --store {store}`)")
    the_study = load_study(study)
    results = load_results(store, models or None)
    if results.empty:
        raise UserError(f"store {store} has no responses{' of ' + ', '.join(models) if models else ''}")
    results = results_of_study(results, the_study.name)
    results = results[results["variant"].astype(str) == "standard"]
    noise: dict[str, dict[str, float]] = {}
    units = {uc: gap_unit(spec.kind) for uc, spec in the_study.outcomes.items()}
    for key in dict.fromkeys(u.key for u in units.values()):
        mine = results[results["use_case"].astype(str).isin([uc for uc, u in units.items() if u.key == key])]
        if mine.empty:
            continue
        if next(u for u in units.values() if u.key == key).relative:
            values = prepare_results(mine, get_profile("default")).values  # a prompt's repeats averaged
            measured = noise_from_values(values)
            within = within_prompt_noise(mine[mine["status"].astype(str).eq("ok")], "value", log=True)
        else:
            rows = ot.measured_rows(mine, the_study.outcomes)
            measured = noise_in_unit(within_prompt_means(rows), the_study.slot_columns)
            within = within_prompt_noise(rows, "y", log=False)
        for model, sigma in measured.items():
            if repeats is not None and model in within:  # the prompt's own noise stays; the repeats' is /K
                sigma = repeated_noise(sigma, within[model][0], within[model][1], repeats)
            noise.setdefault(model, {})[key] = sigma
    if not noise:
        raise UserError(f"store {store} has too few answers to measure noise (needs ≥ 2 profiles × 2 identifiers)")
    return noise


def power_frame(study: str, filters: Mapping[str, Any], noise: Mapping[str, Any], power: float) -> pd.DataFrame:
    """Detectable gaps of the filtered design for each noise level (one row block per source), each use
    case in its outcome kind's unit (use cases of one unit are averaged together). A ``None`` noise is the
    kind's default (:data:`DEFAULT_NOISE`); a mapping gives the noise per unit key (measured).

    The correction family is the one the marks are made in: one model's one family, every row of every marking
    table its analysis would test (:func:`~counterbench.analyses.family_size.design_family_size`), for every unit."""
    import pandas as pd

    from counterbench.analyses.family_size import design_family_size
    from counterbench.analyses.power import design_power
    from counterbench.prompts import build_prompts
    from counterbench.studies.registry import load_study

    the_study = load_study(study)
    if not the_study.canonical_pairs:
        raise UserError(f"study {study} names no canonical pairs (canonical_pairs in its YAML): nothing to test")
    table = build_prompts(study, filters_from_options(**filters))
    family = design_family_size(table, the_study)  # every variant the run sends (a fairness variant adds rows)
    table = table[table["variant"].astype(str) == "standard"]
    units = _units(table)
    frames = []
    for group in dict.fromkeys((u.key, u.kind) for u in units.values()):
        unit = next(u for u in units.values() if (u.key, u.kind) == group)
        part = table[table["use_case"].astype(str).isin([c for c, u in units.items() if (u.key, u.kind) == group])]
        for source, sigma in noise.items():
            if isinstance(sigma, Mapping):
                if unit.key not in sigma:
                    continue  # no answers of this unit in the store
                chosen = float(sigma[unit.key])
            elif isinstance(sigma, _WithinRepeats):  # --repeat-noise-sd with the kind's default noise
                from counterbench.analyses.power import repeated_noise

                base = default_noise(unit)
                chosen = repeated_noise(base, min(sigma.within, base), 1, sigma.repeats)
            else:
                chosen = default_noise(unit) if sigma is None else sigma
            frames.append(design_power(part, the_study.canonical_pairs, chosen, power=power, unit=unit, family=family)
                          .assign(source=source, unit_key=unit.key))
    frames = [f for f in frames if not f.empty]
    if not frames:
        raise UserError(f"study {study}: no canonical pair has both identities in the same prompts to compare")
    return pd.concat(frames, ignore_index=True)


def _noise_text(sigma: float, unit: GapUnit) -> str:
    return f"{sigma:.1%}" if unit.relative else unit.format(sigma, signed=False)


def _print(frame: pd.DataFrame, power: float) -> None:
    from rich.console import Console
    from rich.table import Table

    from counterbench.outcomes import kind_names
    from counterbench.outcomes.units import gap_unit

    console = Console()
    for (source, language, key), part in frame.groupby(["source", "language", "unit_key"], sort=False):
        sigma = float(part["noise_sd"].iloc[0])
        unit = next(u for u in map(gap_unit, kind_names()) if u.key == key)
        words = "% of the pair's mean" if unit.relative else unit.words
        what = f"the gap in {words} between two identities that must be there"
        table = Table(title=f"{language!s}: {what} to be found {power:.0%} of the time "
                            f"(noise {_noise_text(sigma, unit)}, {source!s})")
        axes = list(dict.fromkeys(part["axis"]))
        table.add_column("use case")
        table.add_column("matched prompts", justify="right")
        for axis in axes:
            table.add_column(axis, justify="right")
        column = "mde"  # in the kind's comparison: for amounts % of the pair's mean, as every stated gap
        for use_case, rows in part.groupby("use_case", sort=False):
            found = dict(zip(rows["axis"], rows[column].astype(float), strict=True))
            tested = dict(zip(rows["axis"], rows["testable"].astype(bool), strict=True))
            n = int(rows["n_slots"].max())
            values = [(f"{found[a]:.1f}" if unit.relative else unit.format(found[a], signed=False))
                      if tested.get(a) else "too few" for a in axes]
            table.add_row(str(use_case), str(n), *values)
        console.print(table)
        pooled = part[(part["use_case"] == "all use cases") & part["testable"].astype(bool)]
        if not pooled.empty:
            from counterbench.stats.inference import MIN_SLOTS

            low, high = pooled[column].min(), pooled[column].max()
            if unit.relative:
                span = f"{low:.1f}%" if round(low, 1) == round(high, 1) else f"{low:.1f}–{high:.1f}%"
                said = f"a gap of {span} of the pair's mean between two identities"
            else:
                span = (unit.format(low, signed=False) if round(low, 1) == round(high, 1)
                        else f"{low:.1f}–{unit.format(high, signed=False)}")
                said = f"a gap of {span} between two identities"
            console.print(f"Averaged over use cases, {said} is found {power:.0%} of the time; smaller gaps are "
                          f"likely to read 'no gap beyond noise'. 'too few': fewer than {MIN_SLOTS} matched "
                          "prompts, or too few to reach the family's level 0.05/m (the swap test's smallest p is "
                          "2/2ⁿ with n matched prompts), not tested.")
    console.print("[dim]Assumes answers = level × identity effect × lognormal noise for amounts, level + identity "
                  "effect + noise in the kind's unit otherwise, equal levels across profiles, Benjamini–Hochberg "
                  f"over the model's one family of {int(frame['family_size'].max())} tested rows with one real gap "
                  "(conservative when others are real; docs/analysis.md).[/dim]")


def power_command(
    study: Annotated[str, typer.Argument(help="A built-in study or a study .yaml.")],
    preset: PresetOpt = None,
    use_case: UseCaseOpt = None,
    language: LanguageOpt = None,
    question_variant: QuestionVariantOpt = None,
    noise_sd: Annotated[str | None, typer.Option(
        "--noise-sd", metavar="S", help="Assumed noise of the model's answers in the outcome's terms: a fraction "
        "for amounts (0.03 = 3%, the default), percentage points for yes/no (default 50) and rates (default 0.5), "
        "points for scores (default 1).")] = None,
    store: Annotated[Path | None, typer.Option(
        "--store", help="Measure each model's noise from the answers in this store instead.")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="With --store: only this model.")] = None,
    repeats: Annotated[int | None, typer.Option(
        "--repeats", min=1, help="Each prompt asked this many times (run --repeats): the noise of a prompt's mean. "
        "With --store: the within-prompt noise measured between its repeats (default: the store's own number); "
        "otherwise --repeat-noise-sd.")] = None,
    repeat_noise_sd: Annotated[str | None, typer.Option(
        "--repeat-noise-sd", metavar="S", help="With --repeats and an assumed noise: the part of --noise-sd that "
        "changes between repeats of one prompt (default 0: repeats average nothing away).")] = None,
    power: Annotated[float, typer.Option("--power", help="Target power (0.8 = found 80% of the time).")] = 0.8,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the table as .csv.")] = None,
) -> None:
    """The smallest gap between two identities of a canonical pair that the design finds, per use case, in
    the outcome's unit: % less for amounts, percentage points for yes/no and rates, points for scores."""
    if not 0.05 <= power < 1:
        raise UserError(f"--power must be between 0.05 and 1, got {power}")
    assumed = _noise(noise_sd)
    if store is not None and assumed is not None:
        raise UserError("give --noise-sd or --store, not both")
    within = _noise(repeat_noise_sd)
    if within is not None and (store is not None or repeats is None):
        raise UserError("--repeat-noise-sd goes with --repeats and an assumed noise (with --store it is measured)")
    noise: dict[str, Any] = {"assumed": assumed}
    if assumed is not None and within is not None and repeats is not None:
        if within > assumed:
            raise UserError(f"--repeat-noise-sd ({within:g}) is part of --noise-sd ({assumed:g}): give at most it")
        from counterbench.analyses.power import repeated_noise

        noise = {f"assumed, {repeats} repeats": repeated_noise(assumed, within, 1, repeats)}
    elif within is not None and repeats is not None:
        noise = {f"assumed, {repeats} repeats": _WithinRepeats(within, repeats)}
    if store is not None:
        label = "" if repeats is None else f" at {repeats} repeats"
        noise = {f"measured{label}, {m}": s for m, s in _measured(store, model, study, repeats).items()}
    filters = {"preset": preset, "use_case": use_case, "language": language, "question_variant": question_variant}
    frame = power_frame(study, filters, noise, power)
    _print(frame, power)
    if out is not None:
        if out.suffix.lower() != ".csv":
            raise UserError(f"--out {out}: give a file name ending in .csv")
        frame.to_csv(out, index=False)


def register(app: typer.Typer) -> None:
    app.command("power")(power_command)
