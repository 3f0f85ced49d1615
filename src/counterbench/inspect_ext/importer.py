"""``counterbench import --inspect-log PATH``: Inspect AI eval logs of a counterbench task -> the store.

Each sample becomes one response: the sample id is the ``prompt_id``, its metadata the prompt's
columns (as the task put them there), its input messages the system and user text (so the prompt
hash matches a direct counterbench run of the same prompt), its output the raw text, stop reason
and token usage. The model is the log's model name (e.g. ``openai/gpt-4o-mini``) unless a label is
given. Answers are parsed with counterbench's parser at import, as a run would; importing a log
twice stores nothing new. Samples that errored are stored as ``error`` rows; a sample without the
task's metadata (not a counterbench task) is a user error.

An import is a run: it records the model string behind its label (the log's model) and goes through the
same label-identity check (answers labelled ``a`` from another model are refused in one line, unless
``same_model``), the same key redaction (every secret-looking environment variable's value in an answer or
error text becomes ``***``) and the same parser. A refused import of a store that did not exist leaves no
file behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from counterbench.columns import DEFAULT_MAX_TOKENS, REQUESTED_MAX_TOKENS
from counterbench.errors import UserError
from counterbench.run.parsing import ResponseParser
from counterbench.run.redact import Redactor
from counterbench.run.store import (
    PROMPT_COLUMNS,
    RESPONSE_COLUMNS,
    Store,
    prompt_hash,
    request_fingerprint,
    text_hash,
)

STOP_REASONS = {"stop": "stop", "max_tokens": "length", "model_length": "length", "content_filter": "content_filter",
                "tool_calls": "tool_calls"}
LOG_SUFFIXES = (".eval", ".json")
REQUIRED_METADATA = ("use_case", "identifier")


@dataclass
class InspectImport:
    files: list[Path] = field(default_factory=list)
    samples: int = 0
    stored: int = 0
    already_stored: int = 0
    by_model: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)


def find_logs(paths: Sequence[Path | str]) -> list[Path]:
    """Eval log files named by ``paths`` (files, or folders searched for ``*.eval`` / ``*.json``)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.suffix in LOG_SUFFIXES and p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise UserError(f"--inspect-log {path}: no such file or folder")
    if not found:
        raise UserError(f"no Inspect eval logs (*.eval, *.json) in {', '.join(str(p) for p in paths)}")
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [getattr(c, "text", None) for c in content or []]
    return "".join(p for p in parts if isinstance(p, str))


def _messages(sample: Any) -> tuple[str, str]:
    items = sample.input if isinstance(sample.input, list) else None
    if items is None:
        return "", str(sample.input)
    system = "".join(_text(m.content) for m in items if getattr(m, "role", "") == "system")
    user = "\n".join(_text(m.content) for m in items if getattr(m, "role", "") == "user")
    return system, user


def _generation(log: Any) -> dict[str, Any]:
    """counterbench's generation config from the log (task config overlaid by ``inspect eval`` options).

    Without a limit for every sample (``-T max_tokens`` / ``--max-tokens``), the task sent each prompt's
    own ``requested_max_tokens`` (else 64): the config then says so (``prompt_max_tokens``), as a
    counterbench run's does, so the results' ``max_tokens`` column gives each answer's limit.
    """
    merged: dict[str, Any] = {}
    task_config = getattr(getattr(log, "plan", None), "config", None)
    for config in (task_config, getattr(log.eval, "model_generate_config", None)):
        if config is None:
            continue
        for key in ("temperature", "max_tokens", "seed", "reasoning_effort"):
            value = getattr(config, key, None)
            if value is not None:
                merged[key] = value
    out = {"temperature": merged.get("temperature"), "max_tokens": merged.get("max_tokens"),
           "seed": merged.get("seed"), "reasoning_effort": merged.get("reasoning_effort"), "structured": False,
           "source": "inspect"}
    if out["max_tokens"] is None:
        out["max_tokens"] = DEFAULT_MAX_TOKENS
        if any(REQUESTED_MAX_TOKENS in (sample.metadata or {}) for sample in log.samples or []):
            out["prompt_max_tokens"] = True
    return out


