"""A fake OpenAI chat-completions server (a real aiohttp server on 127.0.0.1) with fault injection.

In-process::

    async with FakeOpenAIServer(FaultConfig(latency_ms=5)) as server:
        ... server.base_url ...                      # http://127.0.0.1:PORT/v1

    with run_in_thread(FakeOpenAIServer()) as server:  # its own loop on a daemon thread
        ... server.base_url, server.counters, server.config.force = "429" ...

As a process (benchmarks)::

    python -m counterbench.testing.fake_openai --port 0 --latency-ms 20 [--fault-rate 0.3]
    # prints "READY http://127.0.0.1:PORT/v1"; stops on SIGTERM, after --max-seconds, or with its parent

or ``with ServerProcess("fake_openai", "--latency-ms", "20") as proc: proc.base_url``.

Answers are deterministic, derived from the prompt: ``### <n> INR`` (or ``### <n> %`` when the
system prompt asks for a percentage; for a label or choice prompt, the most probable of its answers,
:func:`~counterbench.testing._fakecore.label_probabilities` or ``FaultConfig.labels``, or one drawn from
them with ``sample_labels``; bare, ``yes``, with ``bare_answers``), or ``FaultConfig.reply(system, user)``; a
request with ``response_format`` gets ``{"answer": "..."}`` (``{"rationale": ..., "answer": ...}`` when
its schema has a ``rationale`` property; a rationale grammar gets the rationale line before the answer).
A request with ``logprobs: true`` gets ``choices[0].logprobs.content`` (tokens: what precedes the answer —
``###``, ``{"answer": "`` or nothing —, `` <answer>``, what follows; for label and choice prompts
``top_logprobs`` at the answer lists every allowed answer with its log-probability, up to ``top_logprobs``;
``FaultConfig.label_variants`` (``--label-variants 0.4``) spends that share of each answer's probability on
other spellings — the other case, `` Yes``, and the other spacing, ``yes`` — as real tokenizers do, and
``FaultConfig.label_mass`` (``--label-mass 1e-8``) leaves the allowed answers only that share of the
probability, the rest on a line break the model "prefers", so every answer is forced, as a grammar forces
a base model).
``FaultConfig.reject_fields`` (``--reject-fields response_format``) makes the server refuse requests
that carry one of those fields with ``reject_status`` (500 by default) and a validation-error body,
as llama-cpp-python's server refuses ``response_format: {"type": "json_schema"}``;
``FaultConfig.reject_response_formats`` (``--reject-response-formats json_schema``) refuses only
those ``response_format`` types, as that server does (it takes ``json_object`` with a schema).
Every request body is kept in ``counters.recent_bodies``.
Faults (see :mod:`counterbench.testing._fakecore` for how they are chosen): ``429`` (with
``Retry-After``), ``500``, ``503``, ``529``, ``400``, ``401`` (its message echoes the key received,
as careless servers do, to test redaction), ``hang`` (no answer for ``hang_s``), ``reset`` (TCP RST),
``malformed`` (truncated JSON), ``no_choices``, ``empty`` (content ``""``), ``length`` (cut-off answer,
``finish_reason: length``), ``content_filter`` (no content).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import Any

from aiohttp import web

from counterbench.models.sim_logprobs import OTHER_TOKEN, spellings
from counterbench.outcomes.logprobs import answer_position
from counterbench.testing._fakecli import serve_from_command_line
from counterbench.testing._fakecore import (
    FakeServerBase,
    FaultConfig,
    ServerProcess,
    answer_text,
    label_answer,
    run_in_thread,
)

__all__ = ["FakeOpenAIServer", "FaultConfig", "ServerProcess", "main", "run_in_thread"]

_JSON = "application/json"


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
    body = json.dumps({"error": {"message": message, "type": kind, "code": status}})
    return web.Response(status=status, body=body.encode(), content_type=_JSON, headers=headers)


def _validation_error(status: int, field: str, value: Any) -> web.Response:
    """A refused request field, worded like llama-cpp-python's server (pydantic's validation error)."""
    kind = value.get("type") if isinstance(value, dict) else None
    detail = (
        f"{{'type': 'literal_error', 'loc': ('body', '{field}', 'type'), 'msg': \"Input should be 'text' or "
        f"'json_object'\", 'input': '{kind}'}}" if kind else
        f"{{'type': 'extra_forbidden', 'loc': ('body', '{field}'), 'msg': 'Extra inputs are not permitted'}}"
    )
    message = f"1 validation error:\n  {detail}"
    kind_name = "internal_server_error" if status >= 500 else "invalid_request_error"
    return _error(status, message, kind_name)


#: the rationale the server writes when a request's constraint asks for one
FAKE_RATIONALE = "The fake server weighed both the experience and the skills the job asks for."


def _asks_rationale(response_format: Any) -> bool:
    """Does a ``response_format`` schema have a ``rationale`` property (a rationale before the answer)?"""
    if not isinstance(response_format, dict):
        return False
    schema = response_format.get("schema") or (response_format.get("json_schema") or {}).get("schema") or {}
    return isinstance(schema, dict) and "rationale" in (schema.get("properties") or {})


class FakeOpenAIServer(FakeServerBase):
    """``POST /v1/chat/completions`` and ``GET /v1/models``."""

    url_suffix = "/v1"

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.models)

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    async def chat(self, request: web.Request) -> web.StreamResponse:
        raw, payload = await self.read_payload(request)
        if payload is None:
            return _error(400, "request body is not a chat-completions request", "invalid_request_error")
        messages = payload["messages"]
        system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
        user = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
        config = self.config
        if config.api_key is not None:
            auth = request.headers.get("Authorization", "")
            if auth != f"Bearer {config.api_key}":
                self.refused("unauthorized")
                return _error(401, f"Incorrect API key provided: {auth[7:]}", "invalid_request_error")
        rejected = self.rejected_field(payload)
        if rejected is not None:
            return _validation_error(config.reject_status, rejected, payload[rejected])
        fault = self.choose_fault(hashlib.sha1(raw, usedforsecurity=False).hexdigest(), user)
        await self.delay()
        if fault is not None:
            response = await self._fault(fault, request, payload, system, user)
            if response is not None:
                return response
        return self._answer(payload, system, user, finish_reason="stop")

    async def _fault(
        self, fault: str, request: web.Request, payload: dict[str, Any], system: str, user: str
    ) -> web.StreamResponse | None:
        if fault == "hang":
            await self.hang()
            return None
        if fault == "reset":
            return self.reset_connection(request)
        if fault in ("429", "503", "529"):
            msg = "Rate limit reached" if fault == "429" else "The server is overloaded"
            return _error(int(fault), msg, "rate_limit_error", self.retry_headers())
        if fault in ("500", "400"):
            return _error(int(fault), "injected failure", "server_error" if fault == "500" else "bad_request")
        if fault == "401":
            auth = request.headers.get("Authorization", "")
            return _error(401, f"Incorrect API key provided: {auth[7:]}", "invalid_request_error")
        if fault == "malformed":
            return web.Response(
                body=b'{"id": "chatcmpl-x", "choices": [{"message": {"content": "### 1', content_type=_JSON
            )
        if fault == "deep_json":  # a reply body nested 1,000 deep (Python's json recursion limit)
            body = '{"id": "chatcmpl-x", "choices": [{"message": {"content": "### 1"}}], "deep": ' + (
                "[" * 1000 + "]" * 1000 + "}")
            return web.Response(body=body.encode(), content_type=_JSON)
        if fault == "no_choices":
            return web.json_response({"id": "chatcmpl-x", "object": "chat.completion", "choices": []})
        if fault == "empty":
            return self._answer(payload, system, user, finish_reason="stop", content="")
        if fault == "length":
            return self._answer(payload, system, user, finish_reason="length", content="### 12")
        if fault == "content_filter":
            return self._answer(payload, system, user, finish_reason="content_filter", content=None)
        return _error(500, f"unknown injected fault {fault!r}", "server_error")

    def _answer(
        self, payload: dict[str, Any], system: str, user: str, *, finish_reason: str, content: Any = ...
    ) -> web.Response:
        labelled = label_answer(self.config, system, user)
        if content is ...:
            if self.config.reply_payload is not None:
                content = self.config.reply_payload(payload)
            elif self.config.reply is not None:
                content = self.config.reply(system, user)
            else:
                content = labelled[0] if labelled is not None else answer_text(system, user)
            if "response_format" in payload:
                content = json.dumps({"rationale": FAKE_RATIONALE, "answer": content}
                                     if _asks_rationale(payload["response_format"]) else {"answer": content})
            elif "cb-rationale" in str(payload.get("grammar", "")):
                content = f"{FAKE_RATIONALE}\n{content}"
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                                  "finish_reason": finish_reason}
        if payload.get("logprobs") and isinstance(content, str):
            choice["logprobs"] = {"content": _token_logprobs(content, labelled[1] if labelled else None,
                                                             int(payload.get("top_logprobs") or 0),
                                                             self.config.label_variants, self.config.label_mass)}
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(payload.get("model", "fake-model")),
            "choices": [choice],
            "usage": {
                "prompt_tokens": (len(system) + len(user)) // 4,
                "completion_tokens": 6,
                "total_tokens": (len(system) + len(user)) // 4 + 6,
                # the system prompt counts as read from the prompt cache, as OpenAI reports a repeated prefix
                "prompt_tokens_details": {"cached_tokens": len(system) // 4},
            },
        }
        return web.Response(body=json.dumps(body).encode(), content_type=_JSON)


def _token_logprobs(content: str, labels: dict[str, float] | None, top: int, variants: float = 0.0,
                    mass: float = 1.0) -> list[dict[str, Any]]:
    """``content`` as OpenAI-protocol tokens: everything before the answer
    (:func:`~counterbench.outcomes.logprobs.answer_position`: ``###``, ``{"answer": "``, or nothing for a
    bare answer), the answer with the space before it (`` yes``), and the rest; at the answer, the allowed
    answers (most probable first, spelt as the answer is, with its space; split across spellings by
    ``variants``; holding ``mass`` of the probability) as ``top_logprobs``."""
    position = answer_position(content)
    if position is None:
        return [{"token": content, "logprob": 0.0, "top_logprobs": []}] if content else []
    lead = position - 1 if position > 0 and content[position - 1] == " " else position
    rest = content[position:]
    answer = max((label for label in labels or {} if rest.startswith(label)), key=len, default=None)
    answer = answer if answer is not None else rest.split('"', 1)[0]
    head, token, tail = content[:lead], content[lead: position + len(answer)], content[position + len(answer):]
    space = content[lead:position]
    weights: dict[str, float] = {}
    for label, p in (labels or {}).items():
        for spelt, share in spellings(label, space, variants) if p > 0 else ():
            weights[spelt] = weights.get(spelt, 0.0) + p * share * mass
    if labels and mass < 1.0:
        weights[OTHER_TOKEN] = weights.get(OTHER_TOKEN, 0.0) + 1.0 - mass
    ranked = sorted(weights.items(), key=lambda item: -item[1])
    listed = [{"token": spelt, "logprob": math.log(w)} for spelt, w in ranked][:top]
    chosen = math.log(weights[token]) if weights.get(token) else -0.01
    tokens = [{"token": head, "logprob": 0.0, "top_logprobs": [{"token": head, "logprob": 0.0}][:top]}] if head else []
    tokens.append({"token": token, "logprob": chosen, "top_logprobs": listed or [{"token": token, "logprob": chosen}]})
    if tail:
        tokens.append({"token": tail, "logprob": 0.0, "top_logprobs": [{"token": tail, "logprob": 0.0}][:top]})
    return tokens


def main(argv: list[str] | None = None) -> None:
    serve_from_command_line(FakeOpenAIServer, __doc__.splitlines()[0] if __doc__ else None, argv)


if __name__ == "__main__":
    main()
