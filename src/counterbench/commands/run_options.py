"""Options shared by the verbs that send prompts (``run`` and ``audit``), and the call they make.

Both verbs take the same generation, rate-limit, retry, cost and store flags: they are declared once
here (:data:`RUN_FLAGS`), added to each verb by :func:`with_run_options`, and turned into one
:class:`~counterbench.options.RunOptions` (:func:`run_options_from_cli`) that the verb hands to
:func:`send`, as the Python API hands it to ``counterbench.run_prompts``.
"""

from __future__ import annotations

import functools
import inspect
import shlex
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from counterbench.commands.common import LogprobsOpt, StructuredOpt
from counterbench.errors import UserError
from counterbench.options import DEFAULT_MAX_TOKENS, DEFAULT_STORE, GenerationOptions, RunOptions

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.run.summary import RunSummary

ModelOpt = Annotated[
    list[str] | None,
    typer.Option("--model", "-m", help="Model string, repeatable: local, sim:biased, openai:gpt-4o-mini, ..."),
]
TemperatureOpt = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option("--max-tokens", help="Maximum tokens per answer, for every prompt. Default: a prompt's own "
                 f"requested_max_tokens where it has one (e.g. 512 for long answers), else {DEFAULT_MAX_TOKENS}."),
]
GenerationSeedOpt = Annotated[
    int | None, typer.Option("--generation-seed", help="Seed sent to the model (where supported).")
]
RepeatsOpt = Annotated[
    int, typer.Option("--repeats", min=1, help="Ask every prompt this many times (repeat k ≥ 1 seeded with "
                      "--generation-seed + k where the model takes a seed); every table averages a prompt's "
                      "answers first and the noise_decomposition table splits the noise.")
]
ReasoningEffortOpt = Annotated[
    str | None, typer.Option("--reasoning-effort", help="e.g. low/medium/high (off by default).")
]
StructuredModeOpt = Annotated[
    str | None,
    typer.Option(
        "--structured-mode",
        help="How --structured is sent: json_schema, json_object, grammar, regex, tool or none "
        "(default: the model family's own; see `counterbench models --probe MODEL`).",
    ),
]
StructuredFallbackOpt = Annotated[
    str,
    typer.Option(
        "--structured-fallback",
        help="If the server refuses the constraint: free-text (warn, go on without it) or stop.",
    ),
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", "-c", help="Requests in flight per model.")]
RpmOpt = Annotated[float | None, typer.Option("--rpm", help="Requests per minute per model.")]
TpmOpt = Annotated[float | None, typer.Option("--tpm", help="Tokens per minute per model.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds per request before retrying.")]
MaxAttemptsOpt = Annotated[int, typer.Option("--max-attempts", help="Tries per request (retries + 1).")]
MaxCostOpt = Annotated[float | None, typer.Option("--max-cost", help="Stop sending once this many USD would be spent.")]
PricesOpt = Annotated[
    Path | None, typer.Option("--prices", help="A price table YAML consulted before the built-in one.")
]
StoreOpt = Annotated[Path, typer.Option("--store", help="The SQLite store (created if missing).")]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", help="Send identical requests again instead of reusing stored answers.")
]
RetryErrorsOpt = Annotated[
    bool,
    typer.Option("--retry-errors", help="Send again the requests that failed or did not finish (truncated, "
                 "filtered, empty) in earlier runs."),
]
RetryMaxTokensOpt = Annotated[
    int | None,
    typer.Option("--retry-max-tokens", help="With --retry-errors: re-send truncated answers with this larger "
                 "token limit."),
]
EndpointMovedOpt = Annotated[
    bool,
    typer.Option("--endpoint-moved", help="A model's base URL changed since its stored answers, and it is the "
                 "same model: continue them."),
]
SameModelOpt = Annotated[
    bool,
    typer.Option("--same-model", help="A label's model string changed since its stored answers (a=sim:fair, "
                 "then a=sim:biased), and it is the same model: continue them."),
]
ParseProfileOpt = Annotated[
    str, typer.Option("--parse-profile", help="Parse (and analyse) answers with: default or a registered profile.")
]
EnvFileOpt = Annotated[
    Path | None, typer.Option("--env-file", help="A .env file with API keys and base URLs (never stored).")
]
ProgressOpt = Annotated[
    bool | None, typer.Option("--progress/--no-progress", help="Progress bar (default: on a terminal).")
]
ProgressEveryOpt = Annotated[
    float, typer.Option("--progress-every", metavar="SECONDS",
                        help="Without a terminal (logs, nohup): seconds between two progress lines.")
]
RayOpt = Annotated[
    str | None,
    typer.Option("--ray", metavar="[ADDRESS]", help="Answer on a Ray cluster: auto, HOST:PORT, ray://HOST:10001; "
                 "alone: a local Ray instance (pip install 'counterbench[ray]')."),
]
RayActorsOpt = Annotated[
    int | None, typer.Option("--ray-actors", help="Ray workers per model (default: the cluster's CPUs, shared).")
]
RayThreadsOpt = Annotated[
    int, typer.Option("--ray-threads", help="llama.cpp threads (and CPUs) of each embedded-model Ray worker.")
]
BatchOpt = Annotated[
    bool, typer.Option("--batch", help="Send through the provider's batch API at half the price (openai, "
                       "anthropic): answers within 24 h; rerun the same command to collect after a stop.")
]
BatchSizeOpt = Annotated[
    int | None, typer.Option("--batch-size", help="With --batch: requests per batch job at most (default: the "
                             "provider's limit).")
]
BatchPollOpt = Annotated[
    float, typer.Option("--batch-poll", help="With --batch: the longest wait between two polls of a job (s).")
]

