"""The OpenAI chat-completions protocol over a lean HTTP client (no SDK on the hot path).

``http://`` endpoints (local servers: vLLM, Ollama, llama.cpp server) go through the minimal
keep-alive client of :mod:`counterbench.models.http1`, about a third of ``aiohttp``'s CPU per
request; ``https://`` endpoints (hosted APIs) through one shared ``aiohttp`` session (imported only then).
``http_client="aiohttp"`` (or ``COUNTERBENCH_HTTP_CLIENT=aiohttp``) forces ``aiohttp`` everywhere, as
does a ``connection_limit``, which only ``aiohttp`` implements.

One class serves every OpenAI-compatible endpoint: OpenAI, OpenRouter, vLLM, Ollama, llama.cpp
server and anything else that speaks ``POST {base_url}/chat/completions``. The differences between
them are constructor options chosen by :mod:`counterbench.models.registry`:

* ``reasoning_style`` — ``"openai"`` sends ``reasoning_effort: <effort>``; ``"openrouter"`` sends
  OpenRouter's ``reasoning: {"effort": <effort>}``. Nothing is sent while the effort is ``None``.
* ``family`` — the model kind (``openai``, ``vllm``, ``llamacpp``, ...): which structured modes the
  server takes and how each is spelled (:mod:`counterbench.models.structured`); ``structured_mode``
  replaces the family's default. ``GenerationConfig.structured_mode`` overrides both. JSON replies
  (``{"answer": ...}``) are unwrapped. Requests without a constraint are never constrained. The
  first constrained request goes alone; a refused ``json_schema`` is tried as ``json_object`` with
  the same schema, then a refusal is handled as ``GenerationConfig.structured_fallback`` says.
* ``max_tokens_field`` — OpenAI's current models want ``max_completion_tokens``; the others
  ``max_tokens``.

Failures become :class:`BackendError`: 408/409/429/5xx, timeouts, connection errors, truncated bodies,
malformed JSON and replies without ``choices`` are retryable (``Retry-After`` / ``retry-after-ms`` parsed);
other statuses are not, nor is a 500 whose body is a request-validation error (llama-cpp-python's server
answers a request it cannot parse that way): the same request would fail again. The engine does the
retrying. The API key is only in the pre-built request headers: it is redacted from messages and ``repr``.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from counterbench.json_limits import JSONLimitError, loads_bounded
from counterbench.models.base import (
    BackendError,
    ChatRequest,
    ChatResult,
    GenerationConfig,
    ProviderBackend,
    token_logprobs_from,
    wants_logprobs,
)
from counterbench.models.http1 import HTTP1Client, HTTPConnectionError, HTTPProtocolError
from counterbench.models.structured import (
    FAMILY_MODES,
    HTTP_MODES,
    JSON_MODES,
    StructuredState,
    constraint_for,
    fallback_modes,
    is_validation_body,
    resolve_mode,
    send_gated,
    shape_payload,
    unwrap_answer,
)

if TYPE_CHECKING:
    import aiohttp

ReasoningStyle = Literal["openai", "openrouter"]
HTTPClientChoice = Literal["auto", "aiohttp"]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
_MAX_ERROR_CHARS = 300


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or 500 <= status <= 599


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP-date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000.0)
    value = headers.get("Retry-After") or headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class OpenAICompatBackend(ProviderBackend):
    """An OpenAI chat-completions endpoint. Create through :func:`counterbench.models.create_backend`."""

    base_url: str
    #: both HTTP clients bound each whole request (connect, send, read) by ``timeout_s``: the engine adds no timer
    enforces_timeout = True

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        extra_headers: Mapping[str, str] | None = None,
        reasoning_style: ReasoningStyle = "openai",
        family: str = "openai-compatible",
        structured_mode: str | None = None,
        max_tokens_field: str = "max_tokens",
        connection_limit: int = 0,
        http_client: HTTPClientChoice = "auto",
    ) -> None:
        super().__init__(name=name, model=model, base_url=base_url.rstrip("/"), timeout_s=timeout_s,
                         secret=api_key or None)
        self.reasoning_style = reasoning_style
        if family not in FAMILY_MODES:
            raise ValueError(f"unknown model family {family!r}")
        if structured_mode is not None and structured_mode not in HTTP_MODES:
            raise ValueError(f"unknown structured mode {structured_mode!r}")
        self.family = family
        #: the mode used when the config names none (``None``: the family's default)
        self.structured_mode = structured_mode
        self.structured_state = StructuredState(name)
        self.max_tokens_field = max_tokens_field
        self._url = self.base_url + "/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        headers.update(extra_headers or {})
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._headers = headers
        self._connection_limit = connection_limit
        self._session: aiohttp.ClientSession | None = None
        self._use_http1 = http_client == "auto" and urlsplit(self._url).scheme == "http" and connection_limit == 0
        self._http1: HTTP1Client | None = None
        if not self._use_http1:  # imported here, before a run starts, and only where it is used (0.15 s of CPU)
            import aiohttp  # noqa: F401

    def _get_session(self) -> aiohttp.ClientSession:
        import aiohttp
        session = self._session
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(limit=self._connection_limit, ttl_dns_cache=300)
            session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                headers=self._headers,
            )
            self._session = session
        return session

    def structured_mode_for(self, config: GenerationConfig) -> str:
        """The structured mode used for ``config`` (``none`` when structured output is off)."""
        if config.structured and config.structured_mode is None and self.structured_mode is not None:
            config = GenerationConfig(structured=True, structured_mode=self.structured_mode)
        return resolve_mode(self.family, config)

    def build_payload(self, request: ChatRequest, mode: str | None = None) -> dict[str, Any]:
        """The JSON body for ``request`` (public for tests and debugging; contains no key).

        ``mode`` defaults to :meth:`structured_mode_for` the request's config; ``"none"`` leaves
        the constraint out.
        """
        config = request.config
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user})
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": config.temperature,
            self.max_tokens_field: config.max_tokens,
        }
        if config.sent_seed is not None:
            payload["seed"] = config.sent_seed
        if config.reasoning_effort is not None:
            if self.reasoning_style == "openrouter":
                payload["reasoning"] = {"effort": config.reasoning_effort}
            else:
                payload["reasoning_effort"] = config.reasoning_effort
        if wants_logprobs(request):
            payload["logprobs"] = True
            payload["top_logprobs"] = config.logprobs
        mode = self.structured_mode_for(config) if mode is None else mode
        constraint = constraint_for(request) if mode != "none" else None
        if constraint is not None:
            shape_payload(payload, mode, constraint, self.family)
        return payload

    def _get_http1(self) -> HTTP1Client:
        client = self._http1
        loop = asyncio.get_running_loop()
        if client is None or (client.loop is not None and client.loop is not loop):
            if client is not None:  # left over from an earlier event loop
                client.close()
            client = self._http1 = HTTP1Client(self._url, self._headers, timeout_s=self.timeout_s)
        return client

    async def _complete_http1(self, body: bytes, unwrap: bool) -> ChatResult:
        client = self._get_http1()
        started = time.perf_counter()
        try:
            response = await client.post(body)
        except TimeoutError:
            raise BackendError(
                f"{self.name}: no answer within {self.timeout_s:g} s (timeout)", retryable=True
            ) from None
        except HTTPConnectionError as exc:
            raise BackendError(
                self._redact(f"{self.name}: connection error ({str(exc)[:_MAX_ERROR_CHARS]})"), retryable=True
            ) from None
        except HTTPProtocolError as exc:
            raise BackendError(
                self._redact(f"{self.name}: malformed HTTP reply ({str(exc)[:_MAX_ERROR_CHARS]})"), retryable=True
            ) from None
        if response.status != 200:
            raise self._status_error(response.status, response.body, response.headers)
        return self._parse(response.body, (time.perf_counter() - started) * 1000.0, unwrap)

    async def complete(self, request: ChatRequest) -> ChatResult:
        mode = self.structured_mode_for(request.config)
        if mode == "none" or constraint_for(request) is None:
            return await self._send(self.build_payload(request, "none"), unwrap=False)
        result, _ = await send_gated(
            self.structured_state,
            fallback_modes(self.family, mode),
            request.config.structured_fallback,
            lambda sent: self._send(self.build_payload(request, sent), unwrap=sent in JSON_MODES),
            lambda: self._send(self.build_payload(request, "none"), unwrap=False),
        )
        return result

    async def _send(self, payload: dict[str, Any], *, unwrap: bool) -> ChatResult:
        body = json.dumps(payload, ensure_ascii=False).encode()
        if self._use_http1:
            return await self._complete_http1(body, unwrap)
        import aiohttp
        session = self._get_session()
        started = time.perf_counter()
        try:
            async with session.post(self._url, data=body) as resp:
                raw = await resp.read()
                status = resp.status
                if status != 200:
                    raise self._status_error(status, raw, resp.headers)
        except BackendError:
            raise
        except TimeoutError:
            raise BackendError(
                f"{self.name}: no answer within {self.timeout_s:g} s (timeout)", retryable=True
            ) from None
        except aiohttp.ClientError as exc:
            detail = self._redact(str(exc) or type(exc).__name__)
            raise BackendError(
                f"{self.name}: connection error ({type(exc).__name__}: {detail[:_MAX_ERROR_CHARS]})",
                retryable=True,
            ) from None
        latency_ms = (time.perf_counter() - started) * 1000.0
        return self._parse(raw, latency_ms, unwrap)

    def _status_error(self, status: int, raw: bytes, headers: Mapping[str, str]) -> BackendError:
        detail = _error_detail(raw)
        retryable = is_retryable_status(status) and not (status == 500 and is_validation_body(detail))
        return BackendError(
            self._redact(f"{self.name}: HTTP {status}{': ' + detail if detail else ''}"),
            retryable=retryable,
            status=status,
            retry_after=parse_retry_after(headers) if retryable else None,
        )

    def _parse(self, raw: bytes, latency_ms: float, unwrap: bool) -> ChatResult:
        try:
            data = loads_bounded(raw)
        except JSONLimitError:  # kept as the answer's text: the parser stores it as unparseable, the run goes on
            return ChatResult(text=self._redact(raw.decode("utf-8", "replace")) or "", finish_reason=None,
                              latency_ms=latency_ms)
        except ValueError:
            snippet = raw[:80].decode("utf-8", "replace")
            raise BackendError(
                self._redact(f"{self.name}: malformed JSON in reply: {snippet!r}"), retryable=True, status=200
            ) from None
        if not isinstance(data, dict):
            raise BackendError(f"{self.name}: reply is not a JSON object", retryable=True, status=200)
        error = data.get("error")
        if error and not data.get("choices"):
            code = error.get("code") if isinstance(error, dict) else None
            status = code if isinstance(code, int) else None
            detail = _error_detail(json.dumps({"error": error}).encode())
            raise BackendError(
                self._redact(f"{self.name}: error in reply body: {detail}"),
                retryable=status is None or is_retryable_status(status),
                status=status,
            )
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise BackendError(f"{self.name}: reply without choices", retryable=True, status=200)
        choice = choices[0]
        message = choice.get("message") or {}
        text = _content_text(message.get("content"))
        if text is None:
            text = _content_text(message.get("refusal")) or ""
        if unwrap:
            text = unwrap_answer(text)
        usage = data.get("usage") or {}
        cost = usage.get("cost")
        return ChatResult(
            text=text,
            finish_reason=choice.get("finish_reason"),
            input_tokens=_int_or_none(usage.get("prompt_tokens")),
            output_tokens=_int_or_none(usage.get("completion_tokens")),
            latency_ms=latency_ms,
            model_reported=data.get("model") if isinstance(data.get("model"), str) else None,
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            token_logprobs=token_logprobs_from((choice.get("logprobs") or {}).get("content")),
        )

    async def list_models(self) -> list[str]:
        """The model ids the server lists at ``GET {base_url}/models`` (raises :class:`BackendError`)."""
        import aiohttp
        session = self._get_session()
        try:
            async with session.get(self.base_url + "/models") as resp:
                raw = await resp.read()
                if resp.status != 200:
                    raise self._status_error(resp.status, raw, resp.headers)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise BackendError(
                self._redact(f"{self.name}: cannot list models ({type(exc).__name__}: {exc})"), retryable=True
            ) from None
        try:
            data = json.loads(raw).get("data")
        except (ValueError, AttributeError):
            data = None
        if not isinstance(data, list):
            raise BackendError(f"{self.name}: GET /models did not return a model list", retryable=False)
        return [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id") is not None]

    async def aclose(self) -> None:
        self.structured_state.forget_loop()
        client, self._http1 = self._http1, None
        if client is not None:
            client.close()
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()
            await asyncio.sleep(0)  # let the connector close its transports


def _content_text(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _error_detail(raw: bytes) -> str:
    """A short, one-line description of an error body (JSON ``error.message`` when present)."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and err.get("message"):
            text = str(err["message"])
        elif isinstance(err, str):
            text = err
    return " ".join(text.split())[:_MAX_ERROR_CHARS]


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None
