"""``counterbench import``: load the published RupeeBias release's run files into a store (spec §4).

Registered as the study's run-file importer (entry-point group ``counterbench.run_importers``).

A run file is JSON lines, one record per request, named
``<task>[_implicit]_<en|hinglish>[_fairness]_<model>_<temperature>[_retried].jsonl``, with
``id, language, axis, identifier_value, profile_id, question_variant_id, model, prompt, response,
finish_reason, tokens_prompt, tokens_completion, system_prompt, task, ...`` plus the profile's
design fields. Decisions, following how the release itself reads its runs:

* Fairness runs are recognised by ``_fairness`` in the file name (their ``task`` is still the
  plain task); their prompt ids get ``_fair`` appended, as in :mod:`counterbench.builtin.rupeebias.release`.
  ``_implicit`` runs become variant ``implicit`` (ids get ``_implicit``).
* When a folder holds both ``X.jsonl`` and ``X_retried.jsonl``, only the retried file is read
  (the release prefers it); files containing ``smoke_test`` or ``_revalidated`` are skipped, as
  are dataset files (records without a response).
* Within a file the first record per prompt id is kept; for DeepSeek models, records carrying a
  reasoning trace are passed over when a record without one exists (the release drops them).
* ``task`` ``service_pricing_client`` is use case ``service_pricing_customer``.
* A file of rows a run could not commit (``<store>.unsaved-<time>.jsonl``, written when the store
  failed mid-run) is recognised by its columns and stored as it is.
* Responses are stored under the record's own ``model`` string (e.g. ``anthropic/claude-haiku-4.5``)
  and parsed under the chosen profile; existing finished rows are never overwritten, so importing
  twice changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from counterbench.builtin.rupeebias.release import canonical_profile_id
from counterbench.errors import UserError
from counterbench.run.parsing import ResponseParser
from counterbench.run.rescue import RescueImport, is_rescue_records, store_rescued
from counterbench.run.store import (
    Store,
    open_store,
    prompt_hash,
    remove_store_files,
    request_fingerprint,
    text_hash,
)
from counterbench.table_files import read_jsonl_records

REQUIRED = (
    "id", "language", "axis", "identifier_value", "profile_id", "question_variant_id", "model", "prompt", "task",
)
_SKIP_FRAGMENTS = ("smoke_test", "_revalidated")
#: record fields that describe the request/response, not the prompt's design
_RUN_FIELDS = {
    *REQUIRED, "identifier_phrase", "question_variant", "response", "model_response", "temperature",
    "tokens_prompt", "tokens_completion", "tokens_total", "finish_reason", "reasoning_content",
    "reasoning_effort", "created_at", "request_duration", "system_prompt", "git_sha", "runner_version",
    "python_version", "validation_status", "validation_reason", "validation_severity", "features",
}
_TEMP_IN_NAME = re.compile(r"_(\d+(?:\.\d+)?)(?:_retried)?$")


@dataclass
class ImportReport(RescueImport):
    files: list[str] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)
    duplicates: int = 0

    def lines(self) -> list[str]:
        """What was read and stored, for the terminal (``counterbench import``)."""
        out = [f"read {self.records:,} records from {len(self.files)} file(s); stored {self.stored:,} new "
               f"responses ({self.already_stored:,} already in the store, {self.duplicates:,} duplicate records)"]
        out += [f"  {name}: {n:,}" for name, n in sorted(self.by_model.items())]
        out.append("  statuses: " + ", ".join(f"{k} {v:,}" for k, v in sorted(self.statuses.items())))
        out += [f"  skipped {skipped}" for skipped in self.skipped_files]
        return out


def find_run_files(paths: Sequence[Path | str]) -> tuple[list[Path], list[str]]:
    """Expand files and folders into the run files to read; also return what was skipped and why."""
    chosen: list[Path] = []
    skipped: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
            if not files:
                raise UserError(f"no .jsonl run files under {path}")
        elif path.is_file():
            files = [path]
        else:
            raise UserError(f"{path}: no such file or folder")
        for f in files:
            if any(frag in f.name for frag in _SKIP_FRAGMENTS):
                skipped.append(f"{f.name} (smoke test / revalidated copy)")
            else:
                chosen.append(f)
    names = {p.resolve() for p in chosen}
    final = []
    for p in chosen:
        retried = p.with_name(p.stem + "_retried.jsonl")
        if not p.stem.endswith("_retried") and retried.resolve() in names:
            skipped.append(f"{p.name} (superseded by {retried.name})")
            continue
        final.append(p)
    return list(dict.fromkeys(final)), skipped


def import_release_runs(
    paths: Sequence[Path | str], store_path: Path | str, *, profile: str = "default", command: str | None = None
) -> ImportReport:
    """Import release run files (or folders of them) into the store; see the module docstring."""
    from counterbench.studies.registry import load_study
    from counterbench.version import __version__

    parser = ResponseParser(profile)
    files, skipped = find_run_files(paths)
    study = load_study("rupeebias")
    report = ImportReport(skipped_files=skipped)
    created = not Path(store_path).exists()
    try:
        _import_into(store_path, files, parser, study, profile, command, report, __version__)
        if not report.files:
            raise UserError("no release run files found in " + ", ".join(str(p) for p in paths))
    except BaseException:
        if created and report.stored == 0:
            remove_store_files(Path(store_path))  # a failed import into a new store leaves nothing behind
        raise
    return report


def _import_into(
    store_path: Path | str, files: list[Path], parser: ResponseParser, study: Any, profile: str,
    command: str | None, report: ImportReport, version: str,
) -> None:
    with open_store(store_path) as store:
        run_id = store.start_run("import", command or "python: import_release_runs",
                                 {"files": [f.name for f in files], "parse_profile": profile}, version)
        status = "failed"
        try:
            for path in files:
                records = list(_read_records(path))
                if is_rescue_records(records):
                    report.files.append(path.name)
                    _import_rescued(store, records, report)
                    continue
                if records and not any(("response" in r or "model_response" in r) for r in records):
                    report.skipped_files.append(f"{path.name} (a dataset file: no responses)")
                    continue
                report.files.append(path.name)
                _import_file(store, study, parser, path, records, run_id, report)
            status = "completed"
        finally:
            store.finish_run(run_id, status, {"sent": 0, "cached": 0, "errors": report.statuses.get("error", 0)})


def _read_records(path: Path) -> Iterable[dict[str, Any]]:
    for lineno, rec in read_jsonl_records(path):
        rec["_line"] = lineno
        yield rec


def _choose(records: list[dict[str, Any]], report: ImportReport) -> list[dict[str, Any]]:
    """First record per id; DeepSeek records with a reasoning trace only when nothing else exists."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        by_id.setdefault(str(rec.get("id")), []).append(rec)
    chosen = []
    for group in by_id.values():
        report.duplicates += len(group) - 1
        pick = group[0]
        if "deepseek" in str(pick.get("model", "")).lower():
            plain = [r for r in group if not r.get("reasoning_content")]
            pick = plain[0] if plain else group[0]
        chosen.append(pick)
    return chosen


