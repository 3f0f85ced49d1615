"""A hiring study declared from data files: ``counterbench audit my_country.yaml``.

A study file whose top-level ``study: hiring`` names this study is handed to
:meth:`~.study.HiringStudy.from_study_file` (the core's registry does that for any registered study
with the method). Its keys (``docs/hiring.md``, "Another country"):

- ``name``, ``title``, ``description`` — the study's own (default: ``hiring_`` + the file's stem);
- ``jobs``, ``resumes``, ``baskets``, ``prompts``, ``variants`` — the data files, relative to the study
  file (omitted: the built-in one; ``variants``: the prompt variants ``--variant`` chooses from, in the
  ``prompt_variants.yaml`` format, instead of the built-in ones);
- ``lint`` — ``terms`` (a file with the keys of ``lint_terms.yaml``), ``mode`` (``extend`` the
  built-in lists, the default, or ``replace`` them) and ``allow`` (a list of ``{term, reason}``:
  words relaxed on purpose, each with its reason);
- ``coverage`` — the keys of ``full`` in ``data/presets.yaml`` (``jobs``, ``variations``,
  ``settings``, ``rationale``, ``language_only``, ``recover_jobs``, ``ablation``).

Every mistake is one :class:`~counterbench.errors.UserError` naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from counterbench.builtin.hiring.plan import HiringPlan, full_plan, plan_from_mapping
from counterbench.errors import UserError, check_keys

FILE_KEYS: dict[str, str] = {"jobs": "jobs_file", "resumes": "resumes_file", "baskets": "baskets_file",
                             "prompts": "prompts_file", "variants": "variants_file"}
TOP_KEYS: tuple[str, ...] = ("name", "title", "description", *FILE_KEYS, "lint", "coverage")
COVERAGE_KEYS: tuple[str, ...] = ("jobs", "variations", "settings", "rationale", "language_only", "recover_jobs",
                                  "ablation")


def _unknown(data: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    check_keys(data, allowed, where)


def _file(value: Any, base: Path, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where}: expected a file name")
    path = (base / value).resolve()
    if not path.is_file():
        raise UserError(f"{where}: no such file {value} (relative to the study file)")
    return str(path)


def plan_from_study_file(data: Mapping[str, Any], path: Path) -> tuple[HiringPlan, dict[str, str]]:
    """The plan a study file declares, and its ``name``, ``title`` and ``description``."""
    where = path.name
    _unknown(data, TOP_KEYS, where)
    base = path.parent
    raw: dict[str, Any] = {}
    coverage = data.get("coverage") or {}
    if not isinstance(coverage, Mapping):
        raise UserError(f"{where}: coverage: expected a mapping")
    _unknown(coverage, COVERAGE_KEYS, f"{where}: coverage")
    raw.update(coverage)
    for key, field in FILE_KEYS.items():
        if key in data:
            raw[field] = _file(data[key], base, f"{where}: {key}")
    plan = plan_from_mapping(raw, where=f"{where}: coverage", base=full_plan())
    lint = data.get("lint") or {}
    if not isinstance(lint, Mapping):
        raise UserError(f"{where}: lint: expected a mapping with terms, mode, allow")
    _unknown(lint, ("terms", "mode", "allow"), f"{where}: lint")
    allow: list[tuple[str, str]] = []
    for i, item in enumerate(lint.get("allow") or []):
        if not isinstance(item, Mapping) or set(item) != {"term", "reason"}:
            raise UserError(f"{where}: lint.allow[{i}]: expected {{term: WORD, reason: WHY}}")
        allow.append((str(item["term"]), str(item["reason"])))
    plan = replace(plan, lint_terms_file=_file(lint["terms"], base, f"{where}: lint.terms") if "terms" in lint
                   else None, lint_mode=str(lint.get("mode", "extend")), lint_allow=tuple(allow))
    texts = {"name": str(data.get("name") or f"hiring_{path.stem}")}
    for key in ("title", "description"):
        if data.get(key):
            texts[key] = str(data[key])
    return plan, texts
