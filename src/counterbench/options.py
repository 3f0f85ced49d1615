"""The typed run and generation options every verb, the Python API and the Inspect task share.

One home for each setting of a run: how answers are generated (:class:`GenerationOptions`) and how
prompts are sent and stored (:class:`RunOptions`). ``counterbench run`` / ``audit`` build them from
their flags (:mod:`counterbench.commands.run_options`), ``counterbench.run_prompts`` and
``counterbench.audit`` from keywords (:meth:`RunOptions.from_keywords`), and the Inspect task reads the
token-limit rule from here (:func:`prompt_token_limit`).

The token-limit rule, stated once: without ``max_tokens`` each prompt is sent with its own
``requested_max_tokens`` (a prompt-table column, e.g. 512 for long explanations), and with
:data:`DEFAULT_MAX_TOKENS` when it requests none; an explicit ``max_tokens`` is every prompt's limit.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from counterbench.columns import DEFAULT_MAX_TOKENS
from counterbench.errors import UserError

if TYPE_CHECKING:
    from counterbench.models.base import Backend, GenerationConfig

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_STORE", "GenerationOptions", "RunOptions", "StoppingRule",
           "prompt_token_limit", "resolve_structured"]

#: the store a run writes when none is named
DEFAULT_STORE = Path("counterbench.db")
#: rows the store's writer gathers at most before one commit
DEFAULT_BATCH_ROWS = 512
#: seconds between two plain progress lines (no terminal: nohup, CI logs) unless ``--progress-every`` says otherwise
PLAIN_EVERY_S = 5.0


def resolve_structured(structured: bool | None, models: Sequence[str | Backend]) -> bool:
    """``structured`` as given; otherwise on only when every model is the embedded one (``local``).

    The 135M embedded model rarely follows the answer format in free text, so its answers are
    constrained by a grammar unless the user asks for free text. Hosted and server models are asked in
    free text, as in the papers, unless ``structured`` is on.
    """
    if structured is not None:
        return structured
    from counterbench.models.labels import split_label

    specs = [split_label(m)[1] if isinstance(m, str) else getattr(m, "name", "") for m in models]
    return bool(specs) and all(m == "local" or m.startswith("local:") for m in specs)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, or the server's ``Retry-After`` as given (up to a cap).

    Attempt ``n`` (1-based) that failed with a retryable error waits the server's Retry-After when
    it sent one (capped at ``max_retry_after``, plus up to 5% jitter so refused requests do not
    return in lockstep); otherwise a random time in ``[d/2, d]`` with
    ``d = min(max_delay, base_delay * 2**(n-1))``. Only the refused request waits: the other
    requests of the run carry on (a provider's overload is handled by :class:`AdaptiveLimit`).
    """

    max_attempts: int = 6
    base_delay: float = 0.1
    max_delay: float = 30.0
    max_retry_after: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise UserError(f"--max-attempts must be at least 1, got {self.max_attempts}")
        for value in (self.base_delay, self.max_delay, self.max_retry_after):
            if not (math.isfinite(value) and value >= 0):
                raise UserError("retry delays must be finite and not negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            wait = min(retry_after, self.max_retry_after)
            return wait * random.uniform(1.0, 1.05)
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)


@dataclass(frozen=True)
class GenerationOptions:
    """How the models are asked to answer (recorded with every response as a ``GenerationConfig``).

    ``max_tokens=None``: each prompt's own limit (the module's rule). ``structured=None``: on for the
    embedded model only. A ``structured_mode`` other than ``none`` implies ``structured``; ``none`` means
    free text. ``logprobs`` (0: off) asks for that many most likely tokens of label and choice answers.
    ``repeats`` (``--repeats K``) asks every prompt K times: repeat 0 is the request a run without repeats
    sends, repeat k ≥ 1 goes with its own config (``GenerationConfig.repeat``, seed ``seed + k`` where the
    backend takes one) and is stored and cached apart; every table averages a prompt's answers first.
    """

    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    reasoning_effort: str | None = None
    structured: bool | None = None
    structured_mode: str | None = None
    structured_fallback: str = "free-text"
    logprobs: int = 0
    repeats: int = 1

    def config(self, models: Sequence[str | Backend]) -> GenerationConfig:
        """The generation config every one of ``models`` gets. Free text records neither structured
        setting, so it shares its fingerprint with plain free text."""
        from counterbench.models.base import GenerationConfig

        check_repeats(self.repeats)
        structured, mode = self.structured, self.structured_mode
        if mode == "none":
            structured, mode = False, None
        elif structured is None and mode is not None:
            structured = True
        on = resolve_structured(structured, models)
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)):
            raise UserError(f"--max-tokens must be a whole number, got {self.max_tokens!r}")
        config = GenerationConfig(
            temperature=self.temperature,
            max_tokens=DEFAULT_MAX_TOKENS if self.max_tokens is None else self.max_tokens,
            prompt_max_tokens=self.max_tokens is None,  # an explicit limit applies to every prompt
            seed=self.seed,
            reasoning_effort=self.reasoning_effort or None,
            structured=on,
            structured_mode=(mode or None) if on else None,
            structured_fallback=self.structured_fallback if on else "free-text",
            logprobs=self.logprobs,
        )
        return checked(config)


