"""Reading a store's answers back as the results table, one model (or all) at a time.

A :class:`ResultsReader` keeps one store open and reads the prompts' side of the answers (the prompt's
study, use case, language, axis, identifier, profile, variants, answer type and design, stored once
per prompt) once; each :meth:`ResultsReader.read` then reads only the answers' own columns and attaches
the prompt side by ``(prompt_id, prompt_hash)``. The frame is the one a join of the two tables gives
(``responses LEFT JOIN prompts``: the same rows, columns, order and types), without re-reading every
prompt's columns and design once per model: the bounded-memory analysis reads a 9-model store this way
(``docs/scale.md``). Answers whose prompt row is missing (a store written before prompts were kept)
are read by the join itself; the prompts' side is read again when another connection (a run) wrote to the
store since.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from counterbench.columns import BASE_COLUMNS, PARSED_COLUMNS, USAGE_COLUMNS
from counterbench.errors import UserError
from counterbench.run.store import Store, open_store

__all__ = ["CONFIG_COLUMNS", "PROMPT_SIDE", "READ_CHUNK_ROWS", "RESULT_COLUMNS", "ResultsReader", "read_in_chunks"]

#: the leading columns of a results table, in order; design and config columns follow
RESULT_COLUMNS: tuple[str, ...] = (
    "prompt_id", "model", "simulated", *BASE_COLUMNS[1:9], "status", *PARSED_COLUMNS, "response", "finish_reason",
    *USAGE_COLUMNS, "attempts", "error", "cached", "source", "answer_type", "config_fp", "request_fp", "run_id",
    "started_at", "finished_at", "answer_logprobs", "answer_complete", "answer_mass", "answer_forced", "prompt_hash",
)
#: rows fetched from SQLite at a time (bounds the peak memory of a read)
READ_CHUNK_ROWS = 20_000
#: generation settings joined to each row; ``max_tokens`` is the limit the answer was sent with (a prompt's
#: own ``requested_max_tokens`` when its run honoured it, see ``GenerationConfig.prompt_max_tokens``)
CONFIG_COLUMNS = ("temperature", "max_tokens", "seed", "reasoning_effort", "structured")
#: the result columns stored with the prompt (the rest are the answer's own)
PROMPT_SIDE = ("study", "use_case", "language", "axis", "identifier", "profile_id", "question_variant", "variant",
               "answer_type")
_TEXTS = ("system", "user")
#: prompt columns stored without a declared type (the others are TEXT: a string or NULL)
_UNTYPED = ("question_variant",)
_KEY = ("prompt_id", "prompt_hash")


def read_in_chunks(sql: str, store: Store, params: Sequence[Any], rows: int | None = None) -> pd.DataFrame:
    """``pd.read_sql_query`` a chunk of rows (default :data:`READ_CHUNK_ROWS`) at a time, with the dtypes one
    whole read would infer.

    Fetching every row at once holds all of them as Python objects before pandas packs the strings:
    1.45 GB for a 9-model store of the built-in amount study (352,350 responses) whose frame is ~300 MB. Chunks keep
    only one chunk of Python objects alive. A column whose values are all NULL in one chunk comes
    back as ``object`` there; after concatenation, a column of strings and NULLs becomes ``str``
    again, as one read would have made it (numeric columns are typed by the caller).
    """
    chunks = list(pd.read_sql_query(sql, store.conn, params=list(params), chunksize=rows or READ_CHUNK_ROWS))
    if len(chunks) == 1:
        return chunks[0]
    if not chunks:
        return pd.read_sql_query(sql, store.conn, params=list(params))
    frame = pd.concat(chunks, ignore_index=True)
    del chunks
    for name in frame.columns:
        column = frame[name]
        if not pd.api.types.is_object_dtype(column.dtype):
            continue
        present = column.dropna()
        if len(present) and all(type(v) is str for v in present):
            frame[name] = column.astype("str")
    return frame


def _joined_select(include_prompt_text: bool) -> str:
    cols = [f"p.{c}" if c in PROMPT_SIDE else f"r.{c}" for c in RESULT_COLUMNS]
    if include_prompt_text:
        cols += [f"p.{c}" for c in _TEXTS]
    cols.append("p.design")
    return (f"SELECT {', '.join(cols)} FROM responses r LEFT JOIN prompts p "
            "ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash")


def _where(models: Sequence[str] | None, alias: str) -> tuple[str, list[Any]]:
    if not models:
        return "", []
    return f" WHERE {alias}model IN ({', '.join('?' * len(models))})", list(models)


def _take(column: pd.Series, at: np.ndarray) -> pd.Series:
    """``column``'s values at positions ``at``, typed as a read of just those rows would type them."""
    if column.dtype == object:
        return pd.Series(column.to_numpy()[at], dtype=object).infer_objects()
    values = column.take(at).reset_index(drop=True)
    return pd.Series([None] * len(at), dtype=object) if values.isna().all() else values