def _epoch(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def in_dataset_order(log: Any) -> list[Any]:
    """The log's samples in the task's dataset order (the prompt table's order, which analyses keep)."""
    samples = list(log.samples or [])
    ids = getattr(getattr(log.eval, "dataset", None), "sample_ids", None) or []
    position = {str(i): k for k, i in enumerate(ids)}
    return sorted(samples, key=lambda s: (position.get(str(s.id), len(position)), getattr(s, "epoch", 1)))


def _sample_rows(log: Any, path: Path, model: str, config_fp: str, parser: ResponseParser, run_id: int,
                 report: InspectImport, redactor: Redactor) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    prompts: list[dict[str, Any]] = []
    responses: list[tuple[Any, ...]] = []
    for sample in in_dataset_order(log):
        meta = dict(sample.metadata or {})
        missing = [k for k in REQUIRED_METADATA if k not in meta]
        if missing:
            raise UserError(f"{path}: sample {sample.id} has no {', '.join(missing)} in its metadata; "
                            "is this a log of a counterbench task (inspect eval counterbench/...)?")
        if getattr(sample, "epoch", 1) not in (None, 1):
            continue  # one answer per prompt: the first epoch
        system, user = _messages(sample)
        phash = prompt_hash(system, user)
        pid = str(sample.id)
        design = {k: v for k, v in meta.items() if k not in PROMPT_COLUMNS}
        prompts.append({"prompt_id": pid, "prompt_hash": phash, **{c: meta.get(c) for c in PROMPT_COLUMNS},
                        "system": system, "user": user,
                        "design": json.dumps(design, ensure_ascii=False, default=str) if design else None})
        output = sample.output
        choice = output.choices[0] if output is not None and output.choices else None
        text = redactor.redact(output.completion) if choice is not None else None
        finish = STOP_REASONS.get(str(choice.stop_reason), str(choice.stop_reason)) if choice is not None else None
        error = getattr(sample, "error", None)
        if error is not None or choice is None:
            message = getattr(error, "message", None) or "no answer in the Inspect log"
            status, parsed, err_text = "error", None, redactor.redact(str(message)[:500])
        else:
            parsed = parser.parse(text, finish, parser.key_for(meta.get("use_case"), meta.get("answer_type")))
            status, err_text = parsed.status, None
        usage = getattr(output, "usage", None)
        seconds = getattr(sample, "working_time", None) or getattr(sample, "total_time", None)
        row = {
            "prompt_id": pid, "prompt_hash": phash, "model": model, "config_fp": config_fp,
            "request_fp": request_fingerprint(model, system, user, config_fp), "simulated": 0, "status": status,
            "response": text, "finish_reason": finish, "value": parsed and parsed.value,
            "unit": parsed and parsed.unit, "release_value": parsed and parsed.release_value,
            "release_unit": parsed and parsed.release_unit, "is_range": parsed and parsed.is_range,
            "out_of_range": parsed and parsed.out_of_range, "parse_reason": parsed and parsed.reason,
            "parse_profile": parser.profile, "input_tokens": prompt_tokens(usage),
            "output_tokens": getattr(usage, "output_tokens", None), "cost_usd": None,
            "latency_ms": float(seconds) * 1000.0 if isinstance(seconds, int | float) else None, "attempts": 1,
            "error": err_text, "cached": 0, "model_reported": getattr(output, "model", None) or model,
            "source": f"inspect:{path.name}", "started_at": _epoch(getattr(sample, "started_at", None)),
            "finished_at": _epoch(getattr(sample, "completed_at", None)), "run_id": run_id,
        }
        responses.append(tuple(row.get(c) for c in RESPONSE_COLUMNS))
        report.statuses[status] = report.statuses.get(status, 0) + 1
        report.by_model[model] = report.by_model.get(model, 0) + 1
    return prompts, responses


def prompt_tokens(usage: Any) -> int | None:
    """All the prompt's tokens, as a direct run stores them: Inspect's ``input_tokens`` leaves out the tokens
    read from or written to the provider's prompt cache (OpenAI: ``prompt_tokens`` minus ``cached_tokens``),
    so they are added back."""
    base = getattr(usage, "input_tokens", None)
    if not isinstance(base, int):
        return None
    cached = (getattr(usage, "input_tokens_cache_read", None), getattr(usage, "input_tokens_cache_write", None))
    return base + sum(n for n in cached if isinstance(n, int))


def _read(path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(str(path))
    except Exception as err:  # a damaged or foreign file
        raise UserError(f"cannot read Inspect log {path}: {str(err).splitlines()[0] if str(err) else err}") from None


def _model_specs(logs: list[tuple[Path, Any]], label: str | None) -> dict[str, str]:
    """The model name each log's answers are stored under -> the model string behind it (the log's model);
    two logs of different models under one label are refused."""
    specs: dict[str, str] = {}
    for path, log in logs:
        spec = str(log.eval.model)
        model = label or spec
        if specs.setdefault(model, spec) != spec:
            raise UserError(f"--label {model}: the logs hold answers of two models ({specs[model]} and {spec} in "
                            f"{path.name}); a label names one model: import them under separate labels")
    return specs


def import_inspect_logs(paths: Iterable[Path | str], store: Path | str, *, label: str | None = None,
                        profile: str = "default", command: str = "", same_model: bool = False) -> InspectImport:
    """Load every sample of the Inspect eval logs at ``paths`` into ``store`` (see the module docstring)."""
    from counterbench.run.import_run import import_run

    report = InspectImport(files=find_logs(list(paths)))
    parser = ResponseParser(profile)
    redactor = Redactor.from_environment()
    logs = [(p, _read(p)) for p in report.files]
    specs = _model_specs(logs, label)
    params = {"inspect_logs": [str(p) for p in report.files], "label": label, "models": sorted(specs),
              "model_specs": specs}
    with import_run(store, specs, what="this import", command=command, redactor=redactor,
                    default_command="python: import_inspect_logs", params=params, same_model=same_model,
                    errors=lambda: report.statuses.get("error", 0), stored=lambda: report.stored) as (db, run_id):
        for path, log in logs:
            _import_one(db, log, path, label, parser, run_id, report, redactor)
    return report


def _import_one(db: Store, log: Any, path: Path, label: str | None, parser: ResponseParser, run_id: int,
                report: InspectImport, redactor: Redactor) -> None:
    model = label or str(log.eval.model)
    config = _generation(log)
    config_fp = text_hash(json.dumps(config, sort_keys=True))[:16]
    db.save_config(config_fp, config)
    prompts, rows = _sample_rows(log, path, model, config_fp, parser, run_id, report, redactor)
    report.samples += len(rows)
    db.save_prompts(prompts)
    changed = db.write_new_responses(rows)
    report.stored += changed
    report.already_stored += len(rows) - changed

