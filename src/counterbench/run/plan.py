"""From a prompt table and a store to the work still to do, per model.

Resuming is planning: a prompt whose response for (model, generation config) is already stored
is skipped; a row without a finished answer (``error``, ``truncated``, ``filtered``, ``empty``) is
re-sent only with ``retry_errors`` (a ``truncated`` one with a larger token limit when the user
gives ``retry_max_tokens``); a prompt whose exact request
(model + system + user + config) was already answered under another prompt id is copied from the
store (unless ``no_cache``); prompts with identical requests in the same run are sent once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from counterbench.columns import REQUESTED_MAX_TOKENS
from counterbench.errors import UserError
from counterbench.models.base import RETRYABLE_STATUSES, GenerationConfig
from counterbench.run.costs import estimate_input_tokens
from counterbench.run.store import (
    PROMPT_COLUMNS,
    Store,
    prompt_hash,
    request_fingerprint,
)

REQUIRED = ("prompt_id", "system", "user")
#: the optional prompt-table column with a prompt's own output-token limit (see ``GenerationConfig.prompt_max_tokens``)
_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


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
    #: the prompt's ``requested_max_tokens`` (``None``: none), sent when the config's ``prompt_max_tokens`` is on
    max_tokens: int | None = None
    #: ``--repeats``: which repeat of the prompt this is (0: the run's own request), and for a later repeat its
    #: generation config and that config's fingerprint (``None``: the run's)
    repeat: int = 0
    config: GenerationConfig | None = None
    config_fp: str | None = None

    def key(self) -> str:
        """The item's key among a model's work: its prompt id, with the repeat's index after a later repeat."""
        return self.prompt_id if not self.repeat else f"{self.prompt_id}\x00{self.repeat}"


#: a request group: prompts that share one request (the first is sent, the others copy its answer),
#: each with its request fingerprint
Group = list[tuple[PromptItem, str]]


@dataclass(slots=True)
class Work:
    """What to do for one model: groups of prompts that share one request, plus stored copies."""

    groups: list[Group] = field(default_factory=list)
    #: (item, request_fp, stored fields) answered from the store without a call
    from_cache: list[tuple[PromptItem, str, tuple[Any, ...]]] = field(default_factory=list)
    already_done: int = 0
    retrying_errors: int = 0
    #: stored rows without a finished answer left alone (no ``retry_errors``)
    stored_errors: int = 0
    #: keys (``PromptItem.key``) of re-sent ``truncated`` rows that go out with ``bigger_config`` (a larger token limit)
    bigger_tokens: set[str] | None = None
    bigger_config: GenerationConfig | None = None

    @property
    def n_prompts(self) -> int:
        return sum(len(g) for g in self.groups) + len(self.from_cache)

    def iter_groups(self) -> Iterator[Group]:
        return iter(self.groups)


def prompt_items(table: pd.DataFrame) -> tuple[list[PromptItem], list[tuple[Any, ...]]]:
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
    for name in ("user", "system"):
        wrong = table[name].map(lambda v: v is not None and not isinstance(v, str) and not _missing(v))
        if wrong.any():
            first = wrong[wrong].index[0]
            kind = type(table[name].loc[first]).__name__
            raise UserError(
                f"prompt {ids.loc[first]}: '{name}' must be text, got a {kind}; fix the prompt table "
                "(each prompt has one system and one user message, as strings)"
            )
    columns = [str(c) for c in table.columns]
    n = len(table)
    values = {c: column_values(table[c]) for c in columns}

    def col(name: str) -> list[Any]:
        return values.get(name) or [None] * n

    pids = [str(v) for v in col("prompt_id")]
    systems = ["" if v is None else str(v) for v in col("system")]
    users = [str(v) for v in col("user")]
    hashes = [prompt_hash(s, u) for s, u in zip(systems, users, strict=True)]
    use_cases = [_opt_str(v) for v in col("use_case")]
    answer_types = [_opt_str(v) for v in col("answer_type")]
    meta_cols = [c for c in columns if c not in ("system", "user")]
    metas = [
        {c: v for c, v in zip(meta_cols, vals, strict=True) if v is not None}
        for vals in zip(*(values[c] for c in meta_cols), strict=True)
    ]
    design_cols = [c for c in columns if c not in REQUIRED and c not in PROMPT_COLUMNS]
    encode = _JSON.encode
    designs: list[str | None] = [None] * n
    if design_cols:
        for i, vals in enumerate(zip(*(values[c] for c in design_cols), strict=True)):
            design = {c: v for c, v in zip(design_cols, vals, strict=True) if v is not None}
            designs[i] = encode(design) if design else None
    limits = _requested_limits(pids, col(REQUESTED_MAX_TOKENS))
    items = [
        PromptItem(pid, phash, system, user, uc, at, meta, estimate_input_tokens(system, user), limit)
        for pid, phash, system, user, uc, at, meta, limit in zip(
            pids, hashes, systems, users, use_cases, answer_types, metas, limits, strict=True
        )
    ]
    prompt_side = [systems if c == "system" else users if c == "user" else col(c) for c in PROMPT_COLUMNS]
    records = list(zip(pids, hashes, *prompt_side, designs, strict=True))
    return items, records