#: what a bare ``--ray`` means (see :func:`optional_ray_address`)
RAY_LOCAL = "local"
#: exit codes of run and audit besides 0 (done) and 2 (a user mistake)
EXIT_MAX_COST = 3
EXIT_INTERRUPTED = 130

_DEFAULTS = RunOptions()
#: every flag of a verb that sends prompts: (parameter, its typer option, its default)
RUN_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    ("temperature", TemperatureOpt, GenerationOptions.temperature),
    ("max_tokens", MaxTokensOpt, None),
    ("generation_seed", GenerationSeedOpt, None),
    ("repeats", RepeatsOpt, GenerationOptions.repeats),
    ("reasoning_effort", ReasoningEffortOpt, None),
    ("structured", StructuredOpt, None),
    ("logprobs", LogprobsOpt, GenerationOptions.logprobs),
    ("structured_mode", StructuredModeOpt, None),
    ("structured_fallback", StructuredFallbackOpt, GenerationOptions.structured_fallback),
    ("concurrency", ConcurrencyOpt, _DEFAULTS.concurrency),
    ("rpm", RpmOpt, None),
    ("tpm", TpmOpt, None),
    ("timeout", TimeoutOpt, _DEFAULTS.timeout),
    ("max_attempts", MaxAttemptsOpt, _DEFAULTS.retry.max_attempts),
    ("max_cost", MaxCostOpt, None),
    ("prices", PricesOpt, None),
    ("store", StoreOpt, DEFAULT_STORE),
    ("no_cache", NoCacheOpt, False),
    ("retry_errors", RetryErrorsOpt, False),
    ("retry_max_tokens", RetryMaxTokensOpt, None),
    ("endpoint_moved", EndpointMovedOpt, False),
    ("same_model", SameModelOpt, False),
    ("parse_profile", ParseProfileOpt, _DEFAULTS.parse_profile),
    ("env_file", EnvFileOpt, None),
    ("progress", ProgressOpt, None),
    ("progress_every", ProgressEveryOpt, _DEFAULTS.progress_every),
    ("ray", RayOpt, None),
    ("ray_actors", RayActorsOpt, None),
    ("ray_threads", RayThreadsOpt, 1),
    ("batch", BatchOpt, False),
    ("batch_size", BatchSizeOpt, None),
    ("batch_poll", BatchPollOpt, _DEFAULTS.batch_poll),
)


