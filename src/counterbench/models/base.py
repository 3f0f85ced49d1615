"""The backend protocol: what the run engine needs from any model.

A backend turns one :class:`ChatRequest` into one :class:`ChatResult`, or raises
:class:`BackendError`. It knows nothing about studies: the request carries the system and user
messages, a generation config, and a free-form ``metadata`` mapping (the simulated model reads its
``identifier``/``profile_id``/``use_case`` keys; real models ignore it). Retries, rate limits and
storage are the engine's job, not the backend's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling settings recorded with every response.

    ``structured`` asks the backend to constrain the answer to the study's format (a llama.cpp
    grammar for the embedded model, ``response_format``/``json_schema`` where an API supports it).
    ``reasoning_effort`` is ``None`` (off) by default.
    """

    temperature: float = 0.0
    max_tokens: int = 64
    seed: int | None = None
    reasoning_effort: str | None = None
    structured: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def fingerprint(self) -> str:
        """Stable short hash of the config (part of the store's unique key)."""
        blob = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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


def request_constraint(request: ChatRequest) -> Any | None:
    """The request's constraint: its own, else its outcome kind's (``rate``, ``label:yes|no``, an amount type)."""
    if request.constraint is not None:
        return request.constraint
    from counterbench.outcomes import constraint_for

    return constraint_for(request.answer_type)


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


class BackendError(Exception):
    """A failed request. ``retryable`` tells the engine whether to try again.

    ``status`` is the HTTP status when there was one; ``retry_after`` the server's Retry-After in
    seconds when given. The message never contains an API key.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


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
