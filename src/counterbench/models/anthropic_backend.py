"""Anthropic's Messages API through the official ``anthropic`` SDK (optional extra).

How the generation config maps onto the Messages API:

* ``max_tokens`` — sent as it is. ``seed`` — not supported by the API; ignored (still recorded).
* ``temperature`` — sent as ``temperature`` (through ``extra_body`` with SDKs whose typed
  signature no longer lists it); a model that rejects it answers HTTP 400, reported as is.
* ``reasoning_effort`` — manual extended thinking with a token budget: ``low`` 1,024, ``medium``
  4,096, ``high`` 16,384 (``none``/``off`` = no thinking). ``max_tokens`` becomes budget +
  ``max_tokens`` and ``temperature`` is left out (the API requires its default with thinking on).
* ``structured`` (with a constraint) — mode ``tool`` (the default): one tool, ``answer``, whose input
  schema is the constraint's JSON schema, forced with ``tool_choice``; the tool input's ``answer`` is
  the stored text. Mode ``json_schema`` (SDKs with ``output_config``): the same schema as
  ``output_config.format``, the reply's ``answer`` unwrapped. Mode ``none``: free text. Neither is
  combined with thinking (the API refuses a forced tool with thinking on). A refusal of the
  constraint is handled as in :mod:`counterbench.models.structured`.
* ``stop_reason`` is mapped onto OpenAI's finish reasons: ``end_turn``/``stop_sequence``/``tool_use`` -> ``stop``,
  ``max_tokens`` -> ``length``, ``refusal`` -> ``content_filter``; others are kept as they are.

The SDK's own retries are disabled (``max_retries=0``): the engine retries.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from counterbench.errors import UserError
from counterbench.json_limits import loads_bounded
from counterbench.models.base import BackendError, ChatRequest, ChatResult, GenerationConfig, ProviderBackend
from counterbench.models.openai_compat import is_retryable_status, parse_retry_after
from counterbench.models.structured import (
    StructuredState,
    answer_schema,
    constraint_for,
    resolve_mode,
    send_gated,
    unwrap_object,
)

THINKING_BUDGETS = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",
    "max_tokens": "length",
    "refusal": "content_filter",
}
TOOL_NAME = "answer"


class AnthropicBackend(ProviderBackend):
    """``anthropic:MODEL``. Create through :func:`counterbench.models.create_backend`."""

    #: the API key (required)
    _secret: str

    def __init__(
        self,
        *,
        name: str,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        import anthropic

        super().__init__(name=name, model=model, base_url=base_url, timeout_s=timeout_s, secret=api_key)
        self._sdk = anthropic
        self._client: Any = None
        typed = inspect.signature(self._get_client().messages.create).parameters
        self._typed_temperature = "temperature" in typed
        self._has_output_config = "output_config" in typed
        self.structured_state = StructuredState(name)

    def structured_mode_for(self, config: GenerationConfig) -> str:
        """``tool`` by default; ``json_schema`` needs an SDK with ``output_config``."""
        mode = resolve_mode("anthropic", config)
        if mode == "json_schema" and not self._has_output_config:
            raise UserError(
                f"{self.name}: --structured-mode json_schema needs a newer anthropic SDK (output_config); "
                "upgrade it or use --structured-mode tool"
            )
        return mode

    def _get_client(self) -> Any:
        """The SDK client, (re)opened on first use after :meth:`aclose`."""
        if self._client is None:
            self._client = self._sdk.AsyncAnthropic(
                api_key=self._secret, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
            )
        return self._client

    def build_params(self, request: ChatRequest, mode: str | None = None) -> dict[str, Any]:
        """Keyword arguments for ``messages.create`` (public for tests; contains no key).

        ``mode`` defaults to :meth:`structured_mode_for` the request's config.
        """
        config = request.config
        messages: list[dict[str, Any]] = [{"role": "user", "content": request.user}]
        params: dict[str, Any] = {"model": self.model, "max_tokens": config.max_tokens, "messages": messages}
        if request.system:
            params["system"] = request.system
        budget = THINKING_BUDGETS.get((config.reasoning_effort or "").lower())
        if budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
            params["max_tokens"] = budget + config.max_tokens
            return params
        if self._typed_temperature:
            params["temperature"] = config.temperature
        else:
            params["extra_body"] = {"temperature": config.temperature}
        mode = self.structured_mode_for(config) if mode is None else mode
        constraint = constraint_for(request) if mode != "none" else None
        if constraint is not None and mode == "tool":
            params["tools"] = [
                {"name": TOOL_NAME, "description": "Give your answer.", "input_schema": answer_schema(constraint)}
            ]
            params["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        elif constraint is not None and mode == "json_schema":
            params["output_config"] = {"format": {"type": "json_schema", "schema": answer_schema(constraint)}}
        return params

    async def complete(self, request: ChatRequest) -> ChatResult:
        config = request.config
        mode = self.structured_mode_for(config)
        params = self.build_params(request, mode)
        if "tools" not in params and "output_config" not in params:
            return await self._call(params)
        result, _ = await send_gated(
            self.structured_state,
            (mode,),
            config.structured_fallback,
            lambda _mode: self._call(params),
            lambda: self._call(self.build_params(request, "none")),
        )
        return result

    async def _call(self, params: dict[str, Any]) -> ChatResult:
        sdk = self._sdk
        started = time.perf_counter()
        try:
            message = await self._get_client().messages.create(**params)
        except sdk.APITimeoutError:
            raise BackendError(
                f"{self.name}: no answer within {self.timeout_s:g} s (timeout)", retryable=True
            ) from None
        except sdk.APIConnectionError as exc:
            raise BackendError(
                self._redact(f"{self.name}: connection error ({type(exc).__name__}: {exc})"), retryable=True
            ) from None
        except sdk.APIStatusError as exc:
            status = exc.status_code
            retryable = is_retryable_status(status)
            raise BackendError(
                self._redact(f"{self.name}: HTTP {status}: {_status_detail(exc)}"),
                retryable=retryable,
                status=status,
                retry_after=parse_retry_after(exc.response.headers) if retryable else None,
            ) from None
        except (sdk.APIError, ValueError) as exc:  # malformed or unexpected reply body
            raise BackendError(
                self._redact(f"{self.name}: malformed reply ({type(exc).__name__}: {str(exc)[:200]})"),
                retryable=True,
            ) from None
        return result_from_message(message, params, (time.perf_counter() - started) * 1000.0)

    async def list_models(self) -> list[str]:
        """The model ids the API lists (raises :class:`BackendError`)."""
        try:
            page = await self._get_client().models.list()
        except self._sdk.APIError as exc:
            raise BackendError(self._redact(f"{self.name}: cannot list models ({exc})"), retryable=False) from None
        return [str(getattr(m, "id", m)) for m in getattr(page, "data", [])]

    async def aclose(self) -> None:
        self.structured_state.forget_loop()
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def result_from_message(message: Any, params: dict[str, Any], latency_ms: float | None) -> ChatResult:
    """The :class:`ChatResult` of a Messages reply — the SDK's object or its JSON (a batch result's
    ``message``) — to a request sent with ``params``."""
    content = _field(message, "content") or []
    text = "".join(str(_field(b, "text") or "") for b in content if _field(b, "type") == "text")
    if "tools" in params:
        inputs = [_field(b, "input") for b in content if _field(b, "type") == "tool_use"]
        text = unwrap_object(inputs[0], text) if inputs else text
    elif "output_config" in params:
        text = _unwrap_answer(text)
    usage = _field(message, "usage")
    stop = _field(message, "stop_reason")
    n_in, n_out, model = _field(usage, "input_tokens"), _field(usage, "output_tokens"), _field(message, "model")
    return ChatResult(
        text=text,
        finish_reason=_STOP_REASONS.get(stop, stop) if isinstance(stop, str) and stop else None,
        input_tokens=n_in if isinstance(n_in, int) else None,
        output_tokens=n_out if isinstance(n_out, int) else None,
        latency_ms=latency_ms,
        model_reported=model if isinstance(model, str) else None,
    )


def _field(obj: Any, name: str) -> Any:
    """``obj.name`` of an SDK object, ``obj[name]`` of a JSON object, else ``None``."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _status_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return " ".join(str(err["message"]).split())[:300]
    return " ".join(str(getattr(exc, "message", exc)).split())[:300]


def _unwrap_answer(text: str) -> str:
    try:
        obj = loads_bounded(text)
    except ValueError:  # malformed, too deep or too large: the text as it came (the parser says why)
        return text
    return unwrap_object(obj, text)
