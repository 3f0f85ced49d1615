"""Anthropic's Messages API through the official ``anthropic`` SDK (optional extra).

How the generation config maps onto the Messages API:

* ``max_tokens`` — sent as it is. ``seed`` — not supported by the API; ignored (still recorded).
* ``temperature`` — sent as ``temperature`` (through ``extra_body`` with SDKs whose typed
  signature no longer lists it); a model that rejects it answers HTTP 400, reported as is.
* ``reasoning_effort`` — manual extended thinking with a token budget: ``low`` 1,024, ``medium``
  4,096, ``high`` 16,384 (``none``/``off`` = no thinking). ``max_tokens`` becomes budget +
  ``max_tokens`` and ``temperature`` is left out (the API requires its default with thinking on).
* ``structured`` (with a known ``answer_type``) — with SDKs that have ``output_config``: a JSON
  schema ``{"answer": <string matching the format's regex>}`` as ``output_config.format``, and the
  ``answer`` is unwrapped from the reply; with older SDKs, the assistant turn is pre-filled with
  ``###`` and the returned text starts with that prefix. Neither is combined with thinking.
* ``stop_reason`` is mapped onto OpenAI's finish reasons: ``end_turn``/``stop_sequence`` -> ``stop``,
  ``max_tokens`` -> ``length``, ``refusal`` -> ``content_filter``; others are kept as they are.

The SDK's own retries are disabled (``max_retries=0``): the engine retries.
"""

from __future__ import annotations

import inspect
import json
import time
from typing import Any

from counterbench.models.base import BackendError, ChatRequest, ChatResult, request_constraint
from counterbench.models.openai_compat import is_retryable_status, parse_retry_after

THINKING_BUDGETS = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_PREFILL = "###"


class AnthropicBackend:
    """``anthropic:MODEL``. Create through :func:`counterbench.models.create_backend`."""

    simulated = False

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

        self.name = name
        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._secret = api_key
        self._sdk = anthropic
        self._client: Any = None
        typed = inspect.signature(self._get_client().messages.create).parameters
        self._typed_temperature = "temperature" in typed
        self._has_output_config = "output_config" in typed

    def _get_client(self) -> Any:
        """The SDK client, (re)opened on first use after :meth:`aclose`."""
        if self._client is None:
            self._client = self._sdk.AsyncAnthropic(
                api_key=self._secret, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
            )
        return self._client

    def __repr__(self) -> str:
        return f"AnthropicBackend(name={self.name!r}, base_url={self.base_url!r}, api_key='***')"

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def build_params(self, request: ChatRequest) -> dict[str, Any]:
        """Keyword arguments for ``messages.create`` (public for tests; contains no key)."""
        config = request.config
        messages: list[dict[str, Any]] = [{"role": "user", "content": request.user}]
        params: dict[str, Any] = {"model": self.model, "max_tokens": config.max_tokens}
        if request.system:
            params["system"] = request.system
        budget = THINKING_BUDGETS.get((config.reasoning_effort or "").lower())
        fmt = request_constraint(request) if config.structured else None
        if budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
            params["max_tokens"] = budget + config.max_tokens
        else:
            if self._typed_temperature:
                params["temperature"] = config.temperature
            else:
                params["extra_body"] = {"temperature": config.temperature}
            if fmt is not None and self._has_output_config:
                schema = fmt.json_schema()["json_schema"]["schema"]
                params["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
            elif fmt is not None:
                messages.append({"role": "assistant", "content": _PREFILL})
        params["messages"] = messages
        return params

    async def complete(self, request: ChatRequest) -> ChatResult:
        sdk = self._sdk
        params = self.build_params(request)
        prefilled = params["messages"][-1]["role"] == "assistant"
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
        latency_ms = (time.perf_counter() - started) * 1000.0
        text = "".join(getattr(block, "text", "") for block in message.content if getattr(block, "type", "") == "text")
        if prefilled:
            text = _PREFILL + text if not text.startswith(_PREFILL) else text
        elif "output_config" in params:
            text = _unwrap_answer(text)
        usage = message.usage
        stop = message.stop_reason
        return ChatResult(
            text=text,
            finish_reason=_STOP_REASONS.get(stop, stop) if stop else None,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            latency_ms=latency_ms,
            model_reported=message.model,
        )

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def _status_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return " ".join(str(err["message"]).split())[:300]
    return " ".join(str(getattr(exc, "message", exc)).split())[:300]


def _unwrap_answer(text: str) -> str:
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    return str(obj["answer"]) if isinstance(obj, dict) and isinstance(obj.get("answer"), str) else text
