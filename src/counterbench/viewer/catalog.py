"""Read-only queries over a store for the viewer: filters, slots, one slot's answers, text search.

The store is opened with SQLite's ``mode=ro`` URI (the viewer can never change it). At start, and
again when another process has committed to the store (``PRAGMA data_version``), a *catalog* is
built in an attached in-memory database: one row per response with its prompt's design columns but
without any text, indexed by slot. Every page filters that catalog and then reads the few texts it
shows from the store by row id, so a slot view costs two indexed lookups whatever the store's size.

A *slot* is the set of prompts that differ only in the counterfactual identifier (the matched design):
one model and generation config × study × use case × language × axis × profile × question variant ×
prompt variant. Nothing here names a study, a language or an axis: the values come from the store.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from counterbench.errors import UserError
from counterbench.outcomes.units import GapUnit, answer_measures, gap_unit, kind_of
from counterbench.run.sidecars import existing_sidecars, sidecars_removed_on_failure, tidy_after_readonly

#: the columns a slot is keyed by (besides the counterfactual ``identifier``)
SLOT_KEY: tuple[str, ...] = (
    "model", "config_fp", "study", "use_case", "language", "axis", "profile_id", "question_variant", "variant",
)
#: filters offered on every page (each may be repeated)
FILTERS: tuple[str, ...] = ("study", "model", "use_case", "language", "axis", "identifier", "status", "variant")
_PROMPT_KEYS = ("study", "use_case", "language", "axis", "identifier", "profile_id", "question_variant", "variant")
#: the prompts' key columns, copied to memory first (a join against the store's wide prompt rows is 3× slower)
_PROMPTS_SQL = """
INSERT OR IGNORE INTO cat.prompts
SELECT prompt_id, prompt_hash, COALESCE(study, ''), COALESCE(use_case, ''), COALESCE(language, ''),
       COALESCE(axis, ''), COALESCE(identifier, ''), COALESCE(profile_id, ''),
       COALESCE(CAST(question_variant AS TEXT), ''), COALESCE(variant, 'standard'), COALESCE(answer_type, '')
FROM main.prompts
"""
_ITEMS_SQL = """
INSERT INTO cat.items
SELECT r.id, r.model, r.config_fp, r.status, r.value, COALESCE(p.study, ''), COALESCE(p.use_case, ''),
       COALESCE(p.language, ''), COALESCE(p.axis, ''), COALESCE(p.identifier, ''), COALESCE(p.profile_id, ''),
       COALESCE(p.question_variant, ''), COALESCE(p.variant, 'standard'), COALESCE(p.answer_type, ''), NULL
FROM main.responses r LEFT JOIN cat.prompts p ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash
WHERE r.id > ?
"""
_CREATE = (
    "CREATE TABLE cat.prompts (prompt_id TEXT, prompt_hash TEXT, study TEXT, use_case TEXT, language TEXT, "
    "axis TEXT, identifier TEXT, profile_id TEXT, question_variant TEXT, variant TEXT, answer_type TEXT, "
    "PRIMARY KEY (prompt_id, prompt_hash))",
    "CREATE TABLE cat.items (id INTEGER PRIMARY KEY, model TEXT, config_fp TEXT, status TEXT, value REAL, "
    "study TEXT, use_case TEXT, language TEXT, axis TEXT, identifier TEXT, profile_id TEXT, question_variant TEXT, "
    "variant TEXT, answer_type TEXT, measure REAL)",
    "CREATE TABLE cat.measures (answer_type TEXT, value REAL, measure REAL, PRIMARY KEY (answer_type, value))",
    "CREATE INDEX cat.items_slot ON items (use_case, language, axis, profile_id, question_variant, variant, model)",
    "CREATE INDEX cat.items_model ON items (model, axis)",
)
REFRESH_SECONDS = 5.0
PAGE_SIZE = 50


@dataclass(frozen=True)
class Slot:
    """The key of one slot (values as stored; ``question_variant`` as text)."""

    model: str
    config_fp: str
    study: str
    use_case: str
    language: str
    axis: str
    profile_id: str
    question_variant: str
    variant: str

    def params(self) -> dict[str, str]:
        return {k: str(getattr(self, k)) for k in SLOT_KEY}


@dataclass
class Answer:
    """One identity's answer in a slot."""

    id: int
    identifier: str
    status: str
    value: float | None
    unit: str | None
    parse_reason: str | None
    response: str | None
    error: str | None
    prompt_id: str
    user: str | None
    system: str | None
    #: the number the analysis compares (a label's positive answer 100, the other 0; an amount itself)
    measure: float | None = None
    answer_type: str | None = None