def check_repeats(repeats: object) -> int:
    """``repeats`` (``--repeats``) once it is a whole number of at least 1."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise UserError(f"--repeats must be a whole number of at least 1, got {repeats!r}")
    return repeats


def checked(config: GenerationConfig) -> GenerationConfig:
    """``config`` once its structured settings, token limit and temperature are known to be usable."""
    from counterbench.models.structured import check_config

    check_config(config)
    if config.max_tokens < 1:
        raise UserError(f"--max-tokens must be at least 1, got {config.max_tokens}")
    if not (math.isfinite(config.temperature) and config.temperature >= 0):
        raise UserError(f"--temperature must be a number, 0 or more, got {config.temperature:g}")
    return config


def prompt_token_limit(requested: int | None, max_tokens: int | None = None) -> int:
    """The output-token limit one prompt is sent with (the module's rule): ``max_tokens`` when given,
    else the prompt's ``requested`` limit, else :data:`DEFAULT_MAX_TOKENS`."""
    return GenerationOptions(max_tokens=max_tokens).config([]).for_prompt(requested).max_tokens


#: keywords of the Python API that are generation options (``generation_seed`` is ``seed``'s CLI name,
#: for :func:`counterbench.audit`, whose ``seed`` is the prompt sample's)
GENERATION_KEYWORDS = {f.name: f.name for f in dataclasses.fields(GenerationOptions)} | {"generation_seed": "seed"}


@dataclass(frozen=True)
class StoppingRule:
    """``--stop-when decided``: send the design's slots in a seeded random order, ``look_every`` prompts (whole
    slots) a round, and stop a model when every comparison of its family is decided (see
    :mod:`counterbench.analyses.sequential`). ``alpha``: the family's error over every look; ``interim_alpha``:
    the part spent on the looks before the full design; ``margins``: the equivalence margin per outcome kind
    (``*``: every kind), in the kind's gap unit; ``seed``: the order of the slots."""

    alpha: float = 0.05
    interim_alpha: float = 0.01
    margins: Mapping[str, float] = field(default_factory=dict)
    look_every: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1 or not 0 < self.interim_alpha < self.alpha:
            raise UserError(f"the stopping rule needs 0 < interim alpha < alpha < 1, got {self.interim_alpha:g} "
                            f"and {self.alpha:g}")
        if isinstance(self.look_every, bool) or not isinstance(self.look_every, int) or self.look_every < 1:
            raise UserError(f"--look-every must be a whole number of prompts, 1 or more, got {self.look_every!r}")
        for kind, margin in self.margins.items():
            if not isinstance(margin, int | float) or not math.isfinite(margin) or margin <= 0:
                raise UserError(f"--margin for {kind} must be a positive number, got {margin!r}")

    def as_dict(self) -> dict[str, Any]:
        """The rule as the store records it (in the run's settings)."""
        return {"alpha": self.alpha, "interim_alpha": self.interim_alpha, "margins": dict(self.margins),
                "look_every": self.look_every, "seed": self.seed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoppingRule:
        return cls(alpha=float(data["alpha"]), interim_alpha=float(data["interim_alpha"]),
                   margins={str(k): float(v) for k, v in dict(data.get("margins", {})).items()},
                   look_every=int(data["look_every"]), seed=int(data["seed"]))


def parse_margins(texts: Sequence[str]) -> dict[str, float]:
    """``--margin`` values: ``5`` or ``5%`` (every kind) and ``KIND=5`` (one kind), in the kind's gap unit."""
    out: dict[str, float] = {}
    for text in texts:
        kind, _, value = text.rpartition("=")
        number = value.strip().rstrip("%").strip()
        try:
            margin = float(number)
        except ValueError:
            raise UserError(f"--margin takes a number or KIND=NUMBER (e.g. 5, amount=5%, label=10), got {text!r}"
                            ) from None
        if not math.isfinite(margin) or margin <= 0:
            raise UserError(f"--margin must be a positive number, got {text!r}")
        out[kind.strip() or "*"] = margin
    return out


@dataclass(frozen=True)
class RunOptions:
    """How prompts are sent and where the answers go: every option of ``counterbench run``.

    ``config`` is a ready ``GenerationConfig`` used as given instead of ``generation`` (for callers
    that build one themselves). ``retry_errors`` also re-sends stored ``truncated``/``filtered``/``empty``
    answers; ``retry_max_tokens`` sends the ``truncated`` ones with that larger limit. ``endpoint_moved``
    says a model whose base URL changed since its stored answers is still the same model; ``same_model``
    says a label whose model string changed since its stored answers still names the same model. ``ray``
    (``True``, an address or ``RayOptions``) answers on Ray actors. ``progress``: ``off``, ``auto``,
    ``rich`` or ``plain`` (``None``: ``rich`` in a notebook, else ``off``); ``progress_every``: seconds between
    two ``plain`` progress lines (logs, ``nohup``). ``handle_signals`` (``None``:
    when the call runs in the main thread outside an event loop) lets Ctrl-C stop the run cleanly.
    ``command`` is recorded (secrets redacted) as the command that resumes the run. ``batch`` sends the
    prompts through the provider's batch API at the batch price (``openai`` and ``anthropic`` models;
    :mod:`counterbench.run.batch_engine`), at most ``batch_size`` requests per job (``None``: the provider's
    limit), polling at most ``batch_poll`` seconds apart.
    """

    store: Path | str = DEFAULT_STORE
    generation: GenerationOptions = field(default_factory=GenerationOptions)
    config: GenerationConfig | None = None
    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    timeout: float = 60.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_cost: float | None = None
    prices: Path | str | None = None
    no_cache: bool = False
    retry_errors: bool = False
    retry_max_tokens: int | None = None
    endpoint_moved: bool = False
    same_model: bool = False
    parse_profile: str = "default"
    env_file: Path | str | None = None
    env: Mapping[str, str] | None = None
    progress: str | None = None
    progress_every: float = PLAIN_EVERY_S
    ray: Any = None
    command: str | None = None
    handle_signals: bool | None = None
    batch_rows: int = DEFAULT_BATCH_ROWS
    #: seconds the writer waits for more rows before a commit (``None``: the writer's own default)
    commit_window: float | None = None
    batch: bool = False
    batch_size: int | None = None
    batch_poll: float = 60.0
    #: the sequential rule this run is a round of (``--stop-when decided``): recorded in the store's run
    #: settings; :func:`counterbench.sequential.run_until_decided` drives the rounds
    stopping: StoppingRule | None = None

    @classmethod
    def from_keywords(cls, base: RunOptions | None = None, **keywords: Any) -> RunOptions:
        """``base`` (default: the defaults) with ``keywords`` replacing its fields; generation options
        (``temperature``, ``max_tokens``, ``seed``, ...) and ``max_attempts`` may be given flat."""
        options = base or cls()
        run_names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(k for k in keywords if k not in run_names and k not in GENERATION_KEYWORDS
                         and k != "max_attempts")
        if unknown:
            known = ", ".join(sorted(run_names | set(GENERATION_KEYWORDS) | {"max_attempts"}))
            raise TypeError(f"unknown run option {unknown[0]!r}; known: {known}")
        generation = {GENERATION_KEYWORDS[k]: keywords.pop(k) for k in list(keywords)
                      if k in GENERATION_KEYWORDS and keywords[k] is not None}
        for k in [k for k in keywords if k in GENERATION_KEYWORDS]:
            keywords.pop(k)  # given as None: the default
        if generation:
            if keywords.get("config", options.config) is not None:
                raise UserError("give generation options either as keywords or as config=, not both")
            keywords["generation"] = dataclasses.replace(keywords.get("generation", options.generation), **generation)
        if "max_attempts" in keywords:
            keywords["retry"] = dataclasses.replace(keywords.get("retry", options.retry),
                                                    max_attempts=keywords.pop("max_attempts"))
        if keywords.get("retry", options.retry) is None:
            keywords["retry"] = RetryPolicy()
        return dataclasses.replace(options, **keywords)

    def generation_config(self, models: Sequence[str | Backend]) -> GenerationConfig:
        """The generation config of this run (``config`` as given, else built from ``generation``)."""
        if self.config is None:
            return self.generation.config(models)
        return checked(self.config)

    def check(self) -> None:
        """Refuse settings no run can use, before anything is sent."""
        c = self.concurrency
        if not isinstance(c, int) or isinstance(c, bool) or c < 1:
            raise UserError(f"--concurrency must be a whole number of at least 1, got {c!r}")
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise UserError(f"--timeout must be a number of seconds greater than 0, got {self.timeout!r}")
        if self.max_cost is not None and not (math.isfinite(self.max_cost) and self.max_cost >= 0):
            raise UserError(f"--max-cost must be a number, 0 or more (USD), got {self.max_cost!r}")
        window = 0.0 if self.commit_window is None else self.commit_window
        if self.batch_rows < 1 or not (math.isfinite(window) and window >= 0):
            raise UserError("the store batch size must be positive and the commit window not negative")
        size = self.batch_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise UserError(f"--batch-size must be a whole number of at least 1, got {size!r}")
        if not (isinstance(self.batch_poll, int | float) and math.isfinite(self.batch_poll) and self.batch_poll > 0):
            raise UserError(f"--batch-poll must be a number of seconds greater than 0, got {self.batch_poll!r}")
        if self.batch and self.ray is not None:
            raise UserError("--batch and --ray do not go together: a batch job is answered by the provider")
        every = self.progress_every
        if isinstance(every, bool) or not (isinstance(every, int | float) and math.isfinite(every) and every > 0):
            raise UserError(f"--progress-every must be a number of seconds greater than 0, got {every!r}")
        if self.progress not in (None, "off", "auto", "rich", "plain"):
            raise UserError(f"progress must be off, auto, rich or plain, got {self.progress!r}")
