"""A small, representative, deterministic sample of raw responses for the report.

Per model: a few answers with a value (spread over use cases and languages), and one of each other
outcome (refused, unparseable, error) when there are any. Rows are picked by a stable hash of the
prompt id (never Python's ``hash()``), so the same store always gives the same sample. Text is cut
to ``max_chars``; it is escaped later by the renderers, never interpreted.
"""

from __future__ import annotations

import hashlib

import pandas as pd

from counterbench.outcomes import get_kind, kind_of_answer_type
from counterbench.outcomes.choice import option_column

SAMPLE_COLUMNS = ("model", "prompt_id", "use_case", "language", "axis", "identifier", "status", "value", "unit",
                  "parse_reason", "response", "stands_for", "answer_read")
DEFAULT_PER_STATUS = {"ok": 4, "refused": 1, "unparseable": 1, "error": 1}


def _stable_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chosen_option_meaning(results: pd.DataFrame) -> pd.Series:
    """What a choice answer's option stands for: the prompt's ``option_<LABEL>`` value (a level, a
    person) for the option read (``unit`` holds its label); missing for every other answer."""
    meaning = pd.Series(pd.NA, index=results.index, dtype=object)
    if "unit" not in results.columns:
        return meaning
    units = results["unit"]
    for label in units.dropna().astype(str).unique():
        column = option_column(label)
        if column in results.columns:
            rows = units.astype(str).eq(label) & results[column].notna()
            meaning[rows] = results.loc[rows, column].astype(str)
    return meaning


def answer_read(results: pd.DataFrame) -> pd.Series:
    """The answer read, in words, where the kind stores it as the ``unit`` (a label: ``no``, not its index
    ``1``); missing for every other answer (its value and unit say it)."""
    read = pd.Series(pd.NA, index=results.index, dtype=object)
    if "answer_type" not in results.columns or "unit" not in results.columns:
        return read
    for answer_type in results["answer_type"].dropna().astype(str).unique():
        kind = kind_of_answer_type(answer_type)
        if kind is None or not getattr(get_kind(kind), "unit_is_answer", False):
            continue
        rows = results["answer_type"].astype(str).eq(answer_type) & results["unit"].notna()
        read[rows] = results.loc[rows, "unit"].astype(str)
    return read


def select_samples(
    results: pd.DataFrame,
    *,
    per_status: dict[str, int] | None = None,
    max_chars: int = 400,
    max_models: int = 12,
) -> pd.DataFrame:
    """Pick a few responses per model and outcome from a results table (see ``load_results``)."""
    per_status = per_status or DEFAULT_PER_STATUS
    if results.empty or "model" not in results.columns:
        return pd.DataFrame(columns=list(SAMPLE_COLUMNS))
    frame = results[[c for c in SAMPLE_COLUMNS if c in results.columns]].copy()
    frame["_pos"] = range(len(frame))  # the row of ``results``, for what a picked choice stands for
    if "response" not in frame.columns:
        return pd.DataFrame(columns=list(SAMPLE_COLUMNS))
    if "error" in results.columns:
        is_error = frame["status"] == "error"
        frame.loc[is_error, "response"] = frame.loc[is_error, "response"].fillna(results.loc[is_error, "error"])
    frame["response"] = frame["response"].fillna("").astype(str)
    frame["_key"] = [_stable_key(f"{m}|{p}") for m, p in zip(frame["model"], frame.get("prompt_id", frame.index),
                                                                strict=True)]
    picked = []
    for model in sorted(set(frame["model"].astype(str)))[:max_models]:
        mine = frame[frame["model"].astype(str) == model]
        for status, n in per_status.items():
            part = mine[mine["status"] == status].sort_values("_key")
            if part.empty or n <= 0:
                continue
            if status == "ok" and "use_case" in part.columns:
                # one per use case (and language) first, so the sample shows the variety of tasks
                part = part.assign(_rank=part.groupby(["use_case", "language"], sort=False).cumcount())
                part = part.sort_values(["_rank", "_key"])
            picked.append(part.head(n))
    if not picked:
        return pd.DataFrame(columns=list(SAMPLE_COLUMNS))
    out = pd.concat(picked, ignore_index=True)
    picked_rows = results.iloc[out["_pos"].to_numpy()]
    out["stands_for"] = chosen_option_meaning(picked_rows).to_numpy()
    out["answer_read"] = answer_read(picked_rows).to_numpy()
    out["response"] = [s if len(s) <= max_chars else s[: max_chars - 1] + "…" for s in out["response"]]
    return out.drop(columns=[c for c in ("_key", "_rank", "_pos") if c in out.columns])
