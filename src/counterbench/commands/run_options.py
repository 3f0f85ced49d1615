"""Options shared by the verbs that send prompts (``run`` and ``audit``), and the call they make.

Both verbs take the same generation, rate-limit, retry, cost and store options; they are declared
once here and turned into one :func:`~counterbench.run.runner.run_prompts` call by :func:`send`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from counterbench.commands.common import resolve_structured
from counterbench.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from counterbench.models.base import GenerationConfig
    from counterbench.run.runner import RunSummary

ModelOpt = Annotated[
    list[str] | None,
    typer.Option("--model", "-m", help="Model string, repeatable: local, sim:biased, openai:gpt-4o-mini, ..."),
]
TemperatureOpt = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option("--max-tokens", help="Maximum tokens per answer, for every prompt. Default: a prompt's own "
                 "requested_max_tokens where it has one (e.g. STEM generation: 512), else 64."),
]
GenerationSeedOpt = Annotated[
    int | None, typer.Option("--generation-seed", help="Seed sent to the model (where supported).")
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
    str, typer.Option("--parse-profile", help="Parse (and analyse) answers with: default or rupeebias-v1.")
]
EnvFileOpt = Annotated[
    Path | None, typer.Option("--env-file", help="A .env file with API keys and base URLs (never stored).")
]
ProgressOpt = Annotated[
    bool | None, typer.Option("--progress/--no-progress", help="Progress bar (default: on a terminal).")
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

DEFAULT_STORE = Path("counterbench.db")
#: what a bare ``--ray`` means (see :func:`optional_ray_address`)
RAY_LOCAL = "local"
#: output-token limit of prompts that request none, when --max-tokens is not given
DEFAULT_MAX_TOKENS = 64
#: exit codes of run and audit besides 0 (done) and 2 (a user mistake)
EXIT_MAX_COST = 3
EXIT_INTERRUPTED = 130


def generation_config(
    models: list[str],
    *,
    temperature: float,
    max_tokens: int | None,
    generation_seed: int | None,
    reasoning_effort: str | None,
    structured: bool | None,
    structured_mode: str | None = None,
    structured_fallback: str = "free-text",
    logprobs: int = 0,
) -> GenerationConfig:
    """The generation config every model of this command gets (recorded with each response).

    Without ``--max-tokens`` (``max_tokens=None``) a prompt's own ``requested_max_tokens`` is its limit
    (64 for prompts without one); an explicit ``--max-tokens`` is every prompt's limit.

    A ``--structured-mode`` other than ``none`` implies ``--structured``; ``none`` means free text.
    Free text records neither structured setting, so it shares its fingerprint with plain free text.
    """
    from counterbench.models.base import GenerationConfig
    from counterbench.models.structured import check_config

    if structured_mode == "none":
        structured, structured_mode = False, None
    elif structured is None and structured_mode is not None:
        structured = True
    on = resolve_structured(structured, models)
    config = GenerationConfig(
        temperature=temperature,
        max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
        prompt_max_tokens=max_tokens is None,  # an explicit --max-tokens applies to every prompt
        seed=generation_seed,
        reasoning_effort=reasoning_effort or None,
        structured=on,
        structured_mode=(structured_mode or None) if on else None,
        structured_fallback=structured_fallback if on else "free-text",
        logprobs=logprobs,
    )
    check_config(config)
    return config


def send(
    table: pd.DataFrame,
    models: list[str],
    config: GenerationConfig,
    *,
    concurrency: int,
    rpm: float | None,
    tpm: float | None,
    timeout: float,
    max_attempts: int,
    max_cost: float | None,
    prices: Path | None,
    store: Path,
    no_cache: bool,
    retry_errors: bool,
    parse_profile: str,
    env_file: Path | None,
    progress: bool | None,
    retry_max_tokens: int | None = None,
    endpoint_moved: bool = False,
    same_model: bool = False,
    ray: str | None = None,
    ray_actors: int | None = None,
    ray_threads: int = 1,
) -> RunSummary:
    """Check the options and run ``table`` on ``models``; the summary says how it ended."""
    from counterbench.run.limits import RetryPolicy
    from counterbench.run.runner import run_prompts

    if not models:
        raise UserError("give at least one --model (see `counterbench models`), e.g. --model local")
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    ray_setting = None
    if ray is not None:
        from counterbench.run.ray_exec import RayOptions

        address = None if ray == RAY_LOCAL else ray
        ray_setting = RayOptions(address=address, actors=ray_actors, threads=ray_threads)
    elif ray_actors is not None or ray_threads != 1:
        raise UserError("--ray-actors and --ray-threads need --ray")
    return run_prompts(
        table,
        models,
        store=store,
        config=config,
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        timeout=timeout,
        max_cost=max_cost,
        prices=prices,
        no_cache=no_cache,
        retry_errors=retry_errors,
        retry_max_tokens=retry_max_tokens,
        endpoint_moved=endpoint_moved,
        same_model=same_model,
        env_file=env_file,
        parse_profile=parse_profile,
        retry=RetryPolicy(max_attempts=max_attempts),
        progress="auto" if progress is None else ("rich" if progress else "plain"),
        command=shlex.join(["counterbench", *sys.argv[1:]]),
        ray=ray_setting,
    )


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
