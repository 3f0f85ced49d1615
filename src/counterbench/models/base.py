"""The backend protocol: what the run engine needs from any model.

A backend turns one :class:`ChatRequest` into one :class:`ChatResult`, or raises
:class:`BackendError`. It knows nothing about studies: the request carries the system and user
messages, a generation config, and a free-form ``metadata`` mapping (the simulated model reads its
``identifier``/``profile_id``/``use_case`` keys; real models ignore it). Retries, rate limits and
storage are the engine's job, not the backend's.

Two optional courtesies let the engine time requests fairly: ``max_concurrency`` (how many requests
the backend can work on at once; the engine sends no more, see :func:`backend_concurrency`) and
:func:`waiting_turn` (around a request's wait in the backend's own queue; the engine's per-request
timeout is paused during it and counts from its end).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import numbers
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from counterbench.columns import DEFAULT_MAX_TOKENS
from counterbench.outcomes.logprobs import TokenLogprob


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling settings recorded with every response.

    ``structured`` asks the backend to constrain the answer to the study's format, the way its server
    family supports (see :mod:`counterbench.models.structured`); ``structured_mode`` overrides the
    family's default (``json_schema``, ``json_object``, ``grammar``, ``regex``, ``tool``, ``none``), and
    ``structured_fallback`` says what to do when a server refuses the constraint: ``free-text`` (send
    the prompts without it, with a warning recorded in the run) or ``stop``.
    ``reasoning_effort`` is ``None`` (off) by default. ``logprobs`` (0: off) asks backends that can for
    that many most likely tokens at each answer position, for label and choice answers only (see
    :mod:`counterbench.outcomes.logprobs`).

    ``prompt_max_tokens`` lets a prompt's own ``requested_max_tokens`` (a prompt-table column, e.g. the
    512 of a study that asks for long explanations) replace ``max_tokens`` for that prompt; ``max_tokens`` then only
    bounds prompts that request nothing. It is on when the user did not give ``--max-tokens`` (an
    explicit limit wins) and the prompt table requests limits; the run engine applies it per request
    (:meth:`for_prompt`), so every backend receives the prompt's limit.

    ``repeat`` is the repeat's index (``--repeats K``: each prompt asked K times): repeat 0 is the one request
    a run without repeats sends; repeat k ≥ 1 is its own config (its own fingerprint, so its answers are stored
    and cached apart) sent with the seed :attr:`sent_seed`.

    The structured fields, ``prompt_max_tokens``, ``logprobs`` and ``repeat`` enter :meth:`as_dict` (and so the
    fingerprint) only when they differ from their defaults, so configs recorded before they existed keep
    their fingerprints (a stored config without ``repeat`` is repeat 0).
    """

    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int | None = None
    reasoning_effort: str | None = None
    structured: bool = False
    structured_mode: str | None = None
    structured_fallback: str = "free-text"
    prompt_max_tokens: bool = False
    logprobs: int = 0
    repeat: int = 0

    @property
    def sent_seed(self) -> int | None:
        """The seed a backend that takes one sends: ``seed`` for repeat 0; ``seed + repeat`` for a later repeat
        (``repeat`` itself when no seed was given), so every repeat is a seeded draw of its own."""
        if not self.repeat:
            return self.seed
        return (self.seed or 0) + self.repeat

    def for_repeat(self, repeat: int) -> GenerationConfig:
        """The config of repeat ``repeat`` (0: the run's own config)."""
        return self if repeat == self.repeat else replace(self, repeat=repeat)

    def for_prompt(self, requested: int | None) -> GenerationConfig:
        """The config one prompt is sent with: its ``requested`` limit when ``prompt_max_tokens`` is on."""
        if requested is None or not self.prompt_max_tokens or requested == self.max_tokens:
            return self
        return replace(self, max_tokens=requested)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for name, default in _LATER_DEFAULTS.items():
            if out[name] == default:
                del out[name]
        return out

    def fingerprint(self) -> str:
        """Stable short hash of the config (part of the store's unique key)."""
        blob = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: fields added after stores were first written, left out of ``as_dict`` at their default value