class ResultsReader:
    """One store, read as results tables (see the module notes); a context manager that closes the store."""

    def __init__(self, store_path: Path | str) -> None:
        self.path = store_path
        self._store = open_store(store_path, create=False)
        self._pid = os.getpid()
        self._prompts: pd.DataFrame | None = None
        self._prompt_keys: pd.MultiIndex | None = None
        self._version: object = None  # the store's data version when the prompts' side was read

    def __enter__(self) -> ResultsReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pid == os.getpid():
            self._store.close()

    @property
    def store(self) -> Store:
        """The open store; a forked worker (:mod:`counterbench.analyses.model_workers`) opens its own, since an
        SQLite connection must not be used on both sides of a fork."""
        if self._pid != os.getpid():
            self._store = open_store(self.path, create=False)
            self._pid = os.getpid()
            self._prompts = None
        return self._store

    def configs(self) -> dict[str, dict[str, Any]]:
        """Every stored generation config by fingerprint."""
        return {fp: json.loads(blob) for fp, blob in self.store.query("SELECT config_fp, config FROM configs")}

    def read(self, models: Sequence[str] | None = None, *, include_prompt_text: bool = False) -> pd.DataFrame:
        """The raw results rows of ``models`` (all when None), ordered by model, config and arrival, with
        ``design`` (the prompt's design JSON) last; SQLite errors surface as they are."""
        where, params = _where(models, "")
        own = [c for c in RESULT_COLUMNS if c not in PROMPT_SIDE]
        answers = read_in_chunks(f"SELECT {', '.join(own)} FROM responses{where} ORDER BY model, config_fp, id",
                                 self.store, params)
        prompts, keys = self._prompt_side(include_prompt_text)
        at = keys.get_indexer(pd.MultiIndex.from_arrays([answers[k].astype(object) for k in _KEY]))
        if len(at) and (at < 0).any():  # an answer without its prompt row: the join says what it gets
            where, params = _where(models, "r.")
            return read_in_chunks(f"{_joined_select(include_prompt_text)}{where} ORDER BY r.model, r.config_fp, r.id",
                                  self.store, params)
        taken = {*PROMPT_SIDE, *(_TEXTS if include_prompt_text else ()), "design"}
        columns = {name: _take(prompts[name], at) if name in taken else answers[name]
                   for name in [*RESULT_COLUMNS, *(_TEXTS if include_prompt_text else ()), "design"]}
        return pd.DataFrame(columns)

    def check_models(self, frame: pd.DataFrame, models: Sequence[str]) -> None:
        """A one-line error naming the store's models when a requested model has no row in ``frame`` (the store's
        models are listed only then: that scans every response, which reading one model at a time would pay
        once per model)."""
        if set(models) <= set(frame["model"].astype(str).unique()):
            return
        known = {m for (m,) in self.store.query("SELECT DISTINCT model FROM responses")}
        unknown = [m for m in models if m not in known]
        if unknown:
            shown = ", ".join(sorted(known)) or "none"
            raise UserError(f"no responses of model {unknown[0]} in {self.path} (models: {shown})")

    def _prompt_side(self, include_prompt_text: bool) -> tuple[pd.DataFrame, pd.MultiIndex]:
        """Every stored prompt's side of the results table (read once; again to add the texts, or when another
        connection wrote to the store since)."""
        version = self.store.query("PRAGMA data_version")[0][0]  # changes when another connection writes
        if (self._prompts is None or version != self._version
                or (include_prompt_text and _TEXTS[0] not in self._prompts.columns)):
            self._version = version
            cols = [*_KEY, *(c for c in PROMPT_SIDE if c not in _UNTYPED), *(_TEXTS if include_prompt_text else ()),
                    "design"]
            self._prompts = read_in_chunks(f"SELECT {', '.join(cols)} FROM prompts", self.store, [])
            # a column without a declared type keeps each value's own type (an int stays an int beside NULLs)
            for name in _UNTYPED:
                raw = self.store.query(f"SELECT {name} FROM prompts")
                self._prompts[name] = pd.Series(np.array([v for (v,) in raw] + [None], dtype=object)[:-1], dtype=object)
            self._prompt_keys = pd.MultiIndex.from_arrays([self._prompts[k].astype(object) for k in _KEY])
        assert self._prompt_keys is not None
        return self._prompts, self._prompt_keys


def read_error(store_path: Path | str, err: Exception) -> UserError:
    """A failed read as one line (sqlite errors surface through pandas, with the whole query in the message)."""
    reason = str(err).rsplit("': ", 1)[-1]
    if "malformed" in reason or "not a database" in reason:
        return UserError(f"store {store_path} is corrupted ({reason}); it was left untouched")
    return UserError(f"cannot read store {store_path}: {reason}")

