"""Reading the store back: the results table, exports, and re-parsing stored raw text.

:func:`load_results` is what the analyses consume: one row per response, joined with its prompt's
design columns and its generation config (and, when the store holds repeats, ``--repeats``, each answer's
``repeat``: 0 for a config recorded without one). Re-parsing (:func:`reparse_store`, ``counterbench
parse``) never calls a model: raw text is kept forever.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from counterbench.columns import REQUESTED_MAX_TOKENS
from counterbench.errors import UserError
from counterbench.run.parsing import Parsed, ResponseParser
from counterbench.run.results_reader import CONFIG_COLUMNS, ResultsReader, read_error
from counterbench.run.results_reader import RESULT_COLUMNS as RESULT_COLUMNS
from counterbench.run.sidecars import sidecars_removed_on_failure
from counterbench.run.store import Store, open_store

_PARSE_COLUMNS = (
    "status", "value", "unit", "release_value", "release_unit", "is_range", "out_of_range", "parse_reason",
)


def load_results(
    store_path: Path | str,
    models: Sequence[str] | None = None,
    profile: str | None = None,
    *,
    include_prompt_text: bool = False,
) -> pd.DataFrame:
    """One row per stored response with the prompt's design columns (see :data:`RESULT_COLUMNS`).

    ``models`` keeps only those model strings. ``profile`` (``default`` / the release profile)
    re-parses, in memory, rows that were parsed under another profile; the store is not changed
    (use :func:`reparse_store` for that). ``include_prompt_text`` adds ``system`` and ``user``.
    """
    with sidecars_removed_on_failure(store_path), ResultsReader(store_path) as reader:
        return read_results(reader, models, profile, include_prompt_text=include_prompt_text)


def read_results(reader: ResultsReader, models: Sequence[str] | None = None, profile: str | None = None, *,
                 include_prompt_text: bool = False) -> pd.DataFrame:
    """:func:`load_results` from an open :class:`ResultsReader` (which reads the prompts' side once)."""
    try:
        frame = reader.read(models, include_prompt_text=include_prompt_text)
    except UserError:
        raise
    except Exception as err:
        raise read_error(reader.path, err) from None
    if models:
        reader.check_models(frame, models)
    configs = reader.configs()
    frame = _finish_frame(frame, configs)
    if profile is not None:
        frame = reparse_frame(frame, profile)
    return frame


def _design_columns(design: pd.Series, index: pd.Index) -> pd.DataFrame:
    """The prompts' design columns (stored as JSON), one row per response, with the types they were written
    with: a column whose stored values are all integers comes back as integers (``int64``, or ``Int64``
    where some rows have no value, e.g. another study's), not as floats because a row lacks it."""
    codes, uniques = pd.factorize(design)  # few distinct designs (one per profile): parse each once
    records = [json.loads(s) for s in uniques]
    parsed = pd.DataFrame([*records, {}])
    design_frame = parsed.iloc[codes].set_axis(index)  # code -1 (no design) picks the empty last row
    for name in design_frame.columns:
        stored = [r[name] for r in records if r.get(name) is not None]
        if not stored or not all(isinstance(v, int) and not isinstance(v, bool) for v in stored):
            continue
        column = design_frame[name]
        design_frame[name] = column.astype("int64") if column.notna().all() else column.astype("Int64")
    return design_frame


def _finish_frame(frame: pd.DataFrame, configs: dict[str, dict[str, Any]]) -> pd.DataFrame:
    design = frame.pop("design")
    design_frame = _design_columns(design, frame.index)
    design_frame = design_frame[[c for c in design_frame.columns if c not in frame.columns]]
    fp_codes, fps = pd.factorize(frame["config_fp"])
    per_config = pd.DataFrame([{c: configs.get(fp, {}).get(c) for c in CONFIG_COLUMNS} for fp in fps] + [{}],
                              columns=list(CONFIG_COLUMNS))
    config_frame = per_config.iloc[fp_codes].set_axis(frame.index)
    honoured = [bool(configs.get(fp, {}).get("prompt_max_tokens")) for fp in fps]
    if any(honoured) and REQUESTED_MAX_TOKENS in design_frame.columns:
        # the limit each answer was sent with: the prompt's own where its run honoured prompts' limits
        requested = pd.to_numeric(design_frame[REQUESTED_MAX_TOKENS], errors="coerce")
        mask = pd.Series([honoured[c] if c >= 0 else False for c in fp_codes], index=frame.index) & requested.notna()
        config_frame["max_tokens"] = config_frame["max_tokens"].astype(object).where(~mask, requested.astype(object))
    repeats = [int(configs.get(fp, {}).get("repeat") or 0) for fp in fps]
    if any(repeats):  # --repeats: which repeat each answer is (a config without one is repeat 0)
        config_frame["repeat"] = np.asarray([*repeats, 0], dtype=np.int64)[fp_codes]
    frame = pd.concat([frame, config_frame, design_frame], axis=1)
    for col in ("simulated", "cached"):
        frame[col] = frame[col].fillna(0).astype(bool)
    for col in ("is_range", "out_of_range"):
        frame[col] = frame[col].astype("boolean")
    for col in ("input_tokens", "output_tokens", "attempts", "run_id"):
        frame[col] = frame[col].astype("Int64")
    for col in ("value", "release_value", "cost_usd", "latency_ms"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
    for col in ("started_at", "finished_at"):
        frame[col] = pd.to_datetime(frame[col], unit="s", utc=True)
    return frame


def reparse_frame(frame: pd.DataFrame, profile: str) -> pd.DataFrame:
    """Re-parse rows of ``frame`` not already parsed under ``profile`` (in memory)."""
    parser = ResponseParser(profile)
    todo = frame.index[(frame["status"] != "error") & (frame["parse_profile"] != profile)]
    if len(todo) == 0:
        return frame
    frame = frame.copy()
    results = [
        _cached_parse(parser, text, reason, uc, at, {})
        for text, reason, uc, at in zip(
            frame.loc[todo, "response"], frame.loc[todo, "finish_reason"], frame.loc[todo, "use_case"],
            frame.loc[todo, "answer_type"], strict=True,
        )
    ]
    parsed = pd.DataFrame(
        [(p.status, p.value, p.unit, p.release_value, p.release_unit, p.is_range, p.out_of_range, p.reason)
         for p in results],
        columns=list(_PARSE_COLUMNS),
        index=todo,
    )
    for col in _PARSE_COLUMNS:
        frame[col] = frame[col].astype(object)
        frame.loc[todo, col] = parsed[col].astype(object)
    frame["parse_profile"] = frame["parse_profile"].astype(object)
    frame.loc[todo, "parse_profile"] = profile
    for col in ("value", "release_value"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
    for col in ("is_range", "out_of_range"):
        frame[col] = frame[col].astype("boolean")
    return frame


def _cached_parse(
    parser: ResponseParser, text: Any, reason: Any, use_case: Any, answer_type: Any,
    cache: dict[tuple[Any, ...], Parsed],
) -> Parsed:
    text = text if isinstance(text, str) else None
    reason = reason if isinstance(reason, str) else None
    key = parser.key_for(use_case if isinstance(use_case, str) else None,
                         answer_type if isinstance(answer_type, str) else None)
    cache_key = (text, reason, key)
    hit = cache.get(cache_key)
    if hit is None:
        hit = cache[cache_key] = parser.parse(text, reason, key)
    return hit


def reparse_store(
    store_path: Path | str, profile: str = "default", models: Sequence[str] | None = None
) -> dict[str, int]:
    """Re-parse every stored non-error response under ``profile`` and save it; return status counts."""
    parser = ResponseParser(profile)
    with open_store(store_path, create=False) as store:
        sql = (
            "SELECT r.id, r.response, r.finish_reason, p.use_case, p.answer_type FROM responses r "
            "LEFT JOIN prompts p ON p.prompt_id = r.prompt_id AND p.prompt_hash = r.prompt_hash "
            "WHERE r.status != 'error'"
        )
        params: list[Any] = []
        if models:
            sql += f" AND r.model IN ({', '.join('?' * len(models))})"
            params.extend(models)
        rows = store.query(sql, params)
        cache: dict[tuple[Any, ...], Parsed] = {}
        updates = []
        counts: dict[str, int] = {}
        for rid, text, reason, use_case, answer_type in rows:
            p = _cached_parse(parser, text, reason, use_case, answer_type, cache)
            counts[p.status] = counts.get(p.status, 0) + 1
            updates.append((p.status, p.value, p.unit, p.release_value, p.release_unit, p.is_range, p.out_of_range,
                            p.reason, profile, rid))
        _write_updates(store, updates)
        errors = store.query("SELECT count(*) FROM responses WHERE status = 'error'")[0][0]
    if errors:
        counts["error"] = int(errors)
    return counts


def _write_updates(store: Store, updates: list[tuple[Any, ...]]) -> None:
    store.execute_write(
        "UPDATE responses SET status = ?, value = ?, unit = ?, release_value = ?, release_unit = ?, "
        "is_range = ?, out_of_range = ?, parse_reason = ?, parse_profile = ? WHERE id = ?",
        updates,
    )


def export_results(
    store_path: Path | str,
    out: Path | str,
    *,
    models: Sequence[str] | None = None,
    profile: str | None = None,
    include_prompt_text: bool = False,
) -> tuple[Path, int]:
    """Write :func:`load_results` to ``.parquet``/``.csv``/``.jsonl`` atomically; return (path, rows)."""
    from counterbench.table_files import TABLE_FORMATS, write_table

    target = Path(out)
    if target.suffix.lower() not in TABLE_FORMATS:
        raise UserError(f"cannot write {target}: use a file ending in {', '.join(TABLE_FORMATS)}")
    frame = load_results(store_path, models, profile, include_prompt_text=include_prompt_text)
    frame.insert(list(frame.columns).index("model") + 1, "model_spec", _model_specs(store_path, frame))
    if target.suffix.lower() != ".parquet":
        for col in ("started_at", "finished_at"):
            frame[col] = frame[col].map(lambda t: t.isoformat() if pd.notna(t) else None)
    if target.suffix.lower() == ".csv":
        return write_table(spreadsheet_safe(frame), target, quote_text=True), len(frame)
    return write_table(frame, target), len(frame)


#: a cell starting with one of these is a formula to a spreadsheet (or hides one behind a tab or return)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells that a spreadsheet would run as a formula, prefixed with ``'`` (shown as text).

    Only for CSV files: the store, Parquet and JSONL keep the text as received.
    """
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if not (pd.api.types.is_object_dtype(column.dtype) or pd.api.types.is_string_dtype(column.dtype)):
            continue
        risky = column.map(lambda v: isinstance(v, str) and v.startswith(FORMULA_STARTS)).astype(bool)
        if risky.any():
            out[name] = column.astype(object).where(~risky, "'" + column[risky].astype(str))
    return out


def _model_specs(store_path: Path | str, frame: pd.DataFrame) -> pd.Series:
    """The model string behind each row's label, as its run recorded it (the label itself when none was)."""
    with open_store(store_path, create=False) as store:
        runs = store.query("SELECT run_id, config FROM runs")
    specs: dict[tuple[int, str], str] = {}
    for run_id, blob in runs:
        try:
            recorded = json.loads(blob or "{}").get("model_specs") or {}
        except (ValueError, AttributeError):
            continue
        if isinstance(recorded, dict):
            specs.update({(int(run_id), str(m)): str(s) for m, s in recorded.items()})
    keys = zip(frame["run_id"].astype("Int64").fillna(-1).astype(int), frame["model"].astype(str), strict=True)
    return pd.Series([specs.get(k, k[1]) for k in keys], index=frame.index, dtype=object)
