"""Structured output per server family: which constraint each kind of server gets, and what happens
when a server refuses it.

A *constraint* is any object with the attributes of
:class:`~counterbench.outcomes.answer_formats.AnswerFormat`: ``.regex`` (an anchored regex for the whole
answer), ``.gbnf`` (a llama.cpp grammar) and ``.json_schema()`` (an OpenAI ``response_format``). The
request shaping here uses nothing else, so any outcome kind's constraint works unchanged.
:func:`constraint_for` finds a request's constraint.

=====================  ===============  ==================================================================
family (model kind)    default mode     modes it accepts (``--structured-mode``)
=====================  ===============  ==================================================================
``openai``             ``json_schema``  ``json_schema``, ``json_object``, ``none``
``openrouter``         ``json_schema``  ``json_schema``, ``none`` (routed only to providers that take it)
``anthropic``          ``tool``         ``tool``, ``json_schema`` (``output_config``), ``none``
``vllm``               ``regex``        ``regex``, ``grammar``, ``json_schema``, ``none``
``ollama``             ``json_schema``  ``json_schema`` (Ollama's ``format``), ``json_object``, ``none``
``llamacpp``           ``grammar``      ``grammar``, ``json_schema``, ``json_object``, ``none``
``openai-compatible``  ``json_schema``  every mode above but ``tool``
``local``              ``grammar``      ``grammar``, ``none``
=====================  ===============  ==================================================================

How each mode is spelled in the request body (:func:`shape_payload`):

* ``json_schema`` — ``response_format: {"type": "json_schema", "json_schema": {"name", "strict": true,
  "schema"}}`` (OpenAI; Ollama passes ``json_schema.schema`` on as its native ``format``; llama-server
  and vLLM accept it too). The reply ``{"answer": "..."}`` is unwrapped (``{"rationale": "...", "answer":
  "..."}``, for prompts that ask for a rationale, becomes the rationale, a line break, the answer).
* ``json_object`` — ``response_format: {"type": "json_object", "schema": ...}`` (llama-cpp-python's
  server; llama-server). Unwrapped the same way.
* ``grammar`` — llama.cpp servers: a top-level ``grammar`` (GBNF); vLLM: ``structured_outputs:
  {"grammar": ...}``. The reply is the bare answer line.
* ``regex`` — vLLM's ``structured_outputs: {"regex": ...}``; the reply is the bare line.
* ``tool`` — Anthropic: one tool whose input schema is the answer, forced with ``tool_choice``.

A server that refuses the constraint (HTTP 400/404/422, or a 500 whose body is a request-validation
error) is detected on the first constrained request: until a server has answered one, constrained
requests go one at a time (:class:`ConstraintGate`). On a refusal, with
``structured_fallback="free-text"``, the backend tries the next mode the family offers for it
(:data:`NEXT_MODES`: ``json_schema`` → ``json_object`` with the same schema, as llama-cpp-python's
server takes it), and only when no constrained mode is left sends that request, and every later one,
without the constraint; each refusal records one warning. With ``"stop"`` it raises a fatal
:class:`BackendError` that stops the run. A refused request is never sent again in the refused mode.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from counterbench.errors import UserError
from counterbench.json_limits import loads_bounded
from counterbench.models.base import BackendError, ChatRequest, GenerationConfig, LoopLocks

T = TypeVar("T")

MODES = ("json_schema", "json_object", "grammar", "regex", "tool", "none")
FALLBACKS = ("free-text", "stop")

#: model kind -> (default mode, accepted modes)
FAMILY_MODES: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai": ("json_schema", ("json_schema", "json_object", "none")),
    "openrouter": ("json_schema", ("json_schema", "none")),
    "anthropic": ("tool", ("tool", "json_schema", "none")),
    "vllm": ("regex", ("regex", "grammar", "json_schema", "none")),
    "ollama": ("json_schema", ("json_schema", "json_object", "none")),
    "llamacpp": ("grammar", ("grammar", "json_schema", "json_object", "none")),
    "openai-compatible": ("json_schema", ("json_schema", "json_object", "grammar", "regex", "none")),
    "local": ("grammar", ("grammar", "none")),
}
#: a refused mode -> the modes tried after it before free text (if the family accepts them; not with ``stop``)
NEXT_MODES: dict[str, tuple[str, ...]] = {"json_schema": ("json_object",)}
#: modes the OpenAI-protocol backend can send
HTTP_MODES = ("json_schema", "json_object", "grammar", "regex", "none")
#: modes whose reply is a JSON object holding the answer
JSON_MODES = frozenset({"json_schema", "json_object", "tool"})


class Constraint(Protocol):
    """What an answer must look like, in the three forms servers understand."""

    @property
    def regex(self) -> str: ...

    @property
    def gbnf(self) -> str: ...

    def json_schema(self) -> dict[str, Any]: ...


def constraint_for(request: ChatRequest) -> Constraint | None:
    """The request's constraint: its own ``constraint`` if it carries one, else its ``answer_type``'s format.

    A prompt that asks for a rationale before its final line (a true ``rationale`` column in the prompt
    table, e.g. a study's ``_rationale`` use cases) gets the format preceded by a bounded one-line
    rationale sized to the token limit (:class:`~counterbench.outcomes.base.RationaleConstraint`), so a
    constrained model can still explain itself.
    """
    own = getattr(request, "constraint", None)
    if own is not None:
        return own
    from counterbench.outcomes import constraint_for as outcome_constraint
    from counterbench.outcomes.base import with_rationale

    found = outcome_constraint(request.answer_type)
    if found is None or not asks_rationale(request.metadata):
        return found
    result: Constraint = with_rationale(found, request.config.max_tokens)
    return result


def asks_rationale(metadata: Any) -> bool:
    """Does a prompt's ``rationale`` column say it asks for a rationale before the final line?"""
    value = metadata.get("rationale") if hasattr(metadata, "get") else None
    if isinstance(value, str):
        return value.strip().casefold() in ("true", "1", "yes")
    return bool(value) if isinstance(value, bool | int | float) and value == value else False


def answer_schema(constraint: Constraint) -> dict[str, Any]:
    """The JSON schema inside the constraint's ``response_format`` (or ``{"answer": <regex>}`` without one)."""
    try:
        schema = constraint.json_schema()["json_schema"]["schema"]
    except (KeyError, TypeError):
        schema = None
    if isinstance(schema, dict):
        return schema
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "pattern": constraint.regex}},
        "required": ["answer"],
        "additionalProperties": False,
    }


