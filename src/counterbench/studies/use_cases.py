"""Parsing a study file's ``use_cases``: outcome, system prompt, templates, question variants, profiles.

Part of :mod:`counterbench.studies.definition` (split out to keep modules small); every problem is a
:class:`~counterbench.errors.UserError` naming the file and key path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from counterbench.errors import UserError
from counterbench.outcomes import LEGACY_ANSWER_TYPES, encode, kind_names, legacy_outcome
from counterbench.outcomes.base import OutcomeSpec
from counterbench.studies.spec import PLACEHOLDER, RESERVED_PLACEHOLDERS, UseCase, _Ctx

#: columns a declarative design adds itself (beside each crossed attribute)
DESIGN_COLUMNS = ("group", "level_index")


def parse_use_cases(
    ctx: _Ctx,
    raw: Any,
    languages: Mapping[str, Any],
    system_prompts: Mapping[str, str],
    forms: Mapping[str, Any],
    attributes: tuple[str, ...] = (),
) -> dict[str, UseCase]:
    use_cases: dict[str, UseCase] = {}
    for name, spec in ctx.mapping(raw, "use_cases").items():
        where = f"use_cases.{name}"
        m = ctx.mapping(spec, where)
        outcome = parse_outcome(ctx, m, where)
        answer_type = encode(outcome)
        sp = str(m.get("system_prompt", ""))
        if "system_prompt" not in m and "outcome" in m:
            sp = ""  # the outcome kind's own instruction
        elif sp not in system_prompts:
            raise ctx.fail(f"{where}.system_prompt", f"unknown '{sp}' (defined: {', '.join(system_prompts) or 'none'})")
        templates = ctx.per_language(m.get("template"), f"{where}.template", languages)
        qv_raw = ctx.mapping(m.get("question_variants"), f"{where}.question_variants")
        qvs: dict[str, tuple[str, ...]] = {}
        for lang in languages:
            items = qv_raw.get(lang)
            if not isinstance(items, list) or not items:
                raise ctx.fail(f"{where}.question_variants", f"missing a list for language '{lang}'")
            qvs[lang] = tuple(ctx.text(q, f"{where}.question_variants.{lang}[{i}]") for i, q in enumerate(items))
            for i, q in enumerate(qvs[lang]):
                if qvs[lang].index(q) != i:  # two equal variants make duplicate slots, never a comparison
                    raise ctx.fail(f"{where}.question_variants.{lang}[{i}]",
                                   f"the same text as question variant [{qvs[lang].index(q)}]; "
                                   "each variant must differ")
        for lang in qv_raw:
            if lang not in languages:
                raise ctx.fail(f"{where}.question_variants.{lang}", "unknown language")
        if len({len(v) for v in qvs.values()}) != 1:
            raise ctx.fail(f"{where}.question_variants", "every language needs the same number of variants")
        profiles = _parse_profiles(ctx, m.get("profiles"), f"{where}.profiles", languages)
        _check_field_names(ctx, f"{where}.profiles", profiles[0], forms, attributes)
        _check_templates(ctx, where, _with_options(templates, outcome), profiles, forms, attributes)
        _check_options(ctx, where, outcome, profiles[0])
        aliases = tuple(str(a) for a in (m.get("aliases") or []))
        label = ctx.text(m["label"], f"{where}.label") if "label" in m else None
        use_cases[str(name)] = UseCase(str(name), answer_type, sp, templates, qvs, profiles, aliases, outcome, label,
                                       _favourable(ctx, m, where))
    return use_cases


#: the directions a use case may declare favourable (``favourable:``)
FAVOURABLE = ("higher", "lower")


def _favourable(ctx: _Ctx, m: Mapping[str, Any], where: str) -> str | None:
    """``favourable: higher | lower``: which direction of the outcome favours the person asked about."""
    if "favourable" not in m:
        return None
    value = m["favourable"]
    if not isinstance(value, str) or value.strip().lower() not in FAVOURABLE:
        raise ctx.fail(f"{where}.favourable", f"expected higher or lower (which outcome favours the person), "
                       f"got {value!r}")
    return value.strip().lower()


def _parse_profiles(
    ctx: _Ctx, raw: Any, where: str, languages: Mapping[str, Any]
) -> tuple[dict[str, Any], ...]:
    if not isinstance(raw, list) or not raw:
        raise ctx.fail(where, "expected a non-empty list of profiles")
    profiles: list[dict[str, Any]] = []
    ids: set[str] = set()
    for i, item in enumerate(raw):
        m = dict(ctx.mapping(item, f"{where}[{i}]"))
        pid = ctx.text(m.get("profile_id"), f"{where}[{i}].profile_id")
        if pid in ids:
            raise ctx.fail(f"{where}[{i}]", f"duplicate profile_id '{pid}'")
        ids.add(pid)
        for key, value in m.items():
            if isinstance(value, Mapping):
                m[key] = ctx.per_language(value, f"{where}[{i}].{key}", languages)
            elif value is None or isinstance(value, list):
                raise ctx.fail(f"{where}[{i}].{key}", "a profile value must be a number, a text or a mapping "
                               f"language -> text, not {'null' if value is None else 'a list'}")
        m["profile_id"] = pid
        profiles.append(m)
    keys = set(profiles[0])
    seen: dict[str, str] = {}
    for i, p in enumerate(profiles):
        if set(p) != keys:
            diff = sorted(keys.symmetric_difference(p))
            raise ctx.fail(f"{where}[{i}]", f"profiles must all have the same fields; differs in {diff}")
        content = json.dumps({k: v for k, v in p.items() if k != "profile_id"}, sort_keys=True, default=str)
        if content in seen:  # the same person twice: duplicate slots, never a comparison
            raise ctx.fail(f"{where}[{i}]", f"profile '{p['profile_id']}' has the same fields as profile "
                           f"'{seen[content]}'; each profile must differ in at least one field")
        seen[content] = p["profile_id"]
    return tuple(profiles)


def _check_field_names(
    ctx: _Ctx, where: str, fields: Mapping[str, Any], forms: Mapping[str, Any], attributes: tuple[str, ...]
) -> None:
    """A profile field named like what the design varies would fill its placeholder: every level's prompt alike."""
    from counterbench.columns import BASE_COLUMNS

    for name in fields:
        if name == "profile_id":
            continue
        if name in attributes:
            raise ctx.fail(f"{where}[0].{name}", f"'{name}' is also a crossed attribute: the profile's value would "
                           "replace the attribute's in every prompt; rename one of them")
        if name in RESERVED_PLACEHOLDERS or name in forms:
            raise ctx.fail(f"{where}[0].{name}", f"'{name}' is the name of a placeholder the design fills "
                           "(identifier phrase, question or phrase form); rename the profile field")
        if name in BASE_COLUMNS or name in DESIGN_COLUMNS:
            raise ctx.fail(f"{where}[0].{name}", f"'{name}' is a column every prompt table has; rename the "
                           "profile field")


