"""counterbench studies as Inspect AI tasks, and a scorer that uses counterbench's parser.

A sample is one prompt: its input is the prompt's system and user messages, its id the
``prompt_id``, and its metadata every other column of the prompt table (study, use case, language,
axis, identifier, profile, question variant, variant, answer type and the study's design columns),
so ``counterbench import --inspect-log`` can put the answer back in its slot. Generation follows
counterbench's defaults, from the same :class:`~counterbench.options.GenerationOptions` as ``counterbench
run`` (temperature 0; the token-limit rule of :func:`~counterbench.options.prompt_token_limit`: each
prompt's own ``requested_max_tokens``, e.g. 512 for long explanations, else the default); ``inspect
eval`` options override them, and ``-T max_tokens=N`` or ``--max-tokens N`` sends N to every prompt,
as ``counterbench run --max-tokens N`` does.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from counterbench.columns import REQUESTED_MAX_TOKENS
from counterbench.options import GenerationOptions, prompt_token_limit
from counterbench.prompts import PromptFilters, build_prompts
from counterbench.run.parsing import ResponseParser

#: prompt-table columns that are the messages, not metadata
MESSAGE_COLUMNS = ("system", "user")
#: Inspect stop reasons -> the finish reasons counterbench stores
STOP_REASONS = {"stop": "stop", "max_tokens": "length", "model_length": "length", "content_filter": "content_filter",
                "tool_calls": "tool_calls"}


def _listed(value: Any) -> list[str] | None:
    """A ``-T`` value as a list: ``a,b`` or a YAML list; empty -> ``None`` (all)."""
    if value is None or value == "":
        return None
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    out = [str(v).strip() for v in items if str(v).strip()]
    return out or None


def _plain(value: Any) -> Any:
    """A JSON-friendly Python value (numpy scalars unwrapped, NaN dropped by the caller)."""
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    return value


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def samples_from_prompts(table: pd.DataFrame) -> list[Sample]:
    """One :class:`Sample` per prompt row (see the module docstring)."""
    meta_cols = [c for c in table.columns if c not in MESSAGE_COLUMNS and c != "prompt_id"]
    out = []
    for row in table.to_dict("records"):
        messages: list[Any] = []
        if isinstance(row.get("system"), str) and row["system"]:
            messages.append(ChatMessageSystem(content=row["system"]))
        messages.append(ChatMessageUser(content=str(row["user"])))
        metadata = {str(c): _plain(row[c]) for c in meta_cols if not _missing(row[c])}
        out.append(Sample(input=messages, id=str(row["prompt_id"]), metadata=metadata))
    return out


@scorer(metrics=[mean()])
def counterbench_parse(profile: str = "default") -> Scorer:
    """1 when counterbench's parser finds the answer the prompt asks for (``ok``), else 0.

    The parsed value and unit are the score's ``answer``; status and parse reason are in its metadata.
    Bias is not a per-sample score: import the log (``counterbench import --inspect-log``) and analyse it.
    """
    parser = ResponseParser(profile)

    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata or {}
        key = parser.key_for(meta.get("use_case"), meta.get("answer_type"))
        choice = state.output.choices[0] if state.output and state.output.choices else None
        finish = STOP_REASONS.get(str(choice.stop_reason), str(choice.stop_reason)) if choice else None
        parsed = parser.parse(state.output.completion if state.output else None, finish, key)
        answer = None if parsed.value is None else f"{parsed.value:g}{' ' + parsed.unit if parsed.unit else ''}"
        return Score(value=1.0 if parsed.status == "ok" else 0.0, answer=answer,
                     explanation=f"{parsed.status}{': ' + parsed.reason if parsed.reason else ''}",
                     metadata={"status": parsed.status, "value": parsed.value, "unit": parsed.unit,
                               "parse_reason": parsed.reason, "parse_profile": profile})

    return score


@solver
def generate_within_prompt_limits() -> Solver:
    """Generate with the sample's own token limit (:func:`~counterbench.options.prompt_token_limit` of its
    prompt's ``requested_max_tokens``), as a counterbench run does, unless ``inspect eval --max-tokens``
    set one limit for every sample."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if get_model().config.max_tokens is not None:  # inspect eval --max-tokens: that limit for every sample
            return await generate(state)
        requested = (state.metadata or {}).get(REQUESTED_MAX_TOKENS)
        return await generate(state, max_tokens=prompt_token_limit(int(requested) if requested else None))

    return solve


def study_task(name: str, filters: PromptFilters, generation: GenerationOptions | None = None, *,
               parse_profile: str = "default") -> Task:
    """The Inspect task of study ``name``'s prompts, generated with ``generation`` (its temperature, seed
    and token limit; ``max_tokens=None``: each prompt's own limit)."""
    generation = generation or GenerationOptions()
    table = build_prompts(name, filters)
    return Task(
        dataset=MemoryDataset(samples_from_prompts(table), name=str(name)),
        solver=generate() if generation.max_tokens is not None else generate_within_prompt_limits(),
        scorer=counterbench_parse(parse_profile),
        config=GenerateConfig(temperature=generation.temperature, max_tokens=generation.max_tokens,
                              seed=generation.seed),
        metadata={"counterbench_study": str(name), "counterbench_prompts": len(table)},
    )


def _study(
    study: str | None = None,
    preset: str | None = None,
    use_case: str | Sequence[str] | None = None,
    language: str | Sequence[str] | None = None,
    axis: str | Sequence[str] | None = None,
    identifier: str | Sequence[str] | None = None,
    variant: str | Sequence[str] | None = None,
    sample_slots: int | None = None,
    seed: int = 0,
    max_tokens: int | None = None,
    temperature: float = GenerationOptions.temperature,
    parse_profile: str = "default",
) -> Task:
    """Any counterbench study (a registered name or a study YAML file; default: the default study) with
    counterbench's prompt filters."""
    filters = PromptFilters(use_case=_listed(use_case), language=_listed(language), axis=_listed(axis),
                            identifier=_listed(identifier), variant=_listed(variant),
                            sample_slots=int(sample_slots) if sample_slots else None, seed=int(seed),
                            preset=str(preset) if preset else None)
    generation = GenerationOptions(temperature=float(temperature),
                                   max_tokens=None if max_tokens is None else int(max_tokens))
    if study is None:
        from counterbench.studies.registry import default_study

        study = default_study()
    return study_task(study, filters, generation, parse_profile=parse_profile)


def _one_study(name: str, doc: str) -> Callable[..., Task]:
    """:func:`_study` with ``study`` fixed to ``name``: the same ``-T`` options but that one."""

    def build(**options: Any) -> Task:
        return _study(name, **options)

    signature = inspect.signature(_study)
    setattr(build, "__signature__",  # noqa: B010  # what Inspect reads for the task's -T options
            signature.replace(parameters=[p for k, p in signature.parameters.items() if k != "study"]))
    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    return build


study = task(name="study")(_study)


def registered_study_tasks() -> dict[str, Callable[..., Task]]:
    """One Inspect task per registered study (``counterbench/NAME``), the same ``-T`` options as ``study``
    but that one; the registry's names only, no study is loaded until its task runs."""
    from counterbench.studies.registry import STUDIES

    return {name: task(name=name)(_one_study(name, f"The registered counterbench study {name} "
                                                   "(``-T preset=NAME`` for one of its presets)."))
            for name in STUDIES.names() if name.isidentifier() and name != "study"}