def resolve_mode(family: str, config: GenerationConfig) -> str:
    """The mode a backend of ``family`` uses for ``config`` (``none`` when structured output is off)."""
    if not config.structured:
        return "none"
    default, accepted = FAMILY_MODES.get(family, ("none", ("none",)))
    mode = config.structured_mode or default
    if mode not in accepted:
        raise UserError(
            f"--structured-mode {mode} is not available for {family} models; "
            f"use one of: {', '.join(accepted)}"
        )
    return mode


def check_config(config: GenerationConfig) -> None:
    """Reject an unknown mode or fallback before anything is sent."""
    if config.structured_mode is not None and config.structured_mode not in MODES:
        raise UserError(f"--structured-mode must be one of {', '.join(MODES)}; got {config.structured_mode!r}")
    if config.structured_fallback not in FALLBACKS:
        raise UserError(
            f"--structured-fallback must be one of {', '.join(FALLBACKS)}; got {config.structured_fallback!r}"
        )


def shape_payload(payload: dict[str, Any], mode: str, constraint: Constraint, family: str) -> None:
    """Add ``constraint`` to an OpenAI chat-completions ``payload`` as ``mode`` is spelled for ``family``."""
    if mode == "json_schema":
        payload["response_format"] = constraint.json_schema()
        if family == "openrouter":  # route only to providers that honour response_format
            payload["provider"] = {"require_parameters": True}
    elif mode == "json_object":
        payload["response_format"] = {"type": "json_object", "schema": answer_schema(constraint)}
    elif mode == "regex":
        payload["structured_outputs"] = {"regex": constraint.regex}
    elif mode == "grammar":
        if family == "vllm":
            payload["structured_outputs"] = {"grammar": constraint.gbnf}
        else:
            payload["grammar"] = constraint.gbnf
    elif mode != "none":
        raise ValueError(f"mode {mode!r} cannot be sent over the chat-completions protocol")


