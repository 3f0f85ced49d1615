"""Providers' batch APIs (``--batch``): many requests in one job, answered within a day at a lower price.

A :class:`BatchAPI` submits a list of request bodies as one job, reports the job's state, and returns
each request's outcome once the job has ended; the run engine (:mod:`counterbench.run.batch_engine`)
decides what to submit, stores the job ids and states, and records the answers. Two families have one
(:func:`counterbench.models.batch_families.batch_api_for` picks it):

* ``openai`` — the OpenAI Batch API (:mod:`counterbench.models.batch_openai`): a JSONL file uploaded with
  ``purpose=batch``, a batch over ``/v1/chat/completions`` with a 24 h completion window, output and error
  files of JSONL lines by ``custom_id``;
* ``anthropic`` — Anthropic's Message Batches (:mod:`counterbench.models.batch_anthropic`): the requests
  in one ``POST /v1/messages/batches``, results as JSONL lines by ``custom_id`` once it has ended.

A request body is exactly what the family's backend sends one at a time (its ``build_payload`` /
``build_params``), and a reply is read by the backend's own parser, so a batch answer is stored exactly
as the same answer sent alone would be. Structured output is sent in the mode the config asks for; a
provider that refuses it answers the item with an error (there is no first request sent alone to fall
back from).

Every job gets a *key* chosen by counterbench and stored before it is submitted, so a run killed between
the provider's acceptance and the store's commit finds its job again (:meth:`BatchAPI.find`) instead of
submitting it twice: OpenAI's batch carries the key in its ``metadata``; Anthropic's batches carry no
metadata, so the job found is the first one created since the key was stored with the same number of
requests that no stored job claims.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp

from counterbench.models.base import BackendError, ChatRequest, ChatResult, redact_secret
from counterbench.models.openai_compat import is_retryable_status, parse_retry_after

_MAX_ERROR_CHARS = 300
#: uploads and downloads may be large: a batch API call may take at least this long
MIN_TRANSFER_S = 300.0


@dataclass(frozen=True)
class JobStatus:
    """A job as the provider reports it: ``ended`` once its results can be read; ``processed`` of ``total``
    requests are done (answered or failed)."""

    provider_status: str
    ended: bool
    processed: int
    total: int
    #: the provider's reason when the whole job failed (e.g. OpenAI's validation errors)
    error: str | None = None


@dataclass(frozen=True)
class ItemOutcome:
    """One request's outcome in an ended job: the raw reply body, or why there is none."""

    custom_id: str
    #: the reply (a chat completion / a Messages ``message``) when the provider answered with 200
    body: dict[str, Any] | None
    #: the failure otherwise; ``retryable``: the same request may succeed in a later job (expired, 5xx)
    error: BackendError | None = None


class BatchAPI(Protocol):
    """What the batch engine needs from a provider's batch API."""

    provider: str
    #: the provider's limits on one job: requests, and bytes of their bodies
    max_requests: int
    max_bytes: int

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The request's body as the family's backend would send it alone."""
        ...

    def result(self, request: ChatRequest, body: dict[str, Any]) -> ChatResult:
        """A 200 reply ``body`` to ``request`` read as the backend reads one (raises :class:`BackendError`)."""
        ...

    async def submit(self, key: str, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Submit ``(custom_id, body)`` items as one job marked with ``key``; return the provider's job id."""
        ...

    async def find(self, key: str, since: float, n_requests: int, claimed: set[str]) -> str | None:
        """The id of the job submitted with ``key`` at or after ``since`` (Unix time), if the provider has
        it; ``claimed``: job ids the store already holds (never the answer)."""
        ...

    async def status(self, job_id: str) -> JobStatus:
        ...

    async def results(self, job_id: str) -> list[ItemOutcome]:
        """Every outcome the ended job reports (requests it does not report are lost: submit them again)."""
        ...

    async def aclose(self) -> None:
        ...


