"""Prompt variants of the hiring study (paper "Small Changes, Big Impact" App. F), selectable with ``--variant``.

A variant (``prompt_variants.yaml``, or a user file of the same form) is a list of text edits of the
rendered prompts: in every prompt of a setting (``compare``, ``score``, ``recover``), one field's
(``system`` / ``user``) text ``old`` becomes ``new``. :func:`apply_variant` turns the standard prompt
table into the variant's: only the prompts of the settings it edits, each with ``variant`` set to the
variant's name and its own ``prompt_id`` (``<standard id>~<variant>``). An edit that does not match a
prompt it applies to is a UserError (the prompt texts were changed, e.g. a user ``prompts.yaml``), so a
variant never silently equals the standard prompts.

:func:`split_variants` gives the analysis the rows of one variant for the main tables (``standard``
when it was run, else the first variant found) and says which.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from counterbench.builtin.hiring.prompting import USE_CASES
from counterbench.errors import UserError, check_keys
from counterbench.yaml_files import read_yaml_file

STANDARD = "standard"
VARIANTS_FILE = Path(__file__).with_name("prompt_variants.yaml")
FIELDS = ("system", "user")
EDIT_KEYS = ("setting", "field", "old", "new")


@dataclass(frozen=True)
class Edit:
    setting: str
    field: str
    old: str
    new: str


@dataclass(frozen=True)
class PromptVariant:
    name: str
    description: str
    edits: tuple[Edit, ...]


@lru_cache(maxsize=4)
def load_variants(path: str | None = None) -> dict[str, PromptVariant]:
    """The prompt variants by name (the built-in file, or ``path`` in the same form)."""
    p = Path(path) if path is not None else VARIANTS_FILE
    data = read_yaml_file(p, f"prompt variants {p}")
    raw = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"prompt variants {p.name}: expected a mapping 'variants:' of named variants")
    _unknown_key(data, ("variants",), f"prompt variants {p.name}")
    out: dict[str, PromptVariant] = {}
    settings = sorted({s for s, _ in USE_CASES.values()})
    for name, spec in raw.items():
        where = f"prompt variants {p.name}, variant '{name}'"
        if str(name) == STANDARD or not isinstance(spec, dict) or not isinstance(spec.get("edits"), list):
            raise UserError(f"{where}: needs a list 'edits' (and cannot be called {STANDARD})")
        _unknown_key(spec, ("description", "edits"), where)
        edits = []
        for i, edit in enumerate(spec["edits"], start=1):
            if isinstance(edit, dict):
                _unknown_key(edit, EDIT_KEYS, f"{where}, edit {i}")
            if not isinstance(edit, dict) or edit.get("setting") not in settings or edit.get("field") not in FIELDS \
                    or not isinstance(edit.get("old"), str) or not edit["old"] or not isinstance(edit.get("new"), str):
                raise UserError(f"{where}, edit {i}: needs setting ({', '.join(settings)}), field (system or user), "
                                "a non-empty old text and a new text")
            edits.append(Edit(edit["setting"], edit["field"], edit["old"], edit["new"]))
        out[str(name)] = PromptVariant(str(name), str(spec.get("description", "")), tuple(edits))
    return out


def _unknown_key(spec: Mapping[object, object], allowed: tuple[str, ...], where: str) -> None:
    check_keys(spec, allowed, where)


def _placeholders(text: str) -> set[str] | None:
    """The ``{name}`` placeholders of a prompt text, or ``None`` when its braces do not parse."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:
        return None


def check_variants(variants: Mapping[str, PromptVariant], texts: Mapping[str, Mapping[str, str]],
                   where: str) -> None:
    """Refuse, in one line, a variant whose edit cannot apply to the study's prompt texts ``texts``
    (:func:`.prompting.prompt_texts`): its old text is in no form of the prompt (the user text alone and
    with each answer-format line), or the edit removes, breaks or adds a ``{placeholder}``."""
    for variant in variants.values():
        for i, edit in enumerate(variant.edits, start=1):
            part = texts[edit.setting]
            forms = [part[edit.field]]
            if edit.field == "user" and "rationale" in part:
                forms = [part["user"] + "\n\n" + part[tail] for tail in ("no_rationale", "rationale")]
            at = f"{where}, variant '{variant.name}', edit {i}"
            if not any(edit.old in form for form in forms):
                raise UserError(f"{at}: the {edit.setting} prompts' {edit.field} text does not contain "
                                f"'{edit.old.strip()}'")
            for form in forms:
                before, after = _placeholders(form), _placeholders(form.replace(edit.old, edit.new))
                if after is None or (before is not None and after != before):
                    lost = sorted((before or set()) - (after or set()))
                    added = sorted((after or set()) - (before or set()))
                    what = f"removes the placeholder {{{lost[0]}}}" if lost else \
                        f"adds the placeholder {{{added[0]}}}" if added else "breaks a placeholder's braces"
                    raise UserError(f"{at}: {what} of the {edit.setting} prompts' {edit.field} text (a variant edits "
                                    "the wording; the job and resumes stay where they are)")