def run_options_from_cli(
    models: list[str],
    *,
    temperature: float = GenerationOptions.temperature,
    max_tokens: int | None = None,
    generation_seed: int | None = None,
    repeats: int = GenerationOptions.repeats,
    reasoning_effort: str | None = None,
    structured: bool | None = None,
    logprobs: int = 0,
    structured_mode: str | None = None,
    structured_fallback: str = GenerationOptions.structured_fallback,
    max_attempts: int = _DEFAULTS.retry.max_attempts,
    progress: bool | None = None,
    ray: str | None = None,
    ray_actors: int | None = None,
    ray_threads: int = 1,
    **run: Any,
) -> RunOptions:
    """The :class:`RunOptions` of a verb's flags (``run`` holds the flags named like its fields).

    The generation config is checked here, so a bad flag is refused before any prompt is built.
    """
    from counterbench.options import RetryPolicy

    if not models:
        raise UserError("give at least one --model (see `counterbench models`), e.g. --model local")
    ray_setting = None
    if ray is not None:
        from counterbench.run.ray_exec import RayOptions

        ray_setting = RayOptions(address=None if ray == RAY_LOCAL else ray, actors=ray_actors, threads=ray_threads)
    elif ray_actors is not None or ray_threads != 1:
        raise UserError("--ray-actors and --ray-threads need --ray")
    generation = GenerationOptions(
        temperature=temperature, max_tokens=max_tokens, seed=generation_seed, reasoning_effort=reasoning_effort,
        structured=structured, structured_mode=structured_mode, structured_fallback=structured_fallback,
        logprobs=logprobs, repeats=repeats,
    )
    generation.config(models)  # refuses a bad generation flag now
    options = RunOptions(
        generation=generation,
        retry=RetryPolicy(max_attempts=max_attempts),
        progress="auto" if progress is None else ("rich" if progress else "plain"),
        command=shlex.join(["counterbench", *sys.argv[1:]]),
        ray=ray_setting,
        **run,
    )
    options.check()
    return options


def with_run_options(verb: Callable[..., None]) -> Callable[..., None]:
    """Give ``verb`` every flag of :data:`RUN_FLAGS` in place of its ``run_options`` parameter, and call it
    with them as one :class:`RunOptions` (built from its ``model`` flag too)."""
    hints = typing.get_type_hints(verb, include_extras=True)
    own = inspect.signature(verb)
    flags = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=option, default=default)
             for name, option, default in RUN_FLAGS]
    parameters: list[inspect.Parameter] = []
    for p in own.parameters.values():
        if p.name == "run_options":
            parameters += flags
        else:
            parameters.append(p.replace(annotation=hints.get(p.name, p.annotation)))
    names = [name for name, _, _ in RUN_FLAGS]

    @functools.wraps(verb)
    def wrapper(**values: Any) -> None:
        flag_values = {name: values.pop(name) for name in names}
        return verb(**values, run_options=run_options_from_cli(list(values.get("model") or []), **flag_values))

    wrapper.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    return wrapper


def send(table: pd.DataFrame, models: list[str], options: RunOptions) -> RunSummary:
    """Run ``table`` on ``models`` with ``options``; the summary says how it ended."""
    from counterbench.run.runner import run_prompts

    return run_prompts(table, models, options)


def optional_ray_address(argv: list[str]) -> list[str]:
    """Let ``--ray`` stand alone: ``--ray`` not followed by an address becomes ``--ray=local``.

    The next word is taken as the address when it looks like one (``auto``, ``local``, or anything
    with a colon: ``HOST:PORT``, ``ray://HOST:10001``); a study name or another option is not.
    """
    out: list[str] = []
    for i, word in enumerate(argv):
        if word == "--ray":
            following = argv[i + 1] if i + 1 < len(argv) else None
            looks_like_address = following is not None and not following.startswith("-") and (
                ":" in following or following in ("auto", RAY_LOCAL))
            if not looks_like_address:
                out.append(f"--ray={RAY_LOCAL}")
                continue
        out.append(word)
    return out