class BatchHTTP:
    """A small JSON-over-HTTP client for a batch API: one ``aiohttp`` session, errors as :class:`BackendError`
    (retryable for 408/409/425/429/5xx, timeouts and dropped connections), the key never in a message."""

    def __init__(self, name: str, headers: Mapping[str, str], secret: str | None, timeout_s: float) -> None:
        self.name = name
        self._headers = dict(headers)
        self._secret = secret
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def redact(self, text: str) -> str:
        return redact_secret(text, self._secret)

    async def call(self, method: str, url: str, *, data: Any = None, json_body: Any = None) -> bytes:
        """The body of a 2xx reply to ``method url``; raises :class:`BackendError` otherwise."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        body = None if json_body is None else json.dumps(json_body, ensure_ascii=False).encode()
        headers = {"Content-Type": "application/json"} if body is not None else None
        try:
            async with self._session.request(method, url, data=body if body is not None else data,
                                             headers=headers) as resp:
                raw = await resp.read()
                if not 200 <= resp.status < 300:
                    retryable = is_retryable_status(resp.status)
                    raise BackendError(
                        self.redact(f"{self.name}: batch API HTTP {resp.status}: {error_detail(raw)}"),
                        retryable=retryable, status=resp.status,
                        retry_after=parse_retry_after(resp.headers) if retryable else None)
                return raw
        except BackendError:
            raise
        except TimeoutError:
            raise BackendError(f"{self.name}: batch API gave no answer in time", retryable=True) from None
        except aiohttp.ClientError as exc:
            detail = self.redact(str(exc) or type(exc).__name__)[:_MAX_ERROR_CHARS]
            raise BackendError(f"{self.name}: batch API connection error ({detail})", retryable=True) from None

    async def call_json(self, method: str, url: str, *, json_body: Any = None) -> dict[str, Any]:
        raw = await self.call(method, url, json_body=json_body)
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise BackendError(f"{self.name}: batch API reply is not a JSON object", retryable=True, status=200)
        return data

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


class BatchClient:
    """What the providers' batch APIs share: their :class:`BatchHTTP` client (given at least
    :data:`MIN_TRANSFER_S` per call), their jobs listed page by page, a results file read, the client closed."""

    def __init__(self, name: str, base_url: str, headers: Mapping[str, str], secret: str | None,
                 timeout_s: float) -> None:
        self.base_url = base_url
        self.http = BatchHTTP(name, headers, secret, max(timeout_s, MIN_TRANSFER_S))

    async def job_pages(self, path: str, after_param: str) -> AsyncIterator[list[dict[str, Any]]]:
        """The jobs the provider lists at ``path``, a page (up to 100, newest first) at a time; the next page is
        asked for with ``after_param`` set to the page's ``last_id`` (else its last job's id)."""
        after: str | None = None
        while True:
            query = f"?limit=100&{after_param}={after}" if after else "?limit=100"
            page = await self.http.call_json("GET", f"{self.base_url}{path}{query}")
            jobs = [j for j in page.get("data") or [] if isinstance(j, dict)]
            yield jobs
            if not page.get("has_more") or not jobs:
                return
            after = str(page.get("last_id") or jobs[-1].get("id"))

    async def jsonl(self, url: str) -> list[dict[str, Any]]:
        """The items of the JSONL file at ``url`` (:func:`jsonl_objects`)."""
        return jsonl_objects(await self.http.call("GET", url))

    async def aclose(self) -> None:
        await self.http.aclose()


def error_detail(raw: bytes | str) -> str:
    """A short one-line description of an error body (its ``error.message`` when it has one)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    while isinstance(data, dict) and isinstance(data.get("error"), dict):
        data = data["error"]
    if isinstance(data, dict) and data.get("message"):
        text = str(data["message"])
    return " ".join(text.split())[:_MAX_ERROR_CHARS]


def job_id_of(job: dict[str, Any], name: str) -> str:
    """The ``id`` of a job object a batch API returned."""
    job_id = job.get("id")
    if not isinstance(job_id, str) or not job_id:
        raise BackendError(f"{name}: the batch API gave no job id", retryable=True)
    return job_id


def jsonl_objects(raw: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file (blank and malformed lines skipped: their requests count as lost)."""
    out = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
            out.append(obj)
    return out
