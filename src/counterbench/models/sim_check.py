"""A simulation file's effects checked against the prompts of a run, before the first request.

A ``sim:FILE.yaml`` whose rule names a column no prompt has (``grup:`` for ``group:``), or an
identifier or group no prompt has, would run, plant nothing, and still state its planted bias in the
report's banner. :func:`check_prompts` refuses it with one line naming the rule and the nearest valid
name (a :class:`~counterbench.errors.UserError`: exit code 2) — unless the whole study has that value and
the run's filters or ``--sample-slots`` left it out (the filtered table's ``attrs``
:data:`~counterbench.columns.STUDY_VALUES`; the report then says whether the model planted anything in the
run). Only what the file itself gives is checked
(presets are written for many studies and runs). Values of other columns (use case, language, a design
column) may be absent because the run filtered them away, so they are refused only when they look like a
misspelling of a value that is there. A use case the file names (``use_cases``,
``identifier_effects_by_use_case``) that no prompt has is refused when it is that close to one that is
(:data:`USE_CASE_CUTOFF`: ``aproval`` for ``approval``, never two real, distinct names), and a use case
whose outcome kind draws its answer from a probability (``sim_probability``: ``label``, ``choice``) must
give a ``default`` in [0, 1]. After a run, :func:`planted_reach` says whether a model's effects reached its prompts.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from counterbench.columns import IDENTITY_COLUMNS, STUDY_VALUES
from counterbench.errors import UserError, nearest
from counterbench.models.sim_effects import _meta_text
from counterbench.models.sim_profile import SimProfile, load_profile, with_effects

__all__ = ["check_prompts", "planted_reach"]

#: how close an absent value of another column must be to a present one to be taken for a misspelling
MISSPELLING_CUTOFF = 0.8
#: how close a use case the file names must be to one of the run's to be taken for its misspelling
USE_CASE_CUTOFF = 0.9


def _values(table: pd.DataFrame, column: str) -> list[str]:
    return sorted({_meta_text(v) for v in table[column].dropna().unique()})


def _check_value(column: str, value: str, present: list[str], where: str, study: Mapping[str, set[str]]) -> None:
    if value in present or value in study.get(column, ()):
        return
    if column in IDENTITY_COLUMNS:
        raise UserError(f"{where}: no prompt of this run has {column} '{value}'{nearest(value, present)}")
    close = difflib.get_close_matches(value, present, n=1, cutoff=MISSPELLING_CUTOFF)
    if close:
        raise UserError(f"{where}: no prompt of this run has {column} '{value}'; did you mean '{close[0]}'?")


def _study_values(table: pd.DataFrame) -> Mapping[str, set[str]]:
    """Column -> the whole study's values, where the table was filtered from a study (else none; a saved
    table's ``attrs`` are read as they come: only lists of text count)."""
    values = table.attrs.get(STUDY_VALUES)
    if not isinstance(values, Mapping):
        return {}
    return {str(column): {v for v in listed if isinstance(v, str)} for column, listed in values.items()
            if isinstance(listed, list | tuple)}


def _check_rule(conditions: Mapping[str, Iterable[str]], table: pd.DataFrame, columns: list[str], where: str,
                values_too: bool) -> None:
    for column, wanted in conditions.items():
        if column not in columns:
            hint = nearest(column, columns) or f" (prompt columns: {', '.join(columns)})"
            raise UserError(f"{where}: no prompt has a column '{column}'{hint}")
        if values_too:
            present = _values(table, column)
            for value in wanted:
                _check_value(column, value, present, f"{where}.{column}", _study_values(table))