def unwrap_answer(text: str) -> str:
    """``{"answer": "### 5 INR"}`` -> ``### 5 INR``; an object with one field gives that field's value.

    Anything else (free text, malformed JSON, several fields) is returned unchanged.
    """
    stripped = text.strip()
    if not stripped.startswith("{"):
        return text
    try:
        obj = loads_bounded(stripped)
    except ValueError:  # malformed, too deep or too large: the text as it came (the parser says why)
        return text
    return unwrap_object(obj, text)


def unwrap_object(obj: Any, default: str) -> str:
    """The answer inside a structured reply; ``{"rationale": R, "answer": A}`` becomes ``R`` + newline + ``A``."""
    if not isinstance(obj, dict):
        return default
    rationale = obj.get("rationale")
    if isinstance(rationale, str) and isinstance(obj.get("answer"), str):
        return f"{rationale.strip()}\n{obj['answer']}"
    value = obj["answer"] if "answer" in obj else (next(iter(obj.values())) if len(obj) == 1 else None)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return default


_VALIDATION = re.compile(
    r"validation error|input should be|extra inputs are not permitted|field required|literal_error|"
    r"unrecognized|not supported|unsupported|invalid_request|invalid request|unknown (field|parameter)|"
    r"json_schema|response_format|grammar|structured_outputs|value is not a valid",
    re.IGNORECASE,
)
_NO_ENDPOINT = re.compile(r"no endpoints? found|requested parameters", re.IGNORECASE)


def is_validation_body(detail: str) -> bool:
    """Does an error message read as a rejected request (a schema/validation error) rather than a crash?"""
    return bool(_VALIDATION.search(detail))


def is_refusal(error: BackendError) -> bool:
    """Could ``error`` be the server refusing a constraint it does not support?"""
    status = error.status
    detail = str(error)
    if status in (400, 422):
        return True
    if status == 404:
        return bool(_NO_ENDPOINT.search(detail))  # OpenRouter: no provider supports the parameters
    return status == 500 and is_validation_body(detail)


State = Literal["unknown", "accepted", "refused"]


class ConstraintGate:
    """Whether one server accepts one structured mode; until it has, constrained requests go one at a time.

    So a server that refuses the constraint sees it once, not once per request in flight.
    """

    def __init__(self, owner: StructuredState, mode: str) -> None:
        self.owner = owner
        self.mode = mode
        self.state: State = "unknown"
        self.notice: str | None = None
        self._locks = LoopLocks()

    def lock(self) -> asyncio.Lock:
        """This event loop's lock (a backend may serve several runs, each under its own loop)."""
        return self._locks.current()

    def refuse(self, error: BackendError, fallback: str, instead: str = "none") -> str:
        """Record the refusal; returns the one-line warning (also shown through the owner's sink).

        ``instead`` is the mode the server took in its place (``none``: free text).
        """
        self.state = "refused"
        if fallback != "free-text":
            then = "stopping"
        elif instead == "none":
            then = "sending the prompts without it (free text) from now on"
        else:
            then = f"sending the prompts with the {instead} constraint instead from now on"
        name = self.owner.name
        self.notice = (
            f"{name}: the server refused the {self.mode} structured-output constraint "
            f"({_short(str(error), name)}); {then}"
        )
        if self.owner.on_notice is not None and fallback == "free-text":  # a stop says it in its error
            self.owner.on_notice("warning: " + self.notice)
        return self.notice