@dataclass
class SlotView:
    slot: Slot
    answers: list[Answer]
    spread: float
    mean_gap: float
    low: Answer | None
    high: Answer | None
    other_models: list[str] = field(default_factory=list)
    #: how this slot's answers compare (Δ% for amounts, percentage points for yes/no, points for scores)
    unit: GapUnit = field(default_factory=lambda: gap_unit(None))


def pair_gap(a: float, b: float, relative: bool = True) -> float:
    """Δ% = |a − b| / ((a + b) / 2) × 100, NaN when a + b ≤ 0 (as :func:`counterbench.stats.gaps.relative_gap`,
    without importing scipy into the viewer); ``|a − b|`` in the kind's unit when not ``relative``."""
    if not relative:
        return abs(a - b)
    total = a + b
    return abs(a - b) / total * 200.0 if total > 0 else math.nan


def spread_of(values: Sequence[float], relative: bool = True) -> tuple[float, float]:
    """(max gap, mean gap) over every pair of the finite ``values`` (NaN if < 2 values): paper §4.2 Δ% when
    ``relative`` (amounts), else plain differences in the kind's unit (percentage points, points)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if len(finite) < 2:
        return math.nan, math.nan
    gaps = [pair_gap(a, b, relative) for i, a in enumerate(finite) for b in finite[i + 1:]]
    usable = [g for g in gaps if math.isfinite(g)]
    top = pair_gap(max(finite), min(finite), relative)
    return top, (sum(usable) / len(usable) if usable else math.nan)


def _ro_connect(path: Path) -> sqlite3.Connection:
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30.0)
    except sqlite3.Error as err:
        raise UserError(f"cannot open store {path} read-only: {err}") from None
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as err:
        conn.close()
        raise UserError(f"cannot open store {path} read-only: {err}") from None
    return conn


class Catalog:
    """A read-only store plus its in-memory catalog; safe to share between threads (one lock)."""

    def __init__(self, path: Path | str, *, aliases: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise UserError(f"store {self.path} does not exist (run `counterbench run` or `import` first)")
        #: the store's -wal/-shm that were there before the viewer opened it (those it created go at close)
        self._sidecars_before = existing_sidecars(self.path)
        with sidecars_removed_on_failure(self.path):  # a refused store gets no -wal/-shm beside it
            self.conn = _ro_connect(self.path)
            try:
                self._open(aliases)
            except BaseException as err:
                self.conn.close()
                if isinstance(err, sqlite3.DatabaseError):
                    raise UserError(f"store {self.path} is corrupted ({err}); it was left untouched") from None
                raise

    def _open(self, aliases: Mapping[str, Mapping[str, str]] | None) -> None:
        tables = {n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"responses", "prompts"} <= tables:
            raise UserError(f"{self.path} is not a counterbench store (no responses table)")
        self.conn.execute("ATTACH DATABASE ':memory:' AS cat")
        #: column -> {alias: stored value}, e.g. the analysis's renamed use cases
        self.aliases = {k: dict(v) for k, v in (aliases or {}).items()}
        self._lock = threading.Lock()
        self._version: int | None = None
        self._top = 0
        self._count = 0
        self._checked = 0.0
        self.options: dict[str, list[str]] = {}
        #: filter -> {value: responses holding it} (shown beside each filter value)
        self.counts: dict[str, dict[str, int]] = {}
        self.build_seconds = 0.0
        self.refresh(force=True)

    def close(self) -> None:
        """Close the store; the -wal/-shm the read-only connection created are removed again."""
        self.conn.close()
        tidy_after_readonly(self.path, self._sidecars_before)

    # -- catalog ------------------------------------------------------------------------------

    def refresh(self, *, force: bool = False) -> None:
        """Catch up with writes by other processes (checked at most every :data:`REFRESH_SECONDS`).

        New responses (a run in progress) are appended; any other change (a re-parse, deleted rows)
        rebuilds the catalog. A retried ``error`` row keeps its id, so its new status shows after the
        next rebuild (restart the viewer to force one).
        """
        now = time.monotonic()
        if not force and now - self._checked < REFRESH_SECONDS:
            return
        with self._lock:
            self._checked = now
            version = int(self.conn.execute("PRAGMA main.data_version").fetchone()[0])
            if not force and version == self._version:
                return
            started = time.perf_counter()
            top, count = self.conn.execute("SELECT COALESCE(max(id), 0), count(*) FROM main.responses").fetchone()
            appended = not force and top > self._top and count - self._count == self.conn.execute(
                "SELECT count(*) FROM main.responses WHERE id > ?", (self._top,)).fetchone()[0]
            if not appended:
                self.conn.execute("DROP TABLE IF EXISTS cat.items")
                self.conn.execute("DROP TABLE IF EXISTS cat.prompts")
                self.conn.execute("DROP TABLE IF EXISTS cat.measures")
                for sql in _CREATE:
                    self.conn.execute(sql)
                self._top = 0
            self.conn.execute(_PROMPTS_SQL)
            self.conn.execute(_ITEMS_SQL, (self._top,))
            self._measure(self._top)
            self.conn.commit()
            self._top, self._count, self._version = int(top), int(count), version
            self.options = self._options()
            self.build_seconds = time.perf_counter() - started

    def _measure(self, after: int) -> None:
        """Each new usable answer's measure in its kind's terms (a label's positive answer is 100, the other 0;
        an amount is itself), computed once per distinct (answer type, stored value)."""
        for (answer_type,) in self.conn.execute(
                "SELECT DISTINCT answer_type FROM cat.items WHERE id > ? AND value IS NOT NULL", (after,)).fetchall():
            values = [v for (v,) in self.conn.execute(
                "SELECT DISTINCT value FROM cat.items WHERE id > ? AND answer_type = ? AND value IS NOT NULL "
                "AND value NOT IN (SELECT value FROM cat.measures WHERE answer_type = ?)",
                (after, answer_type, answer_type))]
            measured = answer_measures(answer_type or None, np.asarray(values, dtype=np.float64))
            self.conn.executemany("INSERT INTO cat.measures VALUES (?, ?, ?)",
                                  [(answer_type, v, float(m) if math.isfinite(m) else None)
                                   for v, m in zip(values, measured, strict=True)])
        self.conn.execute(
            "UPDATE cat.items SET measure = (SELECT m.measure FROM cat.measures m WHERE m.answer_type = "
            "items.answer_type AND m.value = items.value) WHERE id > ? AND status = 'ok' AND value IS NOT NULL",
            (after,))

    def _options(self) -> dict[str, list[str]]:
        """Each filter's values, in store order (the prompt table's order for prompt columns); their
        responses in :attr:`counts`."""
        out: dict[str, list[str]] = {}
        self.counts = {col: {str(v): int(n) for v, n in self.conn.execute(
            f"SELECT {col}, count(*) FROM cat.items GROUP BY {col}")} for col in FILTERS}
        for col in FILTERS:
            table = "cat.prompts" if col in _PROMPT_KEYS else "cat.items"
            order = "min(rowid)" if table == "cat.prompts" else "min(id)"
            out[col] = [str(v) for (v,) in self.conn.execute(
                f"SELECT {col} FROM {table} WHERE {col} IS NOT NULL AND {col} != '' GROUP BY {col} ORDER BY {order}")]
        return out

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` over the store (``main``) and its catalog (``cat.items``), under the lock."""
        with self._lock:
            return self.conn.execute(sql, list(params)).fetchall()

    def total(self) -> int:
        return int(self.query("SELECT count(*) FROM cat.items")[0][0])

    # -- filters ------------------------------------------------------------------------------

    def _values(self, column: str, wanted: Sequence[str]) -> list[str]:
        """Filter values plus the stored names they are aliases of."""
        alias = self.aliases.get(column, {})
        return list(dict.fromkeys([*wanted, *(k for k, v in alias.items() if v in wanted)]))

    def where(self, filters: Mapping[str, Sequence[str]], prefix: str = "") -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for col in (*FILTERS, "profile_id", "question_variant", "config_fp"):
            wanted = [v for v in filters.get(col, ()) if v != ""]
            if not wanted:
                continue
            values = self._values(col, wanted)
            clauses.append(f"{prefix}{col} IN ({', '.join('?' * len(values))})")
            params.extend(values)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def responses(
        self, filters: Mapping[str, Sequence[str]], *, search: str = "", page: int = 0, size: int = PAGE_SIZE
    ) -> tuple[int, list[dict[str, Any]]]:
        """(matches, one page of responses) for ``filters`` and a case-insensitive text ``search``."""
        where, params = self.where(filters, "c.")
        join = ""
        if search:
            join = " JOIN main.responses r ON r.id = c.id"
            where += (" AND " if where else " WHERE ") + "instr(lower(r.response), lower(?)) > 0"
            params.append(search)
        count = int(self.query(f"SELECT count(*) FROM cat.items c{join}{where}", params)[0][0])
        rows = self.query(
            f"SELECT c.id FROM cat.items c{join}{where} ORDER BY c.id LIMIT ? OFFSET ?",
            [*params, size, max(0, page) * size],
        )
        return count, self._details([r[0] for r in rows])

    def _details(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        rows = self.query(
            "SELECT c.id, c.model, c.config_fp, c.study, c.use_case, c.language, c.axis, c.profile_id, "
            "c.question_variant, c.variant, c.identifier, c.status, c.value, r.unit, r.parse_reason, r.response, "
            "r.error, r.prompt_id, c.answer_type FROM cat.items c JOIN main.responses r ON r.id = c.id "
            f"WHERE c.id IN ({marks}) ORDER BY c.id",
            list(ids),
        )
        names = ("id", *SLOT_KEY, "identifier", "status", "value", "unit", "parse_reason", "response", "error",
                 "prompt_id", "answer_type")
        return [dict(zip(names, row, strict=True)) for row in rows]

    # -- slots --------------------------------------------------------------------------------

    def slots(
        self, filters: Mapping[str, Sequence[str]], *, page: int = 0, size: int = PAGE_SIZE
    ) -> tuple[int, list[dict[str, Any]]]:
        """Slots matching ``filters`` (identifiers restrict which answers count), widest spread first.

        Each row: the slot key, answers, usable values, the lowest and highest measure and the spread between
        them in the kind's comparison (``unit``): Δ% for amounts, percentage points for yes/no answers,
        points for scores; with two identifiers, their gap.
        """
        where, params = self.where(filters)
        keys = ", ".join(SLOT_KEY)
        grouped = (
            f"SELECT {keys}, count(*) AS n, sum(status = 'ok' AND measure IS NOT NULL) AS n_values, "
            "min(CASE WHEN status = 'ok' THEN measure END) AS lo, max(CASE WHEN status = 'ok' THEN measure END) AS hi, "
            f"max(answer_type) AS answer_type FROM cat.items{where} GROUP BY {keys}"
        )
        count = int(self.query(f"SELECT count(*) FROM ({grouped})", params)[0][0])
        relative = self._relative_types()
        marks = ", ".join("?" * len(relative)) or "NULL"
        rows = self.query(
            f"SELECT *, CASE WHEN n_values < 2 THEN NULL WHEN answer_type IN ({marks}) THEN "
            "CASE WHEN lo + hi > 0 THEN (hi - lo) / ((hi + lo) / 2.0) * 100 END ELSE hi - lo END AS spread "
            f"FROM ({grouped}) ORDER BY spread IS NULL, spread DESC, {keys} LIMIT ? OFFSET ?",
            [*relative, *params, size, max(0, page) * size],
        )
        names = (*SLOT_KEY, "n", "n_values", "lo", "hi", "answer_type", "spread")
        out = [dict(zip(names, row, strict=True)) for row in rows]
        for row in out:
            row["unit"] = gap_unit(kind_of(row["answer_type"] or None))
        return count, out

    def _relative_types(self) -> list[str]:
        """The stored answer types whose kind compares relatively (Δ%)."""
        types = [t for (t,) in self.query("SELECT DISTINCT answer_type FROM cat.prompts")]
        return [t for t in types if gap_unit(kind_of(t or None)).relative]

    def slot(self, slot: Mapping[str, str], identifiers: Sequence[str] = ()) -> SlotView:
        """Every identity's answer in one slot (``identifiers`` first when given), with its spread.

        Key columns left out of ``slot`` are free: the first stored slot that matches the others is
        shown (so a link may name just a model, a use case and a profile).
        """
        if not slot.get("model"):
            raise LookupError("a slot needs a model")
        given = [k for k in SLOT_KEY if slot.get(k)]
        where = " WHERE " + " AND ".join(f"c.{k} = ?" for k in given)
        first = self.query(f"SELECT {', '.join(SLOT_KEY)} FROM cat.items c{where} ORDER BY c.id LIMIT 1",
                            [str(slot[k]) for k in given])
        if not first:
            raise LookupError("no answers in this slot")
        key = {k: str(v) for k, v in zip(SLOT_KEY, first[0], strict=True)}
        rows = self.query(
            "SELECT c.id, c.identifier, c.status, c.value, r.unit, r.parse_reason, r.response, r.error, r.prompt_id, "
            "p.user, p.system, c.measure, c.answer_type FROM cat.items c JOIN main.responses r ON r.id = c.id "
            "LEFT JOIN main.prompts p ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash WHERE "
            + " AND ".join(f"c.{k} = ?" for k in SLOT_KEY) + " ORDER BY c.id",
            [key[k] for k in SLOT_KEY],
        )
        answers = [Answer(*row) for row in rows]
        wanted = [i for i in identifiers if i]
        if wanted:
            order = {ident: k for k, ident in enumerate(wanted)}
            answers.sort(key=lambda a: order.get(a.identifier, len(order)))
        answer_type = self.query("SELECT answer_type FROM cat.items c" + where + " ORDER BY c.id LIMIT 1",
                                  [str(slot[k]) for k in given])[0][0]
        unit = gap_unit(kind_of(answer_type or None))
        usable = [a for a in answers if a.status == "ok" and a.measure is not None and math.isfinite(a.measure)]
        spread, mean_gap = spread_of([a.measure for a in usable if a.measure is not None], unit.relative)
        low = min(usable, key=lambda a: a.measure or 0.0) if usable else None
        high = max(usable, key=lambda a: a.measure or 0.0) if usable else None
        others = [m for (m,) in self.query(
            "SELECT DISTINCT model FROM cat.items WHERE use_case = ? AND language = ? AND axis = ? AND profile_id = ? "
            "AND question_variant = ? AND variant = ? AND model != ? ORDER BY model",
            [key["use_case"], key["language"], key["axis"], key["profile_id"], key["question_variant"],
             key["variant"], key["model"]])]
        return SlotView(Slot(**key), answers, spread, mean_gap, low, high, others, unit)
