"""From a prompt table and a store to the work still to do, per model.

Resuming is planning: a prompt whose response for (model, generation config) is already stored
is skipped; an ``error`` row is re-sent only with ``retry_errors``; a prompt whose exact request
(model + system + user + config) was already answered under another prompt id is copied from the
store (unless ``no_cache``); prompts with identical requests in the same run are sent once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from counterbench.errors import UserError
from counterbench.run.costs import estimate_input_tokens
from counterbench.run.store import PROMPT_COLUMNS, Store, clean_value, prompt_hash, request_fingerprint

REQUIRED = ("prompt_id", "system", "user")


@dataclass(slots=True)
class PromptItem:
    """One prompt as the engine needs it."""

    prompt_id: str
    prompt_hash: str
    system: str
    user: str
    use_case: str | None
    answer_type: str | None
    metadata: dict[str, Any]
    est_input_tokens: int


@dataclass(slots=True)
class Work:
    """What to do for one model: groups of prompts that share one request, plus stored copies."""

    groups: list[list[tuple[PromptItem, str]]] = field(default_factory=list)
    #: (item, request_fp, stored fields) answered from the store without a call
    from_cache: list[tuple[PromptItem, str, tuple[Any, ...]]] = field(default_factory=list)
    already_done: int = 0
    retrying_errors: int = 0

    @property
    def n_prompts(self) -> int:
        return sum(len(g) for g in self.groups) + len(self.from_cache)

    def iter_groups(self) -> Iterator[list[tuple[PromptItem, str]]]:
        return iter(self.groups)


def prompt_items(table: pd.DataFrame) -> tuple[list[PromptItem], list[dict[str, Any]]]:
    """Validate ``table`` and return engine items plus rows for the store's ``prompts`` table."""
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise UserError(f"the prompt table lacks column(s) {', '.join(missing)}")
    if table.empty:
        raise UserError("the prompt table is empty")
    ids = table["prompt_id"].astype(str)
    if ids.duplicated().any():
        raise UserError(f"the prompt table repeats prompt_id '{ids[ids.duplicated()].iloc[0]}'")
    if table["user"].isna().any():
        bad = ids[table["user"].isna()].iloc[0]
        raise UserError(f"prompt {bad} has no user text")
    design_cols = [c for c in table.columns if c not in REQUIRED and c not in PROMPT_COLUMNS]
    items: list[PromptItem] = []
    records: list[dict[str, Any]] = []
    columns = list(table.columns)
    for raw in table.itertuples(index=False, name=None):
        row = {col: clean_value(val) for col, val in zip(columns, raw, strict=True)}
        pid = str(row["prompt_id"])
        system = "" if row.get("system") is None else str(row["system"])
        user = str(row["user"])
        phash = prompt_hash(system, user)
        meta = {k: v for k, v in row.items() if k not in ("system", "user") and v is not None}
        items.append(
            PromptItem(
                prompt_id=pid,
                prompt_hash=phash,
                system=system,
                user=user,
                use_case=_opt_str(row.get("use_case")),
                answer_type=_opt_str(row.get("answer_type")),
                metadata=meta,
                est_input_tokens=estimate_input_tokens(system, user),
            )
        )
        record = {c: row.get(c) for c in PROMPT_COLUMNS}
        record.update(prompt_id=pid, prompt_hash=phash, system=system, user=user)
        design = {c: row[c] for c in design_cols if row.get(c) is not None}
        record["design"] = json.dumps(design, default=str, ensure_ascii=False) if design else None
        records.append(record)
    return items, records


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def plan_model(
    store: Store,
    items: list[PromptItem],
    model: str,
    config_fp: str,
    *,
    no_cache: bool,
    retry_errors: bool,
) -> Work:
    """Work left for ``model``: skip finished prompts, reuse stored identical requests, group duplicates."""
    existing = store.existing_responses(model, config_fp)
    work = Work()
    todo: list[tuple[PromptItem, str]] = []
    changed: list[str] = []
    for item in items:
        found = existing.get(item.prompt_id)
        if found is not None:
            status, stored_hash = found
            if stored_hash != item.prompt_hash:
                changed.append(item.prompt_id)
                continue
            if status != "error":
                work.already_done += 1
                continue
            if not retry_errors:
                work.already_done += 1
                continue
            work.retrying_errors += 1
        todo.append((item, request_fingerprint(model, item.system, item.user, config_fp)))
    if changed:
        raise UserError(
            f"the store holds {model} answers to {len(changed)} prompt(s) whose text has changed since "
            f"(e.g. {changed[0]}); use another --store for the new prompt text"
        )
    stored = {} if no_cache else store.finished_by_request(model, (fp for _, fp in todo))
    by_fp: dict[str, list[tuple[PromptItem, str]]] = {}
    for item, fp in todo:
        if fp in stored:
            work.from_cache.append((item, fp, stored[fp]))
        elif no_cache:
            work.groups.append([(item, fp)])
        else:
            by_fp.setdefault(fp, []).append((item, fp))
    if not no_cache:
        work.groups.extend(by_fp.values())
    return work