class StructuredState:
    """One backend's knowledge of what its server accepts: a :class:`ConstraintGate` per mode."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gates: dict[str, ConstraintGate] = {}
        self.on_notice: Callable[[str], None] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # sent to another process (a Ray worker): the live display callback stays with the driver
        state = dict(self.__dict__)
        state["on_notice"] = None
        return state

    def gate(self, mode: str) -> ConstraintGate:
        gate = self.gates.get(mode)
        if gate is None:
            gate = self.gates[mode] = ConstraintGate(self, mode)
        return gate

    def forget_loop(self) -> None:
        for gate in self.gates.values():
            gate._locks.clear()

    def notices(self) -> list[str]:
        return [g.notice for g in self.gates.values() if g.notice]


def _short(message: str, name: str) -> str:
    prefix = f"{name}: "
    text = message[len(prefix):] if message.startswith(prefix) else message
    return text if len(text) <= 200 else text[:197] + "..."


def stop_error(notice: str) -> BackendError:
    """The fatal error that stops a run whose user chose ``--structured-fallback stop``."""
    return BackendError(
        f"{notice} (rerun with another --structured-mode, with --free-text, or with --structured-fallback "
        "free-text; `counterbench models --probe MODEL` shows what the server supports)",
        retryable=False,
        fatal=True,
    )


def fallback_modes(family: str, mode: str) -> tuple[str, ...]:
    """``mode`` and the modes tried after it when the server refuses it (:data:`NEXT_MODES`), for ``family``."""
    accepted = FAMILY_MODES.get(family, ("none", ()))[1]
    return (mode, *(m for m in NEXT_MODES.get(mode, ()) if m in accepted and m != mode))


def structured_modes(backends: list[Any], config: GenerationConfig) -> dict[str, str]:
    """Per backend name, the structured mode it uses for ``config`` (for the run record)."""
    out = {}
    for backend in backends:
        describe = getattr(backend, "structured_mode_for", None)
        out[str(backend.name)] = describe(config) if callable(describe) else ("none" if not config.structured
                                                                              else "simulated")
    return out


def structured_notices(backends: list[Any]) -> list[str]:
    """The warnings of backends whose server refused the constraint (for the run record)."""
    states = [getattr(b, "structured_state", None) for b in backends]
    return [n for st in states if isinstance(st, StructuredState) for n in st.notices()]


def watch_notices(backends: list[Any], sink: Callable[[str], None] | None) -> None:
    """Show a backend's refusal warning through ``sink`` (e.g. the progress display) as it happens."""
    for backend in backends:
        state = getattr(backend, "structured_state", None)
        if isinstance(state, StructuredState):
            state.on_notice = sink


async def send_gated(
    state: StructuredState,
    modes: tuple[str, ...],
    fallback: str,
    constrained: Callable[[str], Awaitable[T]],
    free: Callable[[], Awaitable[T]],
) -> tuple[T, str]:
    """Send in the first of ``modes`` the server takes, else as the user chose; returns ``(result, mode)``
    (``none``: free text). The first request in a mode goes alone. If it is refused (:func:`is_refusal`),
    the same prompt is sent in the next of ``modes`` (``free-text`` only), after the last without the
    constraint: when that succeeds the server refused the mode — its gate records it, and the answer is
    returned (``free-text``) or a fatal error raised (``stop``); when it fails too, its error is raised
    and the gate stays undecided.
    """
    if not modes:
        return await free(), "none"
    mode, rest = modes[0], (modes[1:] if fallback == "free-text" else ())
    gate = state.gate(mode)
    if gate.state == "unknown":
        async with gate.lock():
            if gate.state == "unknown":
                try:
                    result = await constrained(mode)
                except BackendError as exc:
                    if not is_refusal(exc):
                        raise
                    answer, instead = await send_gated(state, rest, fallback, constrained, free)
                    notice = gate.refuse(exc, fallback, instead)
                    if fallback == "stop":
                        raise stop_error(notice) from None
                    return answer, instead
                gate.state = "accepted"
                return result, mode
    if gate.state == "accepted":
        return await constrained(mode), mode
    if fallback == "stop":
        raise stop_error(gate.notice or f"{state.name}: the server refused the {mode} constraint")
    return await send_gated(state, rest, fallback, constrained, free)
