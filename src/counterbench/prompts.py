"""The prompt table: expand a study, subset it without breaking the counterfactual design, save it.

Subsetting keeps whole slots. A slot is every prompt that shares the study's slot columns (for
a declarative study: variant × use case × language × axis × profile × question variant) and differs only in
the identifier, so matched pairs survive any filter. ``sample_slots`` draws whole slots with a
seeded generator; presets are named filter sets declared in the study's data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from counterbench.columns import BASE_COLUMNS, STUDY_VALUES
from counterbench.errors import UserError
from counterbench.registry import Registry
from counterbench.studies.base import Study
from counterbench.studies.hooks import hook
from counterbench.studies.registry import load_study
from counterbench.table_files import TABLE_FORMATS, read_csv_file, read_jsonl_records

REQUIRED_PROMPT_COLUMNS = ("prompt_id", "system", "user")
#: the largest prompt table read from a CSV file (bytes; a 2,000,000-prompt table is some 1 GB)
MAX_TABLE_BYTES = 4 * 1024 ** 3


@dataclass(frozen=True)
class PromptFilters:
    """Filters on the prompt table. ``None`` means "all"; list values are alternatives (OR)."""

    use_case: Sequence[str] | None = None
    language: Sequence[str] | None = None
    axis: Sequence[str] | None = None
    identifier: Sequence[str] | None = None
    profile: Sequence[str] | None = None
    question_variant: Sequence[int] | None = None
    variant: Sequence[str] | None = None
    sample_slots: int | None = None
    seed: int = 0
    preset: str | None = None


#: filter field -> prompt-table column
FILTER_COLUMNS: dict[str, str] = {
    "use_case": "use_case",
    "language": "language",
    "axis": "axis",
    "identifier": "identifier",
    "profile": "profile_id",
    "question_variant": "question_variant",
    "variant": "variant",
}


#: study name -> reads that study's published release dataset files into its prompt table
#: (``--from-release DIR``); a study registers one through the entry-point group ``counterbench.release_readers``
RELEASE_READERS: Registry[Callable[[Study, Path, list[str]], pd.DataFrame]] = Registry(
    "release reader", "counterbench.release_readers")


def prompts(study: str | Path | Study | None = None, **filters: Any) -> pd.DataFrame:
    """Python API: ``counterbench.prompts("examples/loan_rate.yaml", language=["en"])``.

    ``study``: a registered name, a study .yaml, or a study object (e.g. a Python study)."""
    known = {f.name for f in fields(PromptFilters)}
    unknown = sorted(set(filters) - known - {"from_release"})
    if unknown:
        raise UserError(f"unknown filter '{unknown[0]}' (known: {', '.join(sorted(known))})")
    from_release = filters.pop("from_release", None)
    normalised: dict[str, Any] = {
        k: ([v] if isinstance(v, str | int) and k in FILTER_COLUMNS else v) for k, v in filters.items()
    }
    return build_prompts(load_study(study), PromptFilters(**normalised), from_release=from_release)


def build_prompts(
    study: str | Path | Study, filters: PromptFilters | None = None, *, from_release: Path | str | None = None
) -> pd.DataFrame:
    """Expand ``study`` (a registered name, a YAML path or a study object) and apply ``filters``."""
    filters = filters or PromptFilters()
    the_study = load_study(study)
    filters = apply_preset(the_study, filters)
    variants = list(filters.variant) if filters.variant else ["standard"]
    allowed = tuple(hook(the_study, "variants"))  # a study may declare its own prompt variants
    for v in variants:
        if v not in allowed:
            raise UserError(f"unknown variant '{v}' (one of: {', '.join(allowed)})")
    if from_release is not None:
        if the_study.name not in RELEASE_READERS:
            raise UserError(f"study {the_study.name} has no reader for a published release's dataset files "
                            "(--from-release)")
        table = RELEASE_READERS.get(the_study.name)(the_study, Path(from_release), variants)
    else:
        table = the_study.expand(variants)
    return apply_filters(table, filters, the_study)


def apply_preset(study: Study, filters: PromptFilters) -> PromptFilters:
    """Merge a named preset's filters under the explicitly given ones (explicit wins)."""
    if filters.preset is None:
        return filters
    if filters.preset not in study.presets:
        names = ", ".join(study.presets) or "none"
        raise UserError(f"unknown preset '{filters.preset}' for study {study.name} (presets: {names})")
    spec = dict(study.presets[filters.preset].get("filters", {}))
    updates: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "profile" and isinstance(value, Mapping):
            continue  # per-use-case profiles are applied in apply_filters
        if key not in FILTER_COLUMNS:
            raise UserError(f"preset {filters.preset}: unknown filter '{key}'")
        if getattr(filters, key) is None:
            updates[key] = list(value)
    return replace(filters, **updates)


