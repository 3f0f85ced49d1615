"""``counterbench power``: the smallest gap between two identities a design finds 80% of the time."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from counterbench.commands.common import LanguageOpt, PresetOpt, QuestionVariantOpt, UseCaseOpt, filters_from_options
from counterbench.errors import UserError

if TYPE_CHECKING:
    import pandas as pd


def _noise(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--noise-sd must be a number (e.g. 0.03 for 3% noise), got {text!r}") from None
    if not (math.isfinite(value) and 0 < value < 5):
        raise UserError(f"--noise-sd must be a positive fraction (e.g. 0.03 for 3% noise), got {text!r}")
    return value


def _measured(store: Path, models: list[str] | None) -> dict[str, float]:
    from counterbench.analyses.power import noise_from_values
    from counterbench.analyses.prepare import prepare_results
    from counterbench.analyses.profiles import get_profile
    from counterbench.run.results import load_results

    if not store.expanduser().is_file():
        raise UserError(f"store {store} does not exist; run some prompts first "
                        f"(`counterbench run ... --store {store}`)")
    results = load_results(store, models or None)
    if results.empty:
        raise UserError(f"store {store} has no responses{' of ' + ', '.join(models) if models else ''}")
    values = prepare_results(results, get_profile("default")).values
    noise = noise_from_values(values[values["variant"].astype(str) == "standard"])
    if not noise:
        raise UserError(f"store {store} has too few answers to measure noise (needs ≥ 2 profiles × 2 identifiers)")
    return noise


def power_frame(study: str, filters: Mapping[str, Any], noise: dict[str, float], power: float) -> pd.DataFrame:
    """Detectable gaps of the filtered design for each noise level (one row block per source)."""
    import pandas as pd

    from counterbench.analyses.power import design_power
    from counterbench.prompts import build_prompts
    from counterbench.studies.registry import load_study

    the_study = load_study(study)
    if not the_study.canonical_pairs:
        raise UserError(f"study {study} names no canonical pairs (canonical_pairs in its YAML): nothing to test")
    table = build_prompts(study, filters_from_options(**filters))
    table = table[table["variant"].astype(str) == "standard"]
    frames = [design_power(table, the_study.canonical_pairs, sigma, power=power).assign(source=source)
              for source, sigma in noise.items()]
    return pd.concat(frames, ignore_index=True)


def _print(frame: pd.DataFrame, power: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for (source, language), part in frame.groupby(["source", "language"], sort=False):
        sigma = float(part["noise_sd"].iloc[0])
        table = Table(title=f"{language!s}: % less one identity must be offered to be found {power:.0%} of the time "
                            f"(noise {sigma:.1%}, {source!s})")
        axes = list(dict.fromkeys(part["axis"]))
        table.add_column("use case")
        table.add_column("matched prompts", justify="right")
        for axis in axes:
            table.add_column(axis, justify="right")
        for use_case, rows in part.groupby("use_case", sort=False):
            less = dict(zip(rows["axis"], rows["mde_less"].astype(float), strict=True))
            tested = dict(zip(rows["axis"], rows["testable"].astype(bool), strict=True))
            n = int(rows["n_slots"].max())
            values = [f"{less[a]:.1f}" if tested.get(a) else "too few" for a in axes]
            table.add_row(str(use_case), str(n), *values)
        console.print(table)
        pooled = part[(part["use_case"] == "all use cases") & part["testable"].astype(bool)]
        if not pooled.empty:
            low, high = pooled["mde_less"].min(), pooled["mde_less"].max()
            span = f"{low:.1f}%" if round(low, 1) == round(high, 1) else f"{low:.1f}–{high:.1f}%"
            from counterbench.stats.inference import MIN_SLOTS

            console.print(f"Averaged over use cases, one identity offered {span} less than the other is found "
                          f"{power:.0%} of the time; smaller gaps are likely to read 'no gap beyond noise'. "
                          f"'too few': fewer than {MIN_SLOTS} matched prompts, not tested.")
    console.print("[dim]Assumes answers = level × identity effect × lognormal noise, equal levels across "
                  "profiles, Benjamini–Hochberg within the model with one real gap (docs/analysis.md).[/dim]")


def power_command(
    study: Annotated[str, typer.Argument(help="A built-in study or a study .yaml.")],
    preset: PresetOpt = None,
    use_case: UseCaseOpt = None,
    language: LanguageOpt = None,
    question_variant: QuestionVariantOpt = None,
    noise_sd: Annotated[str | None, typer.Option(
        "--noise-sd", metavar="S", help="Assumed noise of the model's answers (0.03 = 3%); default 0.03.")] = None,
    store: Annotated[Path | None, typer.Option(
        "--store", help="Measure each model's noise from the answers in this store instead.")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="With --store: only this model.")] = None,
    power: Annotated[float, typer.Option("--power", help="Target power (0.8 = found 80% of the time).")] = 0.8,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the table as .csv.")] = None,
) -> None:
    """The smallest gap between two identities of a canonical pair that the design finds, per use case."""
    if not 0.05 <= power < 1:
        raise UserError(f"--power must be between 0.05 and 1, got {power}")
    assumed = _noise(noise_sd)
    if store is not None and assumed is not None:
        raise UserError("give --noise-sd or --store, not both")
    noise = _measured(store, model) if store is not None else {"assumed": assumed if assumed is not None else 0.03}
    if store is not None:
        noise = {f"measured, {m}": s for m, s in noise.items()}
    filters = {"preset": preset, "use_case": use_case, "language": language, "question_variant": question_variant}
    frame = power_frame(study, filters, noise, power)
    _print(frame, power)
    if out is not None:
        if out.suffix.lower() != ".csv":
            raise UserError(f"--out {out}: give a file name ending in .csv")
        frame.to_csv(out, index=False)


def register(app: typer.Typer) -> None:
    app.command("power")(power_command)
