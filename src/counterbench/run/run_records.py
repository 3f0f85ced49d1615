"""The store's record of the runs behind an analysis, for the test record: when, by which command and
version, with which model strings and endpoints — never a key.

Decisions:

- One entry per run id asked for that the store holds: ``run_id``, ``kind`` (run, import, ...), ``command``,
  ``started_at``/``ended_at`` (ISO 8601, UTC), ``status``, ``counterbench_version``, and from the run's
  recorded config ``model_specs`` (label → model string), ``endpoints`` and ``generation``.
- **No secrets**: the store never held a key (the engine redacts what it writes); the endpoints lose any
  ``user:password@`` part, and every text passes the environment's redactor once more.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from counterbench.run.redact import Redactor
from counterbench.run.store import open_store

__all__ = ["run_records", "without_userinfo"]


def without_userinfo(url: Any) -> Any:
    """``url`` without a ``user:password@`` part (other values as they are)."""
    if not isinstance(url, str) or "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.netloc or "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _iso(stamp: Any) -> str | None:
    if not isinstance(stamp, int | float):
        return None
    return datetime.fromtimestamp(float(stamp), UTC).isoformat(timespec="seconds")


def _clean(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.redact(without_userinfo(value))
    if isinstance(value, dict):
        return {str(k): _clean(v, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, redactor) for v in value]
    return value


def _run_rows(store: Path | str, run_ids: Iterable[int], columns: str) -> list[tuple[Any, ...]]:
    """The ``columns`` (an SQL column list) of each run of ``run_ids`` the store's ``runs`` table holds, in
    run order."""
    wanted = sorted({int(r) for r in run_ids})
    if not wanted:
        return []
    with open_store(store, create=False) as opened:
        return opened.query(f"SELECT {columns} FROM runs WHERE run_id IN ({', '.join('?' * len(wanted))}) "
                            "ORDER BY run_id", tuple(wanted))


def _config(blob: str | None) -> dict[str, Any]:
    """A run's recorded config (JSON text): ``{}`` when it is missing, not JSON or not an object."""
    try:
        config = json.loads(blob or "{}")
    except ValueError:
        return {}
    return config if isinstance(config, dict) else {}


def run_records(store: Path | str, run_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The store's record of each of ``run_ids`` it holds (module notes), in run order."""
    rows = _run_rows(store, run_ids, "run_id, kind, command, started_at, ended_at, version, status, config")
    redactor = Redactor.from_environment()
    out: list[dict[str, Any]] = []
    for run_id, kind, command, started, ended, version, status, blob in rows:
        config = _config(blob)
        out.append(_clean({
            "run_id": int(run_id), "kind": kind, "command": command, "started_at": _iso(started),
            "ended_at": _iso(ended), "status": status, "counterbench_version": version,
            "model_specs": config.get("model_specs") or {}, "endpoints": config.get("endpoints") or {},
            "generation": config.get("generation") or {},
        }, redactor))
    return out


def stopping_rules(store: Path | str, run_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The sequential rules (``--stop-when decided``) recorded by any of ``run_ids`` (distinct, in run order)."""
    out: list[dict[str, Any]] = []
    for (blob,) in _run_rows(store, run_ids, "config"):
        rule = _config(blob).get("stopping")
        if isinstance(rule, dict) and rule not in out:
            out.append(rule)
    return out
