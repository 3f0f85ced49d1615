"""Load and validate a declarative counterfactual study (YAML) into typed objects.

The format is documented in ``docs/studies.md``. A study file is a mapping with ``name``,
``languages``, ``axes`` (axis -> identifiers with a phrase per language), optional ``phrase_forms``
(derived phrases such as the customer-side relative clause, produced by ordered regex rules that are
themselves data), ``system_prompts``, optional ``fairness_suffix``, ``use_cases`` (answer type,
system prompt, a template and question variants per language, profiles), optional ``presets`` and
optional ``canonical_pairs`` (axis -> the reference and comparison identifiers the analysis compares).
A file may ``include`` sibling files whose top-level keys are merged in.

Every problem raises :class:`~counterbench.errors.UserError` naming the file and the key path,
e.g. ``study.yaml: use_cases.salary.template.en: unknown placeholder {cgpaa}``. Unknown or misplaced
keys, duplicate keys, non-UTF-8 files and alias bombs are refused by :mod:`.strict`. A use case's
``outcome`` (``{kind: label, labels: [yes, no]}``) names its outcome kind (:mod:`counterbench.outcomes`);
``answer_type`` alone is the ``amount`` kind. Identifiers may belong to ``groups`` (names grouped into
groups) and ``design.crossed`` states several attributes in one prompt (:mod:`.designs`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.studies.designs import parse_crossed
from counterbench.studies.spec import (  # re-exported: the study definition types
    RESERVED_PLACEHOLDERS,
    Identifier,
    RewriteRule,
    StudyDefinition,
    _Ctx,
)
from counterbench.studies.strict import check_keys, load_yaml
from counterbench.studies.use_cases import parse_use_cases


def read_study_mapping(path: Path) -> dict[str, Any]:
    """Read a study YAML file, merging any ``include:`` files (relative to it)."""
    data = _read_yaml(path)
    includes = data.pop("include", []) or []
    if not isinstance(includes, list):
        raise UserError(f"{path.name}: include: expected a list of file names")
    for name in includes:
        part = _read_yaml(path.parent / str(name))
        for key, value in part.items():
            if key in data:
                raise UserError(f"{name}: {key}: defined twice (also in {path.name} or an earlier include)")
            data[key] = value
    return data


def _read_yaml(path: Path) -> dict[str, Any]:
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise UserError(f"{path.name}: expected a mapping at the top level")
    return data


def parse_study(data: Mapping[str, Any], source: str) -> StudyDefinition:
    """Validate a study mapping and build a :class:`StudyDefinition`."""
    ctx = _Ctx(source)
    check_keys(data, source)
    name = ctx.text(data.get("name"), "name")
    languages = {
        str(code): {k: str(v) for k, v in ctx.mapping(spec or {"name": code}, f"languages.{code}").items()}
        for code, spec in ctx.mapping(data.get("languages"), "languages").items()
    }
    infixes: dict[str, str] = {}
    for code, spec in languages.items():
        spec.setdefault("id_infix", code)
        spec.setdefault("name", code)
        if spec["id_infix"] in infixes:
            raise ctx.fail(f"languages.{code}.id_infix", f"'{spec['id_infix']}' is already the id_infix of "
                           f"language {infixes[spec['id_infix']]}; prompt ids would collide")
        infixes[spec["id_infix"]] = code
    crossed = parse_crossed(ctx, data.get("design"), languages)
    if crossed is not None and data.get("axes") is not None:
        raise ctx.fail("axes", "a study with design.crossed states its attributes there; remove axes")
    axes, groups = ({}, {}) if crossed is not None else _parse_axes(ctx, data.get("axes"), languages)
    forms = _parse_forms(ctx, data.get("phrase_forms") or {}, languages)
    system_prompts = {
        str(k): ctx.text(v, f"system_prompts.{k}")
        for k, v in (ctx.mapping(data["system_prompts"], "system_prompts") if "system_prompts" in data
                     else {}).items()
    }
    fairness = data.get("fairness_suffix")
    attributes = tuple(crossed.attributes) if crossed is not None else ()

    use_cases = parse_use_cases(ctx, data.get("use_cases"), languages, system_prompts, forms, attributes)
    presets = data.get("presets") or {}
    if not isinstance(presets, Mapping):
        raise ctx.fail("presets", "expected a mapping")
    pairs = _parse_canonical_pairs(ctx, data.get("canonical_pairs") or {},
                                   crossed.as_axes() if crossed is not None else axes)
    return StudyDefinition(
        name=name,
        title=str(data.get("title") or name),
        description=str(data.get("description") or ""),
        languages=languages,
        axes=axes,
        phrase_forms=forms,
        system_prompts=system_prompts,
        fairness_suffix=str(fairness) if fairness else None,
        use_cases=use_cases,
        presets={str(k): dict(v or {}) for k, v in presets.items()},
        source=source,
        canonical_pairs=pairs,
        groups=groups,
        crossed=crossed,
    )


def _parse_canonical_pairs(
    ctx: _Ctx, raw: Any, axes: Mapping[str, tuple[Identifier, ...]]
) -> dict[str, tuple[str, str]]:
    """``axis: [reference, comparison]``; identifiers by value or alias, both from that axis."""
    if not isinstance(raw, Mapping):
        raise ctx.fail("canonical_pairs", "expected a mapping of axis -> [reference, comparison]")
    pairs: dict[str, tuple[str, str]] = {}
    for axis, pair in raw.items():
        where = f"canonical_pairs.{axis}"
        if axis not in axes:
            raise ctx.fail(where, f"unknown axis (declared: {', '.join(axes)})")
        if not isinstance(pair, list) or len(pair) != 2:
            raise ctx.fail(where, "expected a list of two identifiers: [reference, comparison]")
        names = {alias: ident.value for ident in axes[axis] for alias in (ident.value, *ident.aliases)}
        chosen = []
        for i, item in enumerate(pair):
            value = ctx.text(item, f"{where}[{i}]")
            if value not in names:
                raise ctx.fail(f"{where}[{i}]", f"'{value}' is not an identifier of axis {axis}")
            chosen.append(names[value])
        if chosen[0] == chosen[1]:
            raise ctx.fail(where, "the reference and the comparison must differ")
        pairs[str(axis)] = (chosen[0], chosen[1])
    return pairs


def _parse_axes(
    ctx: _Ctx, raw: Any, languages: Mapping[str, Any]
) -> tuple[dict[str, tuple[Identifier, ...]], dict[str, tuple[str, ...]]]:
    axes: dict[str, tuple[Identifier, ...]] = {}
    all_groups: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}
    for axis, items in ctx.mapping(raw, "axes").items():
        where = f"axes.{axis}"
        groups: tuple[str, ...] = ()
        if isinstance(items, Mapping):
            raw_groups = items.get("groups")
            if not isinstance(raw_groups, list) or len(raw_groups) < 2:
                raise ctx.fail(f"{where}.groups", "expected a list of at least two group names")
            groups = tuple(ctx.text(g, f"{where}.groups") for g in raw_groups)
            if len(set(groups)) != len(groups):
                raise ctx.fail(f"{where}.groups", "group names must differ")
            items = items.get("identifiers")
            where = f"{where}.identifiers"
        if not isinstance(items, list):
            raise ctx.fail(where, "expected a list of identifiers")
        if len(items) < 2:
            raise ctx.fail(where, f"an axis needs at least two identifiers to compare, found {len(items)}")
        idents = []
        for i, item in enumerate(items):
            iwhere = f"{where}[{i}]"
            m = ctx.mapping(item, iwhere)
            value = ctx.text(m.get("value"), f"{iwhere}.value")
            if value in seen:
                raise ctx.fail(iwhere, f"duplicate identifier '{value}' (already in axis {seen[value]})")
            seen[value] = str(axis)
            phrases = ctx.per_language(m.get("phrases"), f"{iwhere}.phrases", languages)
            overrides = {
                str(f): ctx.per_language(v, f"{iwhere}.forms.{f}", languages)
                for f, v in (m.get("forms") or {}).items()
            }
            aliases = tuple(str(a) for a in (m.get("aliases") or []))
            for alias in aliases:
                if alias in seen:
                    raise ctx.fail(iwhere, f"alias '{alias}' is already an identifier or alias (axis {seen[alias]})")
                seen[alias] = str(axis)
            group = m.get("group")
            if groups:
                if group is None:
                    raise ctx.fail(iwhere, f"missing group (axis {axis} groups its identifiers: {', '.join(groups)})")
                if str(group) not in groups:
                    raise ctx.fail(f"{iwhere}.group", f"undefined group '{group}' (declared: {', '.join(groups)})")
            elif group is not None:
                raise ctx.fail(f"{iwhere}.group", f"axis {axis} declares no groups; write it as "
                               "{groups: [...], identifiers: [...]}")
            idents.append(Identifier(str(axis), value, phrases, overrides, aliases,
                                     str(group) if group is not None else None))
        if groups:
            empty = [g for g in groups if not any(i.group == g for i in idents)]
            if empty:
                raise ctx.fail(f"axes.{axis}.groups", f"group '{empty[0]}' has no identifiers")
            all_groups[str(axis)] = groups
        axes[str(axis)] = tuple(idents)
    return axes, all_groups


def _parse_forms(
    ctx: _Ctx, raw: Mapping[str, Any], languages: Mapping[str, Any]
) -> dict[str, dict[str, tuple[RewriteRule, ...]]]:
    forms: dict[str, dict[str, tuple[RewriteRule, ...]]] = {}
    for form, per_lang in raw.items():
        where = f"phrase_forms.{form}"
        if form in RESERVED_PLACEHOLDERS:
            raise ctx.fail(where, "this name is reserved")
        rules_by_lang: dict[str, tuple[RewriteRule, ...]] = {}
        for lang, rules in ctx.mapping(per_lang, where).items():
            if lang not in languages:
                raise ctx.fail(f"{where}.{lang}", f"unknown language (declared: {', '.join(languages)})")
            if not isinstance(rules, list) or not rules:
                raise ctx.fail(f"{where}.{lang}", "expected a list of {pattern, replace} rules")
            compiled = []
            for j, rule in enumerate(rules):
                rm = ctx.mapping(rule, f"{where}.{lang}[{j}]")
                try:
                    pattern = re.compile(str(rm.get("pattern", "")))
                except re.error as err:
                    raise ctx.fail(f"{where}.{lang}[{j}].pattern", f"bad regular expression: {err}") from None
                compiled.append(RewriteRule(pattern, str(rm.get("replace", ""))))
            rules_by_lang[str(lang)] = tuple(compiled)
        for lang in languages:
            if lang not in rules_by_lang:
                raise ctx.fail(where, f"missing rules for language '{lang}'")
        forms[str(form)] = rules_by_lang
    return forms
