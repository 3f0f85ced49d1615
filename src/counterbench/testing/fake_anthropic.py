"""A fake Anthropic Messages server (``POST /v1/messages``) with the same fault injection.

``base_url`` is the server root (``http://127.0.0.1:PORT``), as ``ANTHROPIC_BASE_URL`` expects.
Answers follow :func:`counterbench.testing._fakecore.answer_text`; when the request pre-fills the
assistant turn (e.g. ``###``), the reply continues it. Errors use Anthropic's error envelope
(``{"type": "error", "error": {"type": ..., "message": ...}}``); ``529`` is ``overloaded_error``,
``length`` ends with ``stop_reason: max_tokens`` and ``content_filter`` with ``refusal``.
Run as a process: ``python -m counterbench.testing.fake_anthropic --port 0``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aiohttp import web

from counterbench.testing._fakecli import serve_from_command_line
from counterbench.testing._fakecore import (
    FakeServerBase,
    FaultConfig,
    answer_text,
    run_in_thread,
)

__all__ = ["FakeAnthropicServer", "FaultConfig", "main", "run_in_thread"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}
    return web.Response(status=status, body=json.dumps(body).encode(), content_type="application/json", headers=headers)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


class FakeAnthropicServer(FakeServerBase):
    """``POST /v1/messages``."""

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self.messages)

    async def messages(self, request: web.Request) -> web.StreamResponse:
        raw, payload = await self.read_payload(request)
        if payload is None:
            return _error(400, "request body is not a Messages request")
        system, user, prefill = message_texts(payload)
        auth = request.headers.get("Authorization", "")
        provided = request.headers.get("x-api-key") or (auth[7:] if auth.startswith("Bearer ") else "")
        if self.config.api_key is not None and provided != self.config.api_key:
            self.refused("unauthorized")
            return _error(401, f"invalid x-api-key: {provided}")
        rejected = self.rejected_field(payload)
        if rejected is not None:  # e.g. a model without tool use or structured outputs
            return _error(self.config.reject_status, f"{rejected}: Extra inputs are not permitted")
        fault = self.choose_fault(hashlib.sha1(raw, usedforsecurity=False).hexdigest(), user)
        await self.delay()
        if fault == "hang":
            await self.hang()
            fault = None
        if fault == "reset":
            return self.reset_connection(request)
        if fault in ("429", "500", "503", "529", "400", "401"):
            status = int(fault)
            extra = self.retry_headers() if status in (429, 503, 529) else None
            detail = f"invalid x-api-key: {provided}" if status == 401 else f"injected {status}"
            return _error(status, detail, extra)
        if fault == "malformed":
            return web.Response(
                body=b'{"id": "msg_x", "type": "message", "content": [', content_type="application/json"
            )
        body = message_body(payload, system, user, prefill, fault)
        return web.Response(body=json.dumps(body).encode(), content_type="application/json")


def message_body(payload: dict[str, Any], system: str, user: str, prefill: str, fault: str | None) -> dict[str, Any]:
    """The Messages reply to ``payload`` (a ``fault`` of ``empty``, ``length`` or ``content_filter`` shapes it)."""
    answer = answer_text(system, user)
    stop = "end_turn"
    if fault == "empty" or fault == "no_choices":
        answer = ""
    elif fault == "length":
        answer, stop = answer[:6], "max_tokens"
    elif fault == "content_filter":
        answer, stop = "", "refusal"
    if prefill and answer.startswith(prefill):
        answer = answer[len(prefill) :]
    if answer and (payload.get("output_config") or {}).get("format"):
        answer = json.dumps({"answer": answer})
    content: list[dict[str, Any]] = [{"type": "text", "text": answer}] if answer else []
    forced = payload.get("tool_choice") or {}
    if answer and forced.get("type") == "tool":  # a forced tool: the answer is the tool's input
        tool_use = {"type": "tool_use", "id": "toolu_fake", "name": forced.get("name"), "input": {"answer": answer}}
        content = [tool_use]
        stop = "tool_use"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": str(payload.get("model", "fake-claude")),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": (len(system) + len(user)) // 4, "output_tokens": 6},
    }


def message_texts(payload: dict[str, Any]) -> tuple[str, str, str]:
    """``(system, last user message, assistant prefill)`` of a Messages request."""
    messages = payload["messages"]
    system = _text(payload.get("system", ""))
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    prefill = _text(messages[-1].get("content")) if messages and messages[-1].get("role") == "assistant" else ""
    return system, user, prefill


def main(argv: list[str] | None = None) -> None:
    serve_from_command_line(FakeAnthropicServer, "A fake Anthropic Messages server with fault injection", argv)


if __name__ == "__main__":
    main()