_LATER_DEFAULTS: dict[str, Any] = {"structured_mode": None, "structured_fallback": "free-text",
                                   "prompt_max_tokens": False, "logprobs": 0, "repeat": 0}

#: one generated token: its text, its log-probability, and the most likely alternatives at its position
#: (text, log-probability), as OpenAI-protocol servers and llama.cpp report them


@dataclass(frozen=True)
class ChatRequest:
    """One prompt to send: a system message, one user message, and what the answer should look like.

    ``answer_type`` names the expected answer (an amount type such as ``inr_annual``, an outcome kind's
    answer type such as ``label:yes|no`` or ``score:1:10``, or ``None`` for free text); backends that
    support structured output use :func:`request_constraint`.
    """

    prompt_id: str
    system: str
    user: str
    config: GenerationConfig = field(default_factory=GenerationConfig)
    answer_type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: an explicit structured-output constraint (``.regex``, ``.gbnf``, ``.json_schema()``); backends prefer
    #: it over the one looked up from ``answer_type`` (see :func:`request_constraint`)
    constraint: Any | None = None


@dataclass(frozen=True)
class ChatResult:
    """What came back. ``text`` is untrusted model output, kept verbatim.

    ``finish_reason`` uses OpenAI's vocabulary (``stop``, ``length``, ``content_filter``, ...); other
    providers' reasons are mapped onto it by their backend.
    """

    text: str | None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    model_reported: str | None = None
    #: cost the provider itself reported (OpenRouter's ``usage.cost``), else ``None``
    cost_usd: float | None = None
    #: the answer's tokens with their log-probabilities, when asked for and the backend can give them
    token_logprobs: tuple[TokenLogprob, ...] | None = None


def reads_answer_probabilities(request: ChatRequest) -> bool:
    """Whether the answer's kind reads the log-probabilities of its allowed answers (a short list, as a label's
    or a choice's, whose log-probabilities give p(yes): the kind's ``probability_labels``)."""
    from counterbench.outcomes.logprobs import allowed_answers

    return bool(allowed_answers(request.answer_type))


def wants_logprobs(request: ChatRequest) -> bool:
    """Whether to ask the backend for token log-probabilities: ``logprobs`` is on and the answer is a
    label or a choice."""
    return request.config.logprobs > 0 and reads_answer_probabilities(request)


def token_logprobs_from(content: Any) -> tuple[TokenLogprob, ...] | None:
    """Tokens from an OpenAI-protocol ``choices[0].logprobs.content`` list (``None`` when absent or
    malformed)."""
    if not isinstance(content, list) or not content:
        return None
    out = []
    for item in content:
        if not isinstance(item, Mapping) or not isinstance(item.get("token"), str):
            return None
        top = item.get("top_logprobs") or []
        alternatives = tuple((str(t["token"]), float(t["logprob"])) for t in top
                             if isinstance(t, Mapping) and isinstance(t.get("logprob"), numbers.Real)
                             and isinstance(t.get("token"), str))
        logprob = item.get("logprob")
        if not isinstance(logprob, numbers.Real):  # llama.cpp gives numpy floats
            return None
        out.append((item["token"], float(logprob), alternatives))
    return tuple(out)


class BackendError(Exception):
    """A failed request. ``retryable`` tells the engine whether to try again.

    ``status`` is the HTTP status when there was one; ``retry_after`` the server's Retry-After in
    seconds when given. ``fatal`` means no later request of this model can succeed either (e.g. the
    server refused the structured-output constraint and the user chose to stop): the run stops.
    The message never contains an API key.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        fatal: bool = False,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.fatal = fatal


#: statuses of a stored response. ``ok``/``refused``/``unparseable`` are finished answers; the others
#: are re-sent by ``--retry-errors``: ``error`` (no answer), ``truncated`` (``finish_reason: length``),
#: ``filtered`` (``finish_reason: content_filter``) and ``empty`` (a blank reply, every attempt)
FINISHED_STATUSES: tuple[str, ...] = ("ok", "refused", "unparseable")
RETRYABLE_STATUSES: tuple[str, ...] = ("error", "truncated", "filtered", "empty")
STATUSES: tuple[str, ...] = FINISHED_STATUSES + RETRYABLE_STATUSES


def redact_secret(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (an API key) shown as ``***``."""
    return text.replace(secret, "***") if secret else text


