"""Option types shared by the verbs that select prompts (``prompts``, ``run``, ``audit``), and
:func:`with_prompt_filters`, which gives a verb all of them as one :class:`PromptFilters`."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from counterbench.errors import UserError

if TYPE_CHECKING:
    from counterbench.prompts import PromptFilters

#: ``audit`` and ``prompts`` pass the options they do not know to the study (its file options, e.g. ``--jobs``)
STUDY_OPTION_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}
UseCaseOpt = Annotated[list[str] | None, typer.Option("--use-case", help="Keep this use case (repeatable).")]
LanguageOpt = Annotated[
    list[str] | None, typer.Option("--language", help="Keep this language (a code the study declares, e.g. en).")
]
AxisOpt = Annotated[list[str] | None, typer.Option("--axis", help="Keep this axis, e.g. Religion (repeatable).")]
IdentifierOpt = Annotated[
    list[str] | None, typer.Option("--identifier", help="Keep this identifier (at least two per axis).")
]
ProfileOpt = Annotated[list[str] | None, typer.Option("--profile", help="Keep this profile id, e.g. P01.")]
QuestionVariantOpt = Annotated[
    list[int] | None, typer.Option("--question-variant", help="Keep this question variant number (1..).")
]
VariantOpt = Annotated[
    list[str] | None,
    typer.Option("--variant", help="standard (default), fairness, or a study's own prompt variant (its docs "
                 "list them); repeatable."),
]
SampleSlotsOpt = Annotated[
    int | None, typer.Option("--sample-slots", help="Keep N whole slots, drawn at random with --sample-seed.")
]
SeedOpt = Annotated[int, typer.Option(
    "--sample-seed",
    help="Seed of --sample-slots' draw: N slots drawn without replacement by NumPy's default_rng(SEED), "
         "from the study's slots in sorted order (the same seed "
         "keeps the same slots); not the seed sent to the model (--generation-seed).")]
PresetOpt = Annotated[str | None, typer.Option("--preset", help="A named subset the study declares, e.g. quick.")]
FromReleaseOpt = Annotated[
    Path | None, typer.Option("--from-release", help="Use the release's own dataset .jsonl files in DIR.")
]

#: every prompt filter flag, in the order ``--help`` lists them: parameter -> option type (default: None,
#: 0 for the seed)
FILTER_FLAGS: dict[str, Any] = {
    "use_case": UseCaseOpt, "language": LanguageOpt, "axis": AxisOpt, "identifier": IdentifierOpt,
    "profile": ProfileOpt, "question_variant": QuestionVariantOpt, "variant": VariantOpt,
    "sample_slots": SampleSlotsOpt, "sample_seed": SeedOpt, "preset": PresetOpt,
}


def filters_from_options(
    *,
    use_case: list[str] | None = None,
    language: list[str] | None = None,
    axis: list[str] | None = None,
    identifier: list[str] | None = None,
    profile: list[str] | None = None,
    question_variant: list[int] | None = None,
    variant: list[str] | None = None,
    sample_slots: int | None = None,
    seed: int = 0,
    preset: str | None = None,
) -> PromptFilters:
    """Turn CLI option values into :class:`PromptFilters` (empty lists mean "all")."""
    from counterbench.prompts import PromptFilters

    if sample_slots is not None and sample_slots < 1:
        raise UserError(f"--sample-slots must be at least 1, got {sample_slots}")
    if seed < 0:
        raise UserError(f"--sample-seed must be 0 or more, got {seed}")
    return PromptFilters(
        use_case=use_case or None,
        language=language or None,
        axis=axis or None,
        identifier=identifier or None,
        profile=profile or None,
        question_variant=question_variant or None,
        variant=variant or None,
        sample_slots=sample_slots,
        seed=seed,
        preset=preset,
    )


LogprobsOpt = Annotated[
    int,
    typer.Option(
        "--logprobs", min=0, max=20,
        help="For label and choice answers, ask the model for its N most likely tokens and store the "
        "log-probability of each allowed answer, every spelling merged, for p(yes) (servers that return "
        "log-probabilities, and sim: models; 0: off). The embedded model (local) reads at least 1000 by itself. "
        "Take N large enough that every allowed answer is listed (20 where the server allows it): an answer "
        "missing one has no p(yes).",
    ),
]

StructuredOpt = Annotated[
    bool | None,
    typer.Option(
        "--structured/--free-text",
        help="Constrain answers to the study's format (default: on for the embedded `local` model only).",
    ),
]


def resolve_structured(structured: bool | None, models: list[str]) -> bool:
    """``--structured``/``--free-text`` as given; otherwise on only when every model is the embedded one.

    The 135M embedded model rarely follows the ``### <NUMBER> INR`` format in free text, so its
    answers are constrained by a grammar unless the user asks for free text. Hosted and server models
    are asked in free text, as in the paper, unless ``--structured`` is given.
    """
    if structured is not None:
        return structured
    from counterbench.models.labels import split_label

    specs = [split_label(m)[1] for m in models]
    return bool(specs) and all(m == "local" or m.startswith("local:") for m in specs)


def with_prompt_filters(verb: Callable[..., None]) -> Callable[..., None]:
    """Give ``verb`` every flag of :data:`FILTER_FLAGS` in place of its ``filters`` parameter, and call it
    with them as one :class:`PromptFilters` (:func:`filters_from_options`). ``filters`` may be annotated
    with a name imported for type checking only (the prompts package is not imported to read the flags)."""
    hints = typing.get_type_hints(verb, localns={"PromptFilters": object}, include_extras=True)
    own = inspect.signature(verb)
    parameters: list[inspect.Parameter] = []
    for p in own.parameters.values():
        if p.name == "filters":
            parameters += [inspect.Parameter(name, p.kind, annotation=option,
                                             default=0 if name == "sample_seed" else None)
                           for name, option in FILTER_FLAGS.items()]
        else:
            parameters.append(p.replace(annotation=hints.get(p.name, p.annotation)))
    @functools.wraps(verb)
    def wrapper(**values: Any) -> None:
        flags = {name: values.pop(name) for name in FILTER_FLAGS}
        flags["seed"] = flags.pop("sample_seed")
        return verb(**values, filters=filters_from_options(**flags))

    wrapper.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    return wrapper


#: exit code of a command whose analysis had a table fail (everything else was written)
EXIT_TABLES_FAILED = 1


def announce_failed_tables(summary: dict[str, Any]) -> bool:
    """Print one line per table that failed to compute (``summary["failed_tables"]``) to stderr; True if any.
    The caller exits with :data:`EXIT_TABLES_FAILED` once everything else is written."""
    import sys

    failed = summary.get("failed_tables")
    if not isinstance(failed, dict) or not failed:
        return False
    for name, reason in failed.items():
        print(f"table {name} failed: {reason}", file=sys.stderr)
    print(f"{len(failed)} table(s) failed; every other table and the report were written. After a fix, "
          "`counterbench report --store STORE` recomputes them without calling a model.", file=sys.stderr)
    return True
