"""Fake batch APIs on 127.0.0.1: OpenAI's Batch API and Anthropic's Message Batches, besides the
one-at-a-time endpoints of :class:`~counterbench.testing.fake_openai.FakeOpenAIServer` and
:class:`~counterbench.testing.fake_anthropic.FakeAnthropicServer` (same answers, same fault markers).

* :class:`FakeOpenAIBatchServer` — ``POST /v1/files`` (multipart, ``purpose=batch``), ``GET
  /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches`` (newest first, ``limit``/``after``),
  ``GET /v1/batches/{id}``;
* :class:`FakeAnthropicBatchServer` — ``POST /v1/messages/batches``, ``GET /v1/messages/batches``
  (``limit``/``after_id``), ``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches/{id}/results``.

A job is in progress for :attr:`BatchConfig.processing_s` seconds (its processed count growing with the
time), then ends, and its results are drawn once. Each item gets the answer the one-at-a-time endpoint
would give, or its fault: a ``[[fault:KIND]]`` / ``[[fault:KIND:N]]`` marker in the user message (N: the
first N submissions of that prompt) or ``FaultConfig.force``. ``expired`` expires the item; ``429``,
``500``, ``503``, ``529`` fail it as a server error and ``400`` as an invalid request; ``empty``,
``length`` and ``content_filter`` shape its answer. :attr:`BatchConfig.fail_jobs` makes the first jobs
fail as a whole (OpenAI's ``failed``, Anthropic: every item errored) and :attr:`BatchConfig.expire_jobs`
the next ones expire with every other item unanswered; :attr:`BatchConfig.accept_delay_s` holds the reply
to a submission after the job is created (a client killed meanwhile does not know its job's id), and
:attr:`BatchConfig.status_faults` answers the first status polls with 503 (Anthropic: 529).

What was submitted is counted in :class:`BatchCounters` (``server.batch``): jobs, items, and how many
times each prompt (system + user text) was submitted.

As a process: ``python -m counterbench.testing.fake_batch --provider anthropic --processing-s 5`` (and the
fake servers' other options) prints ``READY <base url>``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from counterbench.testing._fakecli import add_cli_arguments, config_from_args, serve_until_done
from counterbench.testing._fakecore import FakeServerBase, FaultConfig
from counterbench.testing.fake_anthropic import FakeAnthropicServer, message_body, message_texts
from counterbench.testing.fake_openai import FakeOpenAIServer

__all__ = ["BatchConfig", "BatchCounters", "FakeAnthropicBatchServer", "FakeOpenAIBatchServer"]

_SERVER_ERRORS = ("429", "500", "503", "529")


@dataclass
class BatchConfig:
    """How the fake batch APIs behave (mutable: tests may change it between jobs)."""

    #: seconds a job stays in progress before it ends
    processing_s: float = 0.2
    #: the first this many jobs fail as a whole
    fail_jobs: int = 0
    #: the next this many jobs expire, with every other item unanswered
    expire_jobs: int = 0
    #: seconds between creating a job and answering its submission (a client killed meanwhile has a job it
    #: does not know the id of)
    accept_delay_s: float = 0.0
    #: the first this many status polls are answered 503 (the provider briefly unreachable)
    status_faults: int = 0


@dataclass
class BatchCounters:
    jobs: int = 0
    items: int = 0
    #: sha1 of system + user -> how many times that prompt was submitted in a job
    submissions: collections.Counter[str] = field(default_factory=collections.Counter)
    status_polls: int = 0

    @property
    def submitted_twice(self) -> int:
        return sum(1 for n in self.submissions.values() if n > 1)


@dataclass
class _Job:
    job_id: str
    created: float
    items: list[tuple[str, dict[str, Any]]]
    fate: str  # "ok", "failed", "expired"
    metadata: dict[str, Any]
    results: list[dict[str, Any]] | None = None


class _BatchCore:
    """The job bookkeeping both fakes share."""

    def __init__(self, server: FakeServerBase, batch: BatchConfig | None) -> None:
        self.server = server
        self.config = batch or BatchConfig()
        self.counters = BatchCounters()
        self.jobs: dict[str, _Job] = {}

    def create(self, prefix: str, items: list[tuple[str, dict[str, Any]]], metadata: dict[str, Any],
               texts: Any) -> _Job:
        counters = self.counters
        counters.jobs += 1
        counters.items += len(items)
        for _, body in items:
            system, user = texts(body)[:2]
            counters.submissions[hashlib.sha1(f"{system}\x00{user}".encode(), usedforsecurity=False).hexdigest()] += 1
        n = counters.jobs
        fate = ("failed" if n <= self.config.fail_jobs else
                "expired" if n <= self.config.fail_jobs + self.config.expire_jobs else "ok")
        job = _Job(f"{prefix}{n:06d}", time.time(), items, fate, metadata)
        self.jobs[job.job_id] = job
        return job

    def page(self, query: Mapping[str, str], after_key: str) -> tuple[list[_Job], bool]:
        """A page of jobs, newest first after the one ``query[after_key]`` names (``limit``: 20), and if more follow."""
        jobs = sorted(self.jobs.values(), key=lambda j: j.job_id, reverse=True)
        after = query.get(after_key)
        if after:
            jobs = [j for j in jobs if j.job_id < after]
        limit = int(query.get("limit", "20"))
        return jobs[:limit], len(jobs) > limit

    def status_fault(self) -> bool:
        """Count a status poll; True when it is to be answered with an error (``status_faults``)."""
        self.counters.status_polls += 1
        return self.counters.status_polls <= self.config.status_faults

    async def accept_delay(self) -> None:
        if self.config.accept_delay_s > 0:
            await asyncio.sleep(self.config.accept_delay_s)

    def progress(self, job: _Job) -> tuple[bool, int]:
        """``(ended, items processed)``."""
        elapsed = time.time() - job.created
        if elapsed >= self.config.processing_s:
            return True, len(job.items)
        return False, int(len(job.items) * elapsed / max(self.config.processing_s, 1e-9))

    def fault(self, body: dict[str, Any], user: str, index: int, fate: str) -> str | None:
        if fate == "failed":
            return "500"
        if fate == "expired" and index % 2:
            return "expired"
        key = hashlib.sha1(json.dumps(body, sort_keys=True).encode(), usedforsecurity=False).hexdigest()
        return self.server.choose_fault(key, user)


def _authorized(server: FakeServerBase, request: web.Request) -> bool:
    key = server.config.api_key
    if key is None:
        return True
    auth = request.headers.get("Authorization", "")
    return request.headers.get("x-api-key") == key or auth == f"Bearer {key}"


class _BatchServer(FakeServerBase):
    """What both fake batch servers add to their one-at-a-time server (the base after this one): the batch
    core, its counters as :attr:`batch`, and the batch API's routes (:attr:`batch_routes`)."""

    #: the batch API's routes: (``GET`` or ``POST``, path, the name of the method that answers)
    batch_routes: tuple[tuple[str, str, str], ...] = ()

    def __init__(self, config: FaultConfig | None = None, *, batch: BatchConfig | None = None, **kw: Any) -> None:
        super().__init__(config, **kw)
        self.core = _BatchCore(self, batch)

    @property
    def batch(self) -> BatchCounters:
        return self.core.counters

    def routes(self, app: web.Application) -> None:
        super().routes(app)
        for method, path, handler in self.batch_routes:
            add = app.router.add_get if method == "GET" else app.router.add_post
            add(path, getattr(self, handler))