def _import_file(
    store: Store, study: Any, parser: ResponseParser, path: Path, records: list[dict[str, Any]], run_id: int,
    report: ImportReport,
) -> None:
    stem = path.stem
    variant = "fairness" if "_fairness" in stem else ("implicit" if "_implicit" in stem else "standard")
    id_suffix = {"fairness": "_fair", "implicit": "_implicit", "standard": ""}[variant]
    name_temp = _TEMP_IN_NAME.search(stem)
    prompt_rows: list[dict[str, Any]] = []
    response_rows: list[tuple[Any, ...]] = []
    report.records += len(records)
    for rec in _choose(records, report):
        missing = [f for f in REQUIRED if f not in rec]
        if missing:
            where = f"{path.name}:{rec['_line']}"
            raise UserError(f"{where}: missing field(s) {', '.join(missing)} (not a release run file?)")
        use_case = study.canonical_use_case(str(rec["task"]))
        system = rec.get("system_prompt") or study.system_prompt_for(
            use_case, "fairness" if variant == "fairness" else "standard"
        )
        user = str(rec["prompt"])
        phash = prompt_hash(system, user)
        pid = str(rec["id"]) + ("" if id_suffix and str(rec["id"]).endswith(id_suffix) else id_suffix)
        answer_type = str(study.definition.use_cases[use_case].answer_type)
        language = "hinglish" if str(rec["language"]).lower().startswith("hi") else "en"
        profile_id = canonical_profile_id(rec["profile_id"])
        design = {k: v for k, v in rec.items() if k not in _RUN_FIELDS and not k.startswith("_")
                  and isinstance(v, str | int | float) and not isinstance(v, bool)}
        # the study's own profile facts (e.g. offered_ctc, which rupeebias-v1's markup needs) fill the gaps
        for key, value in _profile_design(study, use_case, profile_id, language).items():
            design.setdefault(key, value)
        prompt_rows.append({
            "prompt_id": pid, "prompt_hash": phash, "study": "rupeebias", "use_case": use_case,
            "language": language, "axis": str(rec["axis"]),
            "identifier": study.canonical_identifier(str(rec["identifier_value"])), "profile_id": profile_id,
            "question_variant": _variant_number(rec["question_variant_id"]), "variant": variant,
            "answer_type": answer_type, "system": system, "user": user,
            "design": json.dumps(design, ensure_ascii=False) if design else None,
        })
        model = str(rec["model"])
        temperature = rec.get("temperature", float(name_temp.group(1)) if name_temp else None)
        effort = rec.get("reasoning_effort")
        config = {"temperature": temperature, "max_tokens": None, "seed": None,
                  "reasoning_effort": None if effort in (None, "", "none") else effort, "structured": False,
                  "source": "release"}
        config_fp = text_hash(json.dumps(config, sort_keys=True))[:16]
        store.save_config(config_fp, config)
        text = rec.get("response", rec.get("model_response"))
        text = None if text is None else str(text)
        reason = rec.get("finish_reason") or None
        if text is None:
            status, parsed, error = "error", None, "no response in the release record"
        else:
            parsed = parser.parse(text, reason, parser.key_for(use_case, answer_type))
            status, error = parsed.status, None
        duration = rec.get("request_duration")
        finished = _epoch(rec.get("created_at"))
        response_rows.append((
            pid, phash, model, config_fp, request_fingerprint(model, system, user, config_fp), 0, status, text,
            reason, parsed and parsed.value, parsed and parsed.unit, parsed and parsed.release_value,
            parsed and parsed.release_unit, parsed and parsed.is_range, parsed and parsed.out_of_range,
            parsed and parsed.reason, parser.profile, _int(rec, "tokens_prompt", "tokens_input", "prompt_tokens"),
            _int(rec, "tokens_completion", "tokens_output", "completion_tokens"), None,
            float(duration) * 1000.0 if isinstance(duration, int | float) else None, 1, error, 0, model,
            f"release:{path.name}", finished, finished, run_id, None, None, None, None,
        ))
        report.statuses[status] = report.statuses.get(status, 0) + 1
        report.by_model[model] = report.by_model.get(model, 0) + 1
    store.save_prompts(prompt_rows)
    changed = store.write_new_responses(response_rows)
    report.stored += changed
    report.already_stored += len(response_rows) - changed


def _import_rescued(store: Store, records: list[dict[str, Any]], report: ImportReport) -> None:
    """Rows a run could not commit (its recovery file, :mod:`counterbench.run.rescue`): stored as they are."""
    report.add(store_rescued(store, records))


def _profile_design(study: Any, use_case: str, profile_id: str, language: str) -> dict[str, Any]:
    """The study's profile fields for ``profile_id`` (per-language values resolved), or nothing."""
    for profile in study.definition.use_cases[use_case].profiles:
        if profile["profile_id"] == profile_id:
            return {k: (v[language] if isinstance(v, dict) else v) for k, v in profile.items() if k != "profile_id"}
    return {}


def _variant_number(raw: Any) -> int | str:
    digits = re.sub(r"\D", "", str(raw))
    return int(digits) if digits else str(raw)


def _int(rec: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = rec.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
    return None


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None
