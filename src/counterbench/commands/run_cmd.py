"""``counterbench run``, ``counterbench models`` and ``counterbench import``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from counterbench.commands.common import FromReleaseOpt, with_prompt_filters
from counterbench.commands.run_options import (
    EXIT_INTERRUPTED,
    EXIT_MAX_COST,
    EnvFileOpt,
    StoreOpt,
    TimeoutOpt,
    send,
    with_run_options,
)
from counterbench.commands.stopping_options import with_stopping_rule
from counterbench.errors import UserError
from counterbench.options import RunOptions, StoppingRule

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.prompts import PromptFilters


@with_stopping_rule
@with_run_options
@with_prompt_filters
def run_command(
    ctx: typer.Context,
    study: Annotated[
        str | None, typer.Argument(help="A registered study (`counterbench studies`) or a study .yaml; or --prompts.")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Model string, repeatable: local, sim:biased, openai:gpt-4o-mini, ..."),
    ] = None,
    prompts_file: Annotated[
        Path | None, typer.Option("--prompts", help="Run a saved prompt table (.parquet/.csv/.jsonl) instead.")
    ] = None,
    *,
    filters: PromptFilters,
    from_release: FromReleaseOpt = None,
    run_options: RunOptions,
    stopping: StoppingRule | None = None,
) -> None:
    """Send prompts to models and keep every answer in the store; rerun the same command to resume.

    A study may take its own options after its name (e.g. `--jobs FILE`), as with `audit`:
    `counterbench studies` lists them.

    Exit codes: 0 done, 2 a mistake in the command, 3 stopped at --max-cost, 130 interrupted.
    """
    from counterbench.run.summary import format_summary

    study_args: list[str] = list(ctx.args)
    if study is not None and study.startswith("-"):  # an unknown option where the study would stand
        study_args = [study, *study_args]
        study = None
    if stopping is not None and study is None:
        raise UserError("--stop-when decided needs a study (its comparisons), not --prompts alone")
    table = _load_table(study, prompts_file, filters, from_release, study_args)
    if stopping is not None:
        from counterbench.sequential import run_until_decided, sequential_summary
        from counterbench.studies.options import study_with_options

        sequential = run_until_decided(study_with_options(str(study), study_args), table, list(model or []),
                                       run_options, stopping, say=print)
        summary = sequential.summary
        print(format_summary(summary))
        print("\n".join(sequential_summary(sequential)))
    else:
        summary = send(table, list(model or []), run_options)
        print(format_summary(summary))
    if summary.status == "interrupted":
        print(f"Interrupted; everything answered so far is saved. Resume with:\n  {summary.resume_command}")
        raise typer.Exit(EXIT_INTERRUPTED)
    if summary.status == "max_cost":
        unsure = (f" (besides ${summary.totals.get('cost_usd', 0.0):.4f} billed, up to ${summary.cost_unsure_usd:.4f} "
                  "is counted for requests that timed out or lost their connection and may have been billed)"
                  if summary.cost_unsure_usd else "")
        print(
            f"Stopped: the next requests would exceed --max-cost {run_options.max_cost:g} USD{unsure}. "
            f"Raise it and rerun to continue:\n  {summary.resume_command}"
        )
        raise typer.Exit(EXIT_MAX_COST)


def _load_table(
    study: str | None, prompts_file: Path | None, filters: PromptFilters, from_release: Path | None,
    study_args: list[str] | None = None,
) -> pd.DataFrame:
    from counterbench.prompts import PromptFilters, build_prompts, read_prompt_table
    from counterbench.studies.options import study_with_options

    if prompts_file is not None and study is not None and prompts_file.suffix in (".yaml", ".yml"):
        # a study's own --prompts (a .yaml of its prompt texts), not a prompt table
        study_args, prompts_file = ["--prompts", str(prompts_file), *(study_args or [])], None
    if prompts_file is not None:
        if study is not None:
            raise UserError("give either a study or --prompts FILE, not both")
        if study_args:
            raise UserError(f"No such option: {study_args[0]} (see `counterbench run --help`; a study's own options "
                            "follow its name, not --prompts)")
        if filters != PromptFilters() or from_release is not None:
            raise UserError("prompt filters apply to a study; filter the file with `counterbench prompts` instead")
        return read_prompt_table(prompts_file)
    if study is None and study_args:
        raise UserError(f"No such option: {study_args[0]} (see `counterbench run --help`)")
    if study is None:
        raise UserError("name a study (see `counterbench studies`; e.g. `counterbench run STUDY --model local`) "
                        "or give --prompts FILE")
    return build_prompts(study_with_options(study, study_args or []), filters, from_release=from_release)


def models_command(
    env_file: EnvFileOpt = None,
    probe: Annotated[
        str | None,
        typer.Option(
            "--probe",
            help="Send one tiny request per structured mode to MODEL and say what its server supports.",
            metavar="MODEL",
        ),
    ] = None,
    ports: Annotated[bool, typer.Option("--ports/--no-ports", help="Check local servers' ports.")] = True,
    timeout: TimeoutOpt = 60.0,
) -> None:
    """List the model backends, what each needs, and whether it is ready; --probe MODEL tests one endpoint."""
    if probe is not None:
        from counterbench.models.probe import probe as probe_model

        report = probe_model(probe, dotenv_path=env_file, timeout_s=timeout)
        print("\n".join(report.lines()))
        return

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from counterbench.models.registry import list_backends

    table = Table(title="Model backends")
    for col in ("kind", "example", "needs", "ready", "detail"):
        table.add_column(col, overflow="fold")
    for info in list_backends(dotenv_path=env_file, probe=ports):  # escaped: hints hold "[local]" extras
        table.add_row(*(escape(x) for x in (info.kind, info.example, info.needs, "yes" if info.ready else "no",
                                            info.detail)))
    Console().print(table)


def import_command(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="A study's published run files (.jsonl) or folders of them.")
    ] = None,
    store: StoreOpt = Path("counterbench.db"),
    profile: Annotated[str, typer.Option("--parse-profile", help="Parse rules: default or a registered profile.")
                       ] = "default",
    study: Annotated[
        str | None, typer.Option("--study", help="Whose run files PATHS are (default: the default study).")
    ] = None,
    inspect_log: Annotated[
        list[Path] | None,
        typer.Option("--inspect-log", help="Inspect AI eval logs (.eval/.json, or folders) of a counterbench task."),
    ] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="With --inspect-log: the model's name in the store.")
    ] = None,
    same_model: Annotated[
        bool, typer.Option("--same-model", help="With --inspect-log or recovery files: add the answers to a label "
                                                "the store holds from another model string (it is the same "
                                                "model).")
    ] = False,
) -> None:
    """Load a study's published run files (its registered importer), or Inspect AI eval logs (--inspect-log),
    into the store."""
    if inspect_log:
        if paths:
            raise UserError("give run files or --inspect-log, not both")
        from counterbench.inspect_ext.cli import import_inspect

        import_inspect(inspect_log, store, label=label, profile=profile, same_model=same_model)
        return
    if not paths:
        raise UserError("give run files (.jsonl) or --inspect-log PATH")
    from counterbench.pipeline import import_runs

    print("\n".join(import_runs(paths, store, study=study, profile=profile,
                                command=shlex.join(["counterbench", *sys.argv[1:]]), same_model=same_model)))
    print(f"store: {store}")


def register(app: typer.Typer) -> None:
    from counterbench.commands.common import STUDY_OPTION_SETTINGS

    app.command("run", context_settings=STUDY_OPTION_SETTINGS)(run_command)
    app.command("models")(models_command)
    app.command("import")(import_command)