class FakeOpenAIBatchServer(_BatchServer, FakeOpenAIServer):
    """The fake OpenAI server with the Batch API (see the module docstring)."""

    batch_routes = (("POST", "/v1/files", "upload"), ("GET", "/v1/files/{file_id}/content", "file_content"),
                    ("POST", "/v1/batches", "create_batch"), ("GET", "/v1/batches", "list_batches"),
                    ("GET", "/v1/batches/{batch_id}", "get_batch"))

    def __init__(self, config: FaultConfig | None = None, *, batch: BatchConfig | None = None, **kw: Any) -> None:
        super().__init__(config, batch=batch, **kw)
        self.files: dict[str, bytes] = {}

    async def upload(self, request: web.Request) -> web.Response:
        if not _authorized(self, request):
            return _openai_error(401, "Incorrect API key provided")
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or not isinstance(upload, web.FileField):
            return _openai_error(400, "expected a file with purpose=batch")
        file_id = f"file-{len(self.files) + 1:06d}"
        self.files[file_id] = upload.file.read()
        return web.json_response({"id": file_id, "object": "file", "bytes": len(self.files[file_id]),
                                  "purpose": "batch", "filename": upload.filename})

    async def file_content(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["file_id"])
        if data is None:
            return _openai_error(404, "No such file")
        return web.Response(body=data, content_type="application/octet-stream")

    async def create_batch(self, request: web.Request) -> web.Response:
        if not _authorized(self, request):
            return _openai_error(401, "Incorrect API key provided")
        body = await request.json()
        raw = self.files.get(str(body.get("input_file_id")))
        if raw is None or body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return _openai_error(400, "invalid batch request")
        lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
        if len({line["custom_id"] for line in lines}) != len(lines):
            return _openai_error(400, "duplicate custom_id")
        items = [(line["custom_id"], line["body"]) for line in lines]
        job = self.core.create("batch_", items, body.get("metadata") or {}, _openai_texts)
        await self.core.accept_delay()
        return web.json_response(self._batch_object(job))

    async def list_batches(self, request: web.Request) -> web.Response:
        jobs, more = self.core.page(request.query, "after")
        page = [self._batch_object(j) for j in jobs]
        return web.json_response({"object": "list", "data": page, "has_more": more})

    async def get_batch(self, request: web.Request) -> web.Response:
        job = self.core.jobs.get(request.match_info["batch_id"])
        if job is None:
            return _openai_error(404, "No such batch")
        if self.core.status_fault():
            return _openai_error(503, "injected: the service is unavailable")
        return web.json_response(self._batch_object(job))

    def _batch_object(self, job: _Job) -> dict[str, Any]:
        ended, processed = self.core.progress(job)
        status, out_id, err_id = "in_progress", None, None
        failed = 0
        if ended and job.fate == "failed":
            status = "failed"
        elif ended:
            results = self._results(job)
            answered = [r for r in results if (r.get("response") or {}).get("status_code") == 200]
            rest = [r for r in results if r not in answered]
            failed = len(rest)
            out_id, err_id = self._file(job, "out", answered), self._file(job, "err", rest)
            status = "expired" if job.fate == "expired" else "completed"
        errors = {"object": "list", "data": [{"code": "invalid_request", "message": "injected: the job failed"}]}
        return {
            "id": job.job_id, "object": "batch", "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "status": status, "created_at": int(job.created), "metadata": job.metadata,
            "errors": errors if status == "failed" else None, "output_file_id": out_id, "error_file_id": err_id,
            "request_counts": {"total": len(job.items), "completed": processed - failed if ended else processed,
                               "failed": failed},
        }

    def _file(self, job: _Job, kind: str, lines: list[dict[str, Any]]) -> str | None:
        if not lines:
            return None
        file_id = f"file-{job.job_id}-{kind}"
        self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return file_id

    def _results(self, job: _Job) -> list[dict[str, Any]]:
        if job.results is None:
            job.results = [self._item(cid, body, i, job.fate) for i, (cid, body) in enumerate(job.items)]
        return job.results

    def _item(self, cid: str, body: dict[str, Any], index: int, fate: str) -> dict[str, Any]:
        system, user = _openai_texts(body)
        fault = self.core.fault(body, user, index, fate)
        line: dict[str, Any] = {"id": f"batch_req_{cid}", "custom_id": cid, "response": None, "error": None}
        if fault == "expired":
            line["error"] = {"code": "batch_expired", "message": "This request could not be executed before the "
                             "completion window expired."}
            return line
        if fault in (*_SERVER_ERRORS, "400"):
            status = 500 if fault != "400" and fault != "429" else int(fault)
            line["response"] = {"status_code": status, "request_id": cid,
                                "body": {"error": {"message": f"injected {fault}", "type": "server_error"}}}
            return line
        shape = {"empty": ("stop", ""), "length": ("length", "### 12"), "content_filter": ("content_filter", None)}
        reason, content = shape.get(fault or "", ("stop", ...))
        answer = self._answer(body, system, user, finish_reason=reason, content=content)
        line["response"] = {"status_code": 200, "request_id": cid, "body": json.loads(answer.text or "{}")}
        return line


