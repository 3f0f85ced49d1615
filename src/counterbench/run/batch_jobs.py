"""The store's record of batch jobs (``--batch``): tables ``batch_jobs`` and ``batch_requests``.

A job's life, each step committed before the next is taken:

1. ``submitting`` — its key, model, config and requests (``custom_id`` -> the prompt ids answered by that
   request, and the request's attempt number) are stored *before* the provider is called;
2. ``submitted`` — the provider's job id is stored as soon as it is known; the state the provider
   reports (``provider_status``, requests processed) is updated at every poll;
3. ``collected`` — every result of the ended job is in ``responses`` (committed first); or ``abandoned``
   (never submitted: the provider refused it, or a run killed while submitting finds no such job) or
   ``gone`` (the provider no longer has it: its requests go into a new job).

So after a kill, a ``submitted`` job is polled, never submitted again, and a ``submitting`` one is looked
up at the provider by its key (:meth:`~counterbench.models.batch_api.BatchAPI.find`): adopted if the
provider has it, else submitted afresh. A job of a model and config is found again by any later run with
the same model and generation config.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass

from counterbench.run.store import Store, _store_error

#: states of a job whose results are not all in the store yet
OPEN_STATES = ("submitting", "submitted")


@dataclass
class StoredJob:
    """One open job: its key, the provider's id (``None`` while ``submitting``) and its requests."""

    key: str
    job_id: str | None
    state: str
    created_at: float
    submitted_at: float | None
    #: custom_id -> (prompt ids, attempt)
    requests: dict[str, tuple[list[str], int]]
    provider_status: str | None = None
    processed: int = 0
    #: the base URL it was submitted to (``None``: the provider's default)
    endpoint: str | None = None

    @property
    def n_requests(self) -> int:
        return len(self.requests)


def new_key() -> str:
    """A job key: unique, and usable in any provider's ``custom_id`` and metadata."""
    return uuid.uuid4().hex[:20]


@dataclass(eq=False)
class BatchJobs:
    """Reads and writes one model's jobs (model + generation config) in a store."""

    store: Store
    provider: str
    model: str
    config_fp: str
    endpoint: str | None
    run_id: int

    def open_jobs(self) -> list[StoredJob]:
        """The model's jobs whose results are not all stored yet, oldest first."""
        marks = ", ".join("?" * len(OPEN_STATES))
        rows = self.store.query(
            "SELECT batch_key, job_id, state, created_at, submitted_at, provider_status, n_processed, endpoint "
            "FROM batch_jobs "
            f"WHERE model = ? AND config_fp = ? AND state IN ({marks}) ORDER BY created_at",
            (self.model, self.config_fp, *OPEN_STATES))
        jobs = []
        for key, job_id, state, created, submitted, provider_status, processed, endpoint in rows:
            requests = {cid: (json.loads(pids), int(attempt)) for cid, pids, attempt in self.store.query(
                "SELECT custom_id, prompt_ids, attempt FROM batch_requests WHERE batch_key = ?", (key,))}
            jobs.append(StoredJob(key, job_id, state, float(created), submitted, requests, provider_status,
                                  int(processed or 0), endpoint))
        return jobs

    def claimed_ids(self) -> set[str]:
        """Every provider job id the store holds (for any model)."""
        return {str(r[0]) for r in self.store.query("SELECT job_id FROM batch_jobs WHERE job_id IS NOT NULL")}

    def begin(self, key: str, requests: dict[str, tuple[list[str], int]]) -> StoredJob:
        """Store a job about to be submitted (state ``submitting``) under ``key`` (:func:`new_key`), with its
        requests (custom_id -> prompt ids, attempt), in one transaction."""
        job = StoredJob(key, None, "submitting", time.time(), None, requests, endpoint=self.endpoint)
        conn = self.store.conn
        try:
            with conn:
                conn.execute(
                    "INSERT INTO batch_jobs (batch_key, provider, model, config_fp, endpoint, state, n_requests, "
                    "created_at, run_id) VALUES (?, ?, ?, ?, ?, 'submitting', ?, ?, ?)",
                    (job.key, self.provider, self.model, self.config_fp, self.endpoint, job.n_requests,
                     job.created_at, self.run_id))
                conn.executemany(
                    "INSERT INTO batch_requests (batch_key, custom_id, prompt_ids, attempt) VALUES (?, ?, ?, ?)",
                    [(job.key, cid, json.dumps(pids), attempt) for cid, (pids, attempt) in requests.items()])
        except sqlite3.Error as err:
            raise _store_error(self.store.path, err) from None
        return job

    def submitted(self, job: StoredJob, job_id: str) -> None:
        job.job_id, job.state, job.submitted_at = job_id, "submitted", time.time()
        self.store.execute_write_params(
            "UPDATE batch_jobs SET job_id = ?, state = 'submitted', submitted_at = ?, updated_at = ? "
            "WHERE batch_key = ?", (job_id, job.submitted_at, job.submitted_at, job.key))

    def progress(self, job: StoredJob, provider_status: str, processed: int) -> None:
        if (provider_status, processed) == (job.provider_status, job.processed):
            return
        job.provider_status, job.processed = provider_status, processed
        self.store.execute_write_params(
            "UPDATE batch_jobs SET provider_status = ?, n_processed = ?, updated_at = ? WHERE batch_key = ?",
            (provider_status, processed, time.time(), job.key))

    def close(self, job: StoredJob, state: str, error: str | None = None) -> None:
        """The job is done with: ``collected``, ``abandoned`` or ``gone`` (see the module docstring)."""
        job.state = state
        self.store.execute_write_params(
            "UPDATE batch_jobs SET state = ?, collected_at = ?, error = ? WHERE batch_key = ?",
            (state, time.time(), error, job.key))