class ProviderBackend:
    """What the backends that call a provider's API share: the label (``name``), the provider's model, the
    endpoint, the timeout and the API key, which no message and no ``repr`` shows."""

    simulated = False

    def __init__(self, *, name: str, model: str, base_url: str | None, timeout_s: float, secret: str | None) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._secret = secret

    def __repr__(self) -> str:
        key = "'***'" if self._secret else "None"
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r}, api_key={key})"

    def _redact(self, text: str) -> str:
        return redact_secret(text, self._secret)


def endpoint_of(backend: object) -> str | None:
    """The base URL a backend sends to (``None``: none, or the provider's default), never a secret.

    User info (``user:password@``), the query string and the fragment are dropped, since keys are
    sometimes passed there.
    """
    url = getattr(backend, "base_url", None)
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


_QUEUE_HOOK: ContextVar[Callable[[bool], None] | None] = ContextVar("counterbench_queue_hook", default=None)


@contextmanager
def waiting_turn() -> Iterator[None]:
    """Wrap a backend's wait for its turn (its model lock, a semaphore, ...) around the current request.

    The caller's per-request timeout (the run engine's) is paused for the wait and counts afresh from
    its end, when the backend actually starts on the request: waiting behind other requests never times
    a request out. Use it from the event loop. Without a caller listening (a backend called directly)
    it does nothing.
    """
    hook = _QUEUE_HOOK.get()
    if hook is None:
        yield
        return
    hook(True)
    try:
        yield
    finally:
        hook(False)


@contextmanager
def on_queue_wait(hook: Callable[[bool], None]) -> Iterator[None]:
    """Call ``hook(True)`` when a backend called in this block starts waiting for its turn, ``hook(False)`` after."""
    token = _QUEUE_HOOK.set(hook)
    try:
        yield
    finally:
        _QUEUE_HOOK.reset(token)


class LoopLocks:
    """One :class:`asyncio.Lock` per running event loop: a backend may serve several runs, each under its
    own loop, and a lock belongs to one loop. A copy sent to another process (a Ray worker) starts empty."""

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"_locks": {}}

    def current(self) -> asyncio.Lock:
        """The running event loop's lock (made on first use)."""
        key = id(asyncio.get_running_loop())
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def forget_current(self) -> None:
        """Drop the running event loop's lock (its run is over)."""
        self._locks.pop(id(asyncio.get_running_loop()), None)

    def clear(self) -> None:
        """Drop every loop's lock."""
        self._locks.clear()


def backend_concurrency(backend: object) -> int | None:
    """How many requests ``backend`` can work on at once (its optional ``max_concurrency``), else ``None``.

    A backend that runs one request at a time (the embedded model) sets ``max_concurrency = 1``: the run
    engine then never has more of its requests in flight, so none waits queued inside it (where it
    could neither be timed fairly nor abandoned on Ctrl-C).
    """
    cap = getattr(backend, "max_concurrency", None)
    return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1 else None


@runtime_checkable
class Backend(Protocol):
    """A model the engine can call. Implementations live one per file in :mod:`counterbench.models`."""

    #: canonical model string, e.g. ``openai:gpt-4o-mini`` or ``sim:biased`` (never contains a key)
    name: str
    #: True for simulated models: outputs are labelled as such everywhere
    simulated: bool

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Send one request; raise :class:`BackendError` on failure."""
        ...

    async def aclose(self) -> None:
        """Release what is bound to the running event loop (connections, locks).

        The run engine calls this when a run ends. The backend must stay usable afterwards: a later
        call (possibly under another event loop) reopens what it needs. Expensive state that is not
        tied to a loop, such as an embedded model's weights and KV cache, may be kept.
        """
        ...
