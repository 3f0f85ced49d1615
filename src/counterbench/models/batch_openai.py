"""The OpenAI Batch API for ``openai:`` models (see :mod:`counterbench.models.batch_api`).

Submitting is two calls: ``POST {base}/files`` (multipart, ``purpose=batch``, a JSONL file whose lines are
``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``), then ``POST {base}/batches``
with the file's id, ``endpoint: /v1/chat/completions``, ``completion_window: 24h`` and the job's key in
``metadata.counterbench_key``. ``GET {base}/batches/{id}`` reports ``validating``, ``in_progress``,
``finalizing``, ``completed``, ``failed``, ``expired``, ``cancelling`` or ``cancelled`` with
``request_counts``; once ended, ``GET {base}/files/{output_file_id}/content`` holds the answered lines
(``response: {status_code, body}``) and the error file the others (``error: {code, message}``, e.g.
``batch_expired``). Limits: 50,000 requests and 200 MB per file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import aiohttp

from counterbench.models.base import BackendError, ChatRequest, ChatResult
from counterbench.models.batch_api import BatchClient, ItemOutcome, JobStatus, error_detail, job_id_of
from counterbench.models.openai_compat import OpenAICompatBackend
from counterbench.models.structured import JSON_MODES, constraint_for

_ENDPOINT = "/v1/chat/completions"
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: item error codes after which the same request may succeed in a later job
_RETRYABLE_CODES = frozenset({"batch_expired", "batch_cancelled", "server_error", "rate_limit_exceeded"})


class OpenAIBatchAPI(BatchClient):
    provider = "openai"
    max_requests = 50_000
    max_bytes = 190 * 1024 * 1024  # under the 200 MB file limit, with room for the lines' own fields

    def __init__(self, backend: OpenAICompatBackend) -> None:
        self.backend = backend
        headers = {k: v for k, v in backend._headers.items() if k.lower() != "content-type"}
        super().__init__(backend.name, backend.base_url, headers, backend._secret, backend.timeout_s)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        return self.backend.build_payload(request)

    def result(self, request: ChatRequest, body: dict[str, Any]) -> ChatResult:
        mode = self.backend.structured_mode_for(request.config)
        unwrap = mode in JSON_MODES and constraint_for(request) is not None
        raw = json.dumps(body, ensure_ascii=False).encode()
        return replace(self.backend._parse(raw, 0.0, unwrap), latency_ms=None)

    async def submit(self, key: str, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
        lines = "".join(json.dumps({"custom_id": cid, "method": "POST", "url": _ENDPOINT, "body": body},
                                   ensure_ascii=False) + "\n" for cid, body in items)
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", lines.encode(), filename=f"counterbench-{key}.jsonl",
                       content_type="application/jsonl")
        upload = json.loads(await self.http.call("POST", f"{self.base_url}/files", data=form))
        file_id = upload.get("id") if isinstance(upload, dict) else None
        if not isinstance(file_id, str):
            raise BackendError(f"{self.backend.name}: file upload gave no id", retryable=True)
        job = await self.http.call_json("POST", f"{self.base_url}/batches", json_body={
            "input_file_id": file_id, "endpoint": _ENDPOINT, "completion_window": "24h",
            "metadata": {"counterbench_key": key}})
        return job_id_of(job, self.backend.name)

    async def find(self, key: str, since: float, n_requests: int, claimed: set[str]) -> str | None:
        async for jobs in self.job_pages("/batches", "after"):
            for job in jobs:
                if (job.get("metadata") or {}).get("counterbench_key") == key and job.get("id") not in claimed:
                    return job_id_of(job, self.backend.name)
            created = [float(j["created_at"]) for j in jobs if isinstance(j.get("created_at"), int | float)]
            # newest first: once a page reaches before the key was stored, the job was never created
            if created and min(created) < since - 60:
                return None
        return None

    async def status(self, job_id: str) -> JobStatus:
        job = await self.http.call_json("GET", f"{self.base_url}/batches/{job_id}")
        counts = job.get("request_counts") or {}
        state = str(job.get("status") or "")
        errors = (job.get("errors") or {}).get("data") if isinstance(job.get("errors"), dict) else None
        error = error_detail(json.dumps(errors[0])) if isinstance(errors, list) and errors else None
        return JobStatus(state, state in _ENDED, int(counts.get("completed") or 0) + int(counts.get("failed") or 0),
                         int(counts.get("total") or 0), error if state == "failed" else None)

    async def results(self, job_id: str) -> list[ItemOutcome]:
        job = await self.http.call_json("GET", f"{self.base_url}/batches/{job_id}")
        out: list[ItemOutcome] = []
        for field in ("output_file_id", "error_file_id"):
            file_id = job.get(field)
            if isinstance(file_id, str) and file_id:
                out.extend(self._outcome(line) for line in await self.jsonl(f"{self.base_url}/files/{file_id}/content"))
        return out

    def _outcome(self, line: dict[str, Any]) -> ItemOutcome:
        cid = line["custom_id"]
        response = line.get("response") if isinstance(line.get("response"), dict) else None
        status = response.get("status_code") if response is not None else None
        body = response.get("body") if response is not None else None
        if status == 200 and isinstance(body, dict):
            return ItemOutcome(cid, body)
        name = self.backend.name
        if isinstance(status, int):
            raw = json.dumps(body).encode() if body is not None else b""
            return ItemOutcome(cid, None, self.backend._status_error(status, raw, {}))
        error: dict[str, Any] = line["error"] if isinstance(line.get("error"), dict) else {}
        code = str(error.get("code") or "error")
        message = self.http.redact(f"{name}: batch item {code}: {error_detail(json.dumps({'error': error}))}")
        return ItemOutcome(cid, None, BackendError(message, retryable=code in _RETRYABLE_CODES))

