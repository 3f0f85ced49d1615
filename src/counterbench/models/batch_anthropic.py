"""Anthropic's Message Batches for ``anthropic:`` models (see :mod:`counterbench.models.batch_api`).

``POST {base}/v1/messages/batches`` with ``{"requests": [{"custom_id", "params"}]}`` (``params``: what
``messages.create`` takes); ``GET {base}/v1/messages/batches/{id}`` reports ``processing_status``
(``in_progress``, ``canceling``, ``ended``) with ``request_counts`` (``processing``, ``succeeded``,
``errored``, ``canceled``, ``expired``) and, once ended, ``results_url``: JSONL lines ``{"custom_id",
"result": {"type": "succeeded", "message"} | {"type": "errored", "error"} | {"type": "canceled"} |
{"type": "expired"}}``. Limits: 100,000 requests and 256 MB per batch. The API key goes in ``x-api-key``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from counterbench.models.anthropic_backend import AnthropicBackend, result_from_message
from counterbench.models.base import BackendError, ChatRequest, ChatResult
from counterbench.models.batch_api import BatchClient, ItemOutcome, JobStatus, error_detail, job_id_of

DEFAULT_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
#: error types after which the same request may succeed in a later batch
_RETRYABLE_ERRORS = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})
#: clock slack when matching a batch's creation time with the time its key was stored (seconds)
_SLACK_S = 120.0


class AnthropicBatchAPI(BatchClient):
    provider = "anthropic"
    max_requests = 100_000
    max_bytes = 250 * 1024 * 1024  # under the 256 MB limit

    def __init__(self, backend: AnthropicBackend) -> None:
        self.backend = backend
        headers = {"x-api-key": backend._secret, "anthropic-version": API_VERSION, "Accept": "application/json"}
        super().__init__(backend.name, (backend.base_url or DEFAULT_URL).rstrip("/"), headers, backend._secret,
                         backend.timeout_s)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        params = self.backend.build_params(request)
        extra = params.pop("extra_body", None) or {}  # the SDK merges it into the body; a batch item is the body
        return {**params, **extra}

    def result(self, request: ChatRequest, body: dict[str, Any]) -> ChatResult:
        return result_from_message(body, self.backend.build_params(request), None)

    async def submit(self, key: str, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
        job = await self.http.call_json("POST", f"{self.base_url}/v1/messages/batches", json_body={
            "requests": [{"custom_id": cid, "params": params} for cid, params in items]})
        return job_id_of(job, self.backend.name)

    async def find(self, key: str, since: float, n_requests: int, claimed: set[str]) -> str | None:
        found: list[tuple[float, str]] = []
        async for jobs in self.job_pages("/v1/messages/batches", "after_id"):
            for job in jobs:
                created = _unix(job.get("created_at"))
                if created is None or created < since - _SLACK_S or job.get("id") in claimed:
                    continue
                counts = job.get("request_counts") or {}
                if sum(int(v or 0) for v in counts.values() if isinstance(v, int)) == n_requests:
                    found.append((created, str(job["id"])))
        return min(found)[1] if found else None

    async def status(self, job_id: str) -> JobStatus:
        job = await self.http.call_json("GET", f"{self.base_url}/v1/messages/batches/{job_id}")
        counts = {k: int(v or 0) for k, v in (job.get("request_counts") or {}).items() if isinstance(v, int)}
        state = str(job.get("processing_status") or "")
        total = sum(counts.values())
        return JobStatus(state, state == "ended", total - counts.get("processing", 0), total)

    async def results(self, job_id: str) -> list[ItemOutcome]:
        job = await self.http.call_json("GET", f"{self.base_url}/v1/messages/batches/{job_id}")
        url = job.get("results_url")
        if not isinstance(url, str) or not url:
            url = f"{self.base_url}/v1/messages/batches/{job_id}/results"
        return [self._outcome(line) for line in await self.jsonl(url)]

    def _outcome(self, line: dict[str, Any]) -> ItemOutcome:
        cid = line["custom_id"]
        result: dict[str, Any] = line["result"] if isinstance(line.get("result"), dict) else {}
        kind = str(result.get("type") or "missing")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            return ItemOutcome(cid, result["message"])
        name = self.backend.name
        if kind == "errored":
            error: dict[str, Any] = result["error"] if isinstance(result.get("error"), dict) else {}
            inner: dict[str, Any] = error["error"] if isinstance(error.get("error"), dict) else error
            etype = str(inner.get("type") or "error")
            detail = error_detail(str(inner.get("message") or ""))
            message = self.http.redact(f"{name}: batch item errored ({etype}): {detail}")
            return ItemOutcome(cid, None, BackendError(message, retryable=etype in _RETRYABLE_ERRORS))
        return ItemOutcome(cid, None, BackendError(f"{name}: batch item {kind}", retryable=True))  # expired, canceled


def _unix(value: Any) -> float | None:
    """An RFC 3339 time (``2024-09-24T18:37:24.100435Z``) as Unix seconds."""
    from datetime import datetime

    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