def _openai_texts(body: dict[str, Any]) -> tuple[str, str]:
    messages = body.get("messages") or []
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    user = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
    return system, user


def _openai_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error", "code": status}},
                             status=status)


class FakeAnthropicBatchServer(_BatchServer, FakeAnthropicServer):
    """The fake Anthropic server with Message Batches (see the module docstring)."""

    batch_routes = (("POST", "/v1/messages/batches", "create_batch"), ("GET", "/v1/messages/batches", "list_batches"),
                    ("GET", "/v1/messages/batches/{batch_id}", "get_batch"),
                    ("GET", "/v1/messages/batches/{batch_id}/results", "results"))

    async def create_batch(self, request: web.Request) -> web.Response:
        if not _authorized(self, request):
            return _anthropic_error(401, "authentication_error", "invalid x-api-key")
        body = await request.json()
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return _anthropic_error(400, "invalid_request_error", "requests: at least one request")
        ids = [r.get("custom_id") for r in requests]
        if len(set(ids)) != len(ids):
            return _anthropic_error(400, "invalid_request_error", "duplicate custom_id")
        items = [(str(r["custom_id"]), r["params"]) for r in requests]
        job = self.core.create("msgbatch_", items, {}, message_texts)
        await self.core.accept_delay()
        return web.json_response(self._batch_object(job))

    async def list_batches(self, request: web.Request) -> web.Response:
        jobs, more = self.core.page(request.query, "after_id")
        page = [self._batch_object(j) for j in jobs]
        return web.json_response({"data": page, "has_more": more,
                                  "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None})

    async def get_batch(self, request: web.Request) -> web.Response:
        job = self.core.jobs.get(request.match_info["batch_id"])
        if job is None:
            return _anthropic_error(404, "not_found_error", "batch not found")
        if self.core.status_fault():
            return _anthropic_error(529, "overloaded_error", "injected: overloaded")
        return web.json_response(self._batch_object(job))

    async def results(self, request: web.Request) -> web.Response:
        job = self.core.jobs.get(request.match_info["batch_id"])
        if job is None or not self.core.progress(job)[0]:
            return _anthropic_error(404 if job is None else 400, "invalid_request_error", "results not ready")
        lines = self._results(job)
        return web.Response(body="".join(json.dumps(line) + "\n" for line in lines).encode(),
                            content_type="application/binary")

    def _batch_object(self, job: _Job) -> dict[str, Any]:
        ended, processed = self.core.progress(job)
        counts = {"processing": len(job.items) - processed, "succeeded": processed, "errored": 0, "canceled": 0,
                  "expired": 0}
        if ended:
            counts = dict.fromkeys(counts, 0)
            for line in self._results(job):
                kind = line["result"]["type"]
                counts[kind] += 1
        created = datetime.fromtimestamp(job.created, UTC).isoformat().replace("+00:00", "Z")
        return {"id": job.job_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": created, "ended_at": created if ended else None,
                "results_url": (f"{self.base_url}/v1/messages/batches/{job.job_id}/results" if ended else None)}

    def _results(self, job: _Job) -> list[dict[str, Any]]:
        if job.results is None:
            job.results = [self._item(cid, params, i, job.fate) for i, (cid, params) in enumerate(job.items)]
        return job.results

    def _item(self, cid: str, params: dict[str, Any], index: int, fate: str) -> dict[str, Any]:
        system, user, prefill = message_texts(params)
        fault = self.core.fault(params, user, index, fate)
        if fault == "expired":
            return {"custom_id": cid, "result": {"type": "expired"}}
        if fault in (*_SERVER_ERRORS, "400"):
            kind = {"400": "invalid_request_error", "429": "rate_limit_error", "529": "overloaded_error"}.get(
                fault, "api_error")
            error = {"type": "error", "error": {"type": kind, "message": f"injected {fault}"}}
            return {"custom_id": cid, "result": {"type": "errored", "error": error}}
        return {"custom_id": cid, "result": {"type": "succeeded",
                                             "message": message_body(params, system, user, prefill, fault)}}


def _anthropic_error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI / Anthropic batch APIs on 127.0.0.1")
    add_cli_arguments(parser)
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    parser.add_argument("--processing-s", type=float, default=0.2, help="seconds a job stays in progress")
    args = parser.parse_args(argv)
    server_class = FakeOpenAIBatchServer if args.provider == "openai" else FakeAnthropicBatchServer
    server = server_class(config_from_args(args), batch=BatchConfig(processing_s=args.processing_s),
                          host=args.host, port=args.port)
    asyncio.run(serve_until_done(server, args.max_seconds))


if __name__ == "__main__":
    main()