def check_prompts(profile: SimProfile, table: pd.DataFrame, model: str) -> None:
    """Refuse (one line) a rule of ``profile``'s own file that names a column, identifier or group the
    prompt ``table`` lacks; nothing for presets."""
    if not profile.checked_file or table.empty:
        return
    source = profile.checked_file
    columns = [str(c) for c in table.columns if c not in ("system", "user")]
    if "effects" in profile.checked_keys:
        for i, effect in enumerate(profile.effects):
            _check_rule(effect.match, table, columns, f"{source}: effects[{i}].match", values_too=True)
            _check_rule(effect.unless, table, columns, f"{source}: effects[{i}].unless", values_too=False)
    studies = set(profile.identifier_effects_studies)
    applies = not studies or "study" not in table.columns or bool(studies & set(_values(table, "study")))
    _check_use_cases(profile, table, source)
    if "identifier_effects" in profile.checked_keys and applies and "identifier" in columns:
        present = _values(table, "identifier")
        for name in profile.identifier_effects:
            _check_value("identifier", name, present, f"{source}: identifier_effects", _study_values(table))


def _check_use_cases(profile: SimProfile, table: pd.DataFrame, source: str) -> None:
    """A misspelt use case of the file (close to one of the run's) and a probability outside [0, 1]."""
    if "use_case" not in table.columns:
        return
    present = _values(table, "use_case")
    in_study = set(_study_values(table).get("use_case", ()))
    for key in ("use_cases", "identifier_effects_by_use_case"):
        if key not in profile.checked_keys:
            continue
        for name in getattr(profile, key):
            close = difflib.get_close_matches(name, present, n=1, cutoff=USE_CASE_CUTOFF)
            if name not in present and name not in in_study and close:
                raise UserError(f"{source}: {key}.{name}: no prompt of this run has use case '{name}'; "
                                f"did you mean '{close[0]}'?")
    if "use_cases" not in profile.checked_keys or "answer_type" not in table.columns:
        return
    from counterbench.outcomes import is_generic, kind_member, spec_from_answer_type

    for name, spec in profile.use_cases.items():
        rows = table.loc[table["use_case"].astype(str) == name, "answer_type"].dropna().astype(str).unique()
        for answer_type in (a for a in rows if is_generic(a)):
            kind = spec_from_answer_type(answer_type)
            ordinal = bool(kind.labels) and all(f"option_{label}" in table.columns for label in kind.labels)
            probability = bool(kind_member(kind, "sim_probability"))
            if probability and not ordinal and not 0.0 <= spec.default <= 1.0:
                raise UserError(f"{source}: use_cases.{name}.default is a probability (its answers are "
                                f"{kind.kind} answers) and must be between 0 and 1, got {spec.default:g}")


#: prompt columns every simulated model's effects may read (besides the columns its rules name)
_EFFECT_COLUMNS = ("profile_id", "identifier", "use_case", "language", "study")


def planted_reach(results: pd.DataFrame) -> dict[str, bool]:
    """Per ``sim:`` model of ``results`` that has effects: whether any of them changes the expected answer of
    at least one of its prompts. ``False`` means that on these prompts it plants nothing, whatever its
    ``planted`` sentence says (``sim:biased``'s rules name a column this study's prompts lack, say)."""
    out: dict[str, bool] = {}
    if results.empty or "model" not in results.columns:
        return out
    for model, part in results.groupby("model", sort=False):
        name = str(model)
        if not name.startswith("sim:"):
            continue
        try:
            profile = load_profile(name[len("sim:"):])
        except UserError:  # a file moved since the run: say nothing rather than fail the analysis
            continue
        if not (profile.effects or profile.identifier_effects or profile.profile_effects
                or profile.language_effects or profile.identifier_effects_by_use_case):
            continue
        named = {k for effect in profile.effects for k in (*effect.match, *effect.unless)}
        columns = sorted(c for c in {*_EFFECT_COLUMNS, *named} if c in part.columns)
        rows = part[columns].astype(object).where(part[columns].notna(), None).drop_duplicates()
        records: list[dict[str, Any]] = [{str(k): v for k, v in row.items()} for row in rows.to_dict("records")]
        out[name] = any(abs(with_effects(profile, 1.0, row) - 1.0) > 1e-12 for row in records)
    return out