def apply_filters(table: pd.DataFrame, filters: PromptFilters, study: Study) -> pd.DataFrame:
    """Keep the rows matching every filter; check each value exists so typos are caught."""
    mask = np.ones(len(table), dtype=bool)
    for key, column in FILTER_COLUMNS.items():
        wanted = getattr(filters, key)
        if wanted is None or key == "variant":
            continue
        if key == "use_case":
            wanted = [study.canonical_use_case(str(w)) for w in wanted]
        _check_values(table, column, wanted, key)
        mask &= table[column].isin(list(wanted)).to_numpy()
    if filters.preset is not None:
        per_uc = study.presets[filters.preset].get("filters", {}).get("profile")
        if isinstance(per_uc, Mapping) and filters.profile is None:
            keep = np.zeros(len(table), dtype=bool)
            for uc, ids in per_uc.items():
                keep |= ((table["use_case"] == uc) & table["profile_id"].isin(list(ids))).to_numpy()
            mask &= keep
    out = table.loc[mask]
    _check_axes_still_comparable(out, study)
    if filters.sample_slots is not None:
        out = sample_slots(out, filters.sample_slots, filters.seed, list(study.slot_columns))
    if out.empty:
        raise UserError("the filters leave no prompts; loosen them (see `counterbench prompts --help`)")
    out = out.reset_index(drop=True)
    out.attrs[STUDY_VALUES] = study_values(table)
    return out


#: a column with more distinct values than this is no attribute of who a prompt is about (its values not kept)
MAX_STUDY_VALUES = 1000


def study_values(table: pd.DataFrame) -> dict[str, list[str]]:
    """Column -> its values as text, for every column of ``table`` but the prompt's id and texts and those with
    more than :data:`MAX_STUDY_VALUES` values (kept in a filtered table's ``attrs``: what the whole study has)."""
    out: dict[str, list[str]] = {}
    for column in table.columns:
        if column in ("prompt_id", "system", "user"):
            continue
        values = pd.unique(table[column].dropna())
        if len(values) <= MAX_STUDY_VALUES:
            out[str(column)] = sorted({_text(v) for v in values})
    return out


def _text(value: Any) -> str:
    """A column's value as text (a whole float as an integer: ``1.0`` -> ``1``)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _check_values(table: pd.DataFrame, column: str, wanted: Sequence[Any], key: str) -> None:
    available = pd.unique(table[column])
    if column == "question_variant":
        wanted = [int(w) for w in wanted]
    known = set(available.tolist())
    missing = [w for w in wanted if w not in known]
    if missing:
        shown = ", ".join(str(v) for v in available[:12]) + (" ..." if len(available) > 12 else "")
        raise UserError(f"unknown {key.replace('_', '-')} '{missing[0]}' (available: {shown})")


def _check_axes_still_comparable(table: pd.DataFrame, study: Study) -> None:
    counts = table.groupby("axis", sort=False)[study.counterfactual_column].nunique()
    lonely = counts[counts < 2]
    if len(lonely):
        axis = lonely.index[0]
        raise UserError(
            f"the filters keep only one identifier of axis {axis}; keep at least two so pairs can be compared"
        )


def sample_slots(table: pd.DataFrame, n: int, seed: int, slot_columns: list[str]) -> pd.DataFrame:
    """Keep ``n`` whole slots drawn without replacement by a generator seeded with ``seed``."""
    if n < 1:
        raise UserError(f"--sample-slots must be at least 1, got {n}")
    keys = table[slot_columns].drop_duplicates().sort_values(slot_columns).reset_index(drop=True)
    if n >= len(keys):
        return table
    chosen = np.sort(np.random.default_rng(seed).choice(len(keys), size=n, replace=False))
    picked = keys.iloc[chosen]
    merged = table.reset_index().merge(picked, on=slot_columns, how="inner")
    return table.loc[np.sort(merged["index"].to_numpy())]


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Rows per use case × language, like the paper's Table 1."""
    grouped = table.groupby(["variant", "use_case", "language"], sort=False)
    summary = grouped.agg(
        identifiers=("identifier", "nunique"),
        axes=("axis", "nunique"),
        profiles=("profile_id", "nunique"),
        question_variants=("question_variant", "nunique"),
        prompts=("prompt_id", "size"),
    ).reset_index()
    return summary


def read_prompt_table(path: Path | str) -> pd.DataFrame:
    """Read a prompt table written by :func:`write_table` (or by hand) and check its columns."""
    src = Path(path)
    suffix = src.suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise UserError(f"cannot read {src}: use a .parquet, .csv or .jsonl prompt file")
    if not src.is_file():
        raise UserError(f"prompt file not found: {src}")
    if suffix == ".csv":
        table = read_csv_file(src, f"prompt file {src}", as_text=False, max_bytes=MAX_TABLE_BYTES)
    elif suffix == ".jsonl":
        table = pd.DataFrame.from_records([rec for _, rec in read_jsonl_records(src, f"prompt file {src}")])
    else:
        try:
            table = pd.read_parquet(src)
        except Exception as err:  # any parser failure is a problem of the user's file
            first_line = f"{type(err).__name__}: {err}".splitlines()[0]
            raise UserError(f"cannot read prompt file {src}: {first_line}") from None
    missing = [c for c in REQUIRED_PROMPT_COLUMNS if c not in table.columns]
    if missing:
        raise UserError(f"prompt file {src} lacks column(s) {', '.join(missing)}")
    if table["prompt_id"].duplicated().any():
        dup = table.loc[table["prompt_id"].duplicated(), "prompt_id"].iloc[0]
        raise UserError(f"prompt file {src}: duplicate prompt_id '{dup}'")
    for column in BASE_COLUMNS:
        if column not in table.columns:
            table[column] = None
    return table