def _requested_limits(pids: list[str], values: list[Any]) -> list[int | None]:
    """The ``requested_max_tokens`` column as whole numbers of at least 1 (``None`` where empty)."""
    out: list[int | None] = []
    for pid, value in zip(pids, values, strict=True):
        if value is None:
            out.append(None)
            continue
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None and isinstance(value, str) and value.strip().isdigit():
            number = int(value)
        if number is None or not math.isfinite(number) or number != int(number) or number < 1:
            raise UserError(f"prompt {pid}: {REQUESTED_MAX_TOKENS} must be a whole number of at least 1, "
                            f"got {value!r}; fix the prompt table or drop the column")
        out.append(int(number))
    return out


def column_values(series: pd.Series) -> list[Any]:
    """A column as Python values with every kind of missing value (NaN, NA, NaT) as ``None``."""
    out = series.tolist()
    if series.hasnans or series.dtype == object:
        missing = series.isna().tolist()
        if any(missing):
            out = [None if m else v for v, m in zip(out, missing, strict=True)]
    if series.dtype == object or series.dtype.kind in "mM":
        out = [v if v is None or isinstance(v, str | int | float) else clean_value(v) for v in out]
    return out


def _missing(value: Any) -> bool:
    return (isinstance(value, float) and math.isnan(value)) or type(value).__name__ in ("NAType", "NaTType")


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
    bigger_config: GenerationConfig | None = None,
    config: GenerationConfig | None = None,
) -> Work:
    """Work left for ``model``: skip finished prompts, reuse stored identical requests, group duplicates.

    With ``config.prompt_max_tokens`` on, two prompts of the same text but different requested limits
    are different requests (never sent once, never copied from each other).
    """
    honour = config is not None and config.prompt_max_tokens
    existing = store.existing_responses(model, config_fp)
    work = Work()
    bigger: set[str] = set()
    todo: list[tuple[PromptItem, str]] = []
    changed: list[str] = []
    for item in items:
        found = existing.get(item.prompt_id)
        if found is not None:
            status, stored_hash = found
            if stored_hash != item.prompt_hash:
                changed.append(item.prompt_id)
                continue
            if status not in RETRYABLE_STATUSES:
                work.already_done += 1
                continue
            if not retry_errors:
                work.already_done += 1
                work.stored_errors += 1
                continue
            work.retrying_errors += 1
            if status == "truncated" and bigger_config is not None:
                bigger.add(item.key())
        request_key = config_fp if not honour or item.max_tokens is None else f"{config_fp}/{item.max_tokens}"
        todo.append((item, request_fingerprint(model, item.system, item.user, request_key)))
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
    if bigger:
        # a truncated prompt goes out alone with the larger limit (never grouped with a normal request)
        work.groups = [g for group in work.groups for g in _split_bigger(group, bigger)]
        work.bigger_tokens, work.bigger_config = bigger, bigger_config
    return work


def plan_repeats(
    store: Store,
    items: list[PromptItem],
    model: str,
    config: GenerationConfig,
    repeats: int,
    *,
    no_cache: bool,
    retry_errors: bool,
    bigger_config: GenerationConfig | None = None,
) -> Work:
    """:func:`plan_model` for each of ``repeats`` repeats of every prompt (``--repeats``), merged into one lane's
    work: repeat 0 under the run's config, repeat k under ``config.for_repeat(k)`` — its own fingerprint, so each
    repeat is stored, resumed and cached on its own. Repeat 0's prompts come first."""
    work = plan_model(store, items, model, config.fingerprint(), no_cache=no_cache, retry_errors=retry_errors,
                      bigger_config=bigger_config, config=config)
    for k in range(1, repeats):
        own = config.for_repeat(k)
        fp = own.fingerprint()
        copies = [PromptItem(i.prompt_id, i.prompt_hash, i.system, i.user, i.use_case, i.answer_type, i.metadata,
                             i.est_input_tokens, i.max_tokens, k, own, fp) for i in items]
        more = plan_model(store, copies, model, fp, no_cache=no_cache, retry_errors=retry_errors,
                          bigger_config=bigger_config, config=own)
        work.groups.extend(more.groups)
        work.from_cache.extend(more.from_cache)
        work.already_done += more.already_done
        work.retrying_errors += more.retrying_errors
        work.stored_errors += more.stored_errors
        if more.bigger_tokens:
            work.bigger_tokens = (work.bigger_tokens or set()) | more.bigger_tokens
            work.bigger_config = more.bigger_config
    return work


def _split_bigger(group: list[tuple[PromptItem, str]], bigger: set[str]) -> list[list[tuple[PromptItem, str]]]:
    if not any(item.key() in bigger for item, _ in group):
        return [group]
    rest = [pair for pair in group if pair[0].key() not in bigger]
    return [[pair] for pair in group if pair[0].key() in bigger] + ([rest] if rest else [])


def clean_value(value: Any) -> Any:
    """Make a pandas/numpy cell storable: NaN -> None, numpy scalars -> Python."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes):
        try:
            value = item()
        except (TypeError, ValueError):
            return str(value)
        if isinstance(value, float) and math.isnan(value):
            return None
    return value