def variant_names(path: str | None = None) -> tuple[str, ...]:
    """``standard`` and every prompt variant's name."""
    return (STANDARD, *load_variants(path))


def apply_variant(table: pd.DataFrame, variant: PromptVariant) -> pd.DataFrame:
    """The standard prompt ``table`` rewritten by ``variant`` (only the settings its edits touch)."""
    setting = table["use_case"].map(lambda u: USE_CASES.get(str(u), ("", False))[0])
    touched = {e.setting for e in variant.edits}
    out = table[setting.isin(touched)].copy()
    out_setting = setting[setting.isin(touched)]
    for edit in variant.edits:
        rows = out_setting.eq(edit.setting)
        texts = out.loc[rows, edit.field].astype(str)
        missing = ~texts.str.contains(edit.old, regex=False)
        if missing.any():
            raise UserError(f"prompt variant {variant.name}: the {edit.setting} prompts' {edit.field} text does not "
                            f"contain '{edit.old.strip()}' (prompt {out.loc[rows].loc[missing, 'prompt_id'].iloc[0]})")
        out.loc[rows, edit.field] = texts.str.replace(edit.old, edit.new, regex=False)
    out["variant"] = variant.name
    out["prompt_id"] = out["prompt_id"].astype(str) + "~" + variant.name
    return out


def expand_variants(standard: pd.DataFrame, variants: list[str], path: str | None = None) -> pd.DataFrame:
    """The prompt table of ``variants`` (``standard`` and/or named variants), built from the standard table."""
    known = load_variants(path)
    unknown = [v for v in variants if v != STANDARD and v not in known]
    if unknown:
        raise UserError(f"the hiring study has no prompt variant '{unknown[0]}' (one of: "
                        f"{', '.join(variant_names(path))})")
    parts = [standard if v == STANDARD else apply_variant(standard, known[v]) for v in dict.fromkeys(variants)]
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def system_text(system: str, setting: str, variant: str, path: str | None = None) -> str:
    """The system prompt of ``setting`` under ``variant``."""
    if variant == STANDARD or variant not in load_variants(path):
        return system
    for edit in load_variants(path)[variant].edits:
        if edit.setting == setting and edit.field == "system":
            system = system.replace(edit.old, edit.new)
    return system


def split_variants(results: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows of the main variant (``standard`` when present, else the first) and its name."""
    if "variant" not in results.columns or results.empty:
        return results, STANDARD
    present = list(dict.fromkeys(results["variant"].astype(str)))
    main = STANDARD if STANDARD in present else present[0]
    return (results if present == [main] else results[results["variant"].astype(str).eq(main)]), main


def variant_descriptions(path: str | None = None) -> Mapping[str, str]:
    return {name: v.description for name, v in load_variants(path).items()}


def variant_summary(comparisons: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Disparity and deviation per model × setting × prompt variant (rationale) × prompt variant (``--variant``),
    and their change from ``standard`` (empty unless two variants or more were answered)."""
    from counterbench.builtin.hiring.metrics import bias_summary, comparison_win_rates, top_score_rates

    present = [frame for frame in (comparisons, scores) if not frame.empty and "variant" in frame.columns]
    names = list(dict.fromkeys(pd.concat([f["variant"].astype(str) for f in present]))) if present else []
    if len(names) < 2:
        return pd.DataFrame()
    parts = []
    for name in names:
        comp = comparisons[comparisons["variant"].astype(str).eq(name)] if not comparisons.empty else comparisons
        if "condition" in comp.columns:
            comp = comp[comp["condition"].eq("all")]
        sc = scores[scores["variant"].astype(str).eq(name)] if not scores.empty else scores
        wr = comparison_win_rates(comp).groupby(["model", "rationale", "group"], sort=False)["win_rate"].mean() \
            .reset_index() if not comp.empty else pd.DataFrame(columns=["model", "rationale", "group", "win_rate"])
        tsr = top_score_rates(sc) if not sc.empty else pd.DataFrame(columns=["model", "rationale", "group", "tsr"])
        parts.append(bias_summary(wr, tsr).assign(variant=name))
    table = pd.concat(parts, ignore_index=True)
    base = table[table["variant"].eq(STANDARD)].set_index(["model", "setting", "rationale"])
    keys = pd.MultiIndex.from_frame(table[["model", "setting", "rationale"]])
    for metric in ("disparity", "deviation"):
        reference = base[metric].reindex(keys).to_numpy() if not base.empty else float("nan")
        table[f"{metric}_change"] = table[metric].to_numpy() - reference
    return table[["model", "setting", "rationale", "variant", "n_groups", "mean", "disparity", "disparity_change",
                  "deviation", "deviation_change"]]