def _with_options(templates: Mapping[str, str], outcome: OutcomeSpec) -> dict[str, str]:
    """The templates as a declared choice's prompts read them: the options listed after the text (their texts
    may use the template's placeholders)."""
    from counterbench.outcomes.choice_options import declared_options, option_lines

    options = declared_options(outcome)
    if not options:
        return dict(templates)
    return {lang: f"{text}\n{option_lines(outcome, options)}" for lang, text in templates.items()}


def _check_options(ctx: _Ctx, where: str, outcome: OutcomeSpec, fields: Mapping[str, Any]) -> None:
    """What the outcome's kind needs of a prompt's fields (its ``fields_problem``: a choice, the
    ``option_<LABEL>`` columns saying what each option is)."""
    from counterbench.outcomes import kind_member

    problem = kind_member(outcome, "fields_problem")(outcome, fields)
    if problem:
        raise ctx.fail(f"{where}.profiles", str(problem))


def _check_templates(
    ctx: _Ctx,
    where: str,
    templates: Mapping[str, str],
    profiles: tuple[Mapping[str, Any], ...],
    forms: Mapping[str, Any],
    attributes: tuple[str, ...] = (),
) -> None:
    known = set(RESERVED_PLACEHOLDERS) | set(forms) | set(profiles[0]) | set(attributes)
    for lang, template in templates.items():
        used = set(PLACEHOLDER.findall(template))
        unknown = sorted(used - known)
        if unknown:
            raise ctx.fail(
                f"{where}.template.{lang}",
                f"unknown placeholder {{{unknown[0]}}} (known: {', '.join(sorted(known))})",
            )
        if attributes:
            missing = [a for a in attributes if a not in used]
            if missing:
                raise ctx.fail(f"{where}.template.{lang}",
                               f"missing placeholder {{{missing[0]}}} (a crossed attribute)")
        elif not used & ({"identifier_phrase"} | set(forms)):
            raise ctx.fail(f"{where}.template.{lang}", "missing placeholder {identifier_phrase}")
        if "question" not in used:
            raise ctx.fail(f"{where}.template.{lang}", "missing placeholder {question}")


def parse_outcome(ctx: _Ctx, m: Mapping[str, Any], where: str) -> OutcomeSpec:
    """A use case's outcome: ``outcome: {kind: ..., ...}``, or the legacy ``answer_type`` (amount)."""
    from counterbench.outcomes import get_kind

    if "outcome" in m:
        if "answer_type" in m:
            raise ctx.fail(f"{where}.answer_type", "give either outcome or answer_type, not both")
        raw = m["outcome"]
        if isinstance(raw, str):
            raw = {"kind": raw}
        if not isinstance(raw, Mapping) or "kind" not in raw:
            raise ctx.fail(f"{where}.outcome", "expected a mapping with a kind, e.g. {kind: label, labels: [yes, no]}")
        try:
            kind = get_kind(str(raw["kind"]))
        except UserError as err:
            raise ctx.fail(f"{where}.outcome.kind", str(err)) from None
        return kind.spec(raw, lambda key, problem: ctx.fail(f"{where}.outcome.{key}", problem))
    answer_type = str(m.get("answer_type", "number"))
    if answer_type not in LEGACY_ANSWER_TYPES:
        raise ctx.fail(f"{where}.answer_type", f"unknown '{answer_type}' (one of {', '.join(LEGACY_ANSWER_TYPES)}; "
                       f"or declare an outcome: {{kind: {'|'.join(kind_names())}, ...}})")
    return legacy_outcome(answer_type)
