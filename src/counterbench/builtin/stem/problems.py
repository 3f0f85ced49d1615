"""Problems for the STEM-explanations study (paper §3.2–3.3): the built-in set, MATH and JEEBench loaders.

Every loader returns one frame with columns ``problem_id``, ``dataset``, ``subject``, ``level``
(1–5; JEEBench has none: 0), ``problem``, ``solution`` (may be empty for JEEBench) and ``qtype``.

- :func:`builtin_problems`: 7 subjects × 5 levels with worked solutions, written by the project
  (``problems.yaml``), so the study runs offline out of the box; :func:`builtin_generation_problems`: its
  generation set, 3 level-3 problems per subject (the paper's 7 × 3: the ranking task's level-3 problem and
  two more).
- :func:`load_math`: a user-supplied copy of the MATH benchmark — its per-file JSON layout
  (``MATH/test/algebra/722.json`` with ``problem``, ``level`` ``"Level 3"``, ``type``, ``solution``), or a
  JSONL file (one object per line; ``level`` may be ``3`` or ``"Level 3"``, the subject ``type`` or
  ``subject``, the id ``unique_id`` / ``id``). MATH texts are not redistributed by counterbench.
- :func:`load_jeebench`: JEEBench's ``dataset.json`` (a JSON array) or a JSONL file of the same objects
  (``description``, ``index``, ``subject`` ``phy``/``chem``/``math``, ``type``, ``question``, ``gold``).
- :func:`ranking_set` picks one problem per subject × level (the ranking task's options);
  :func:`generation_set` the generation task's problems (MATH: ``per_subject`` problems of level 3 per
  subject, as the paper's 7 × 3; JEEBench: ``n`` problems stratified by subject, the paper's 50).

No function downloads anything; a missing or malformed file is a :class:`UserError` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from counterbench.errors import UserError
from counterbench.stats.seeding import stable_seed
from counterbench.table_files import read_json_file, read_jsonl_records

COLUMNS = ("problem_id", "dataset", "subject", "level", "problem", "solution", "qtype")
#: MATH's seven subjects (the ``type`` field), in the paper's order
MATH_SUBJECTS = ("Algebra", "Counting & Probability", "Geometry", "Intermediate Algebra", "Number Theory",
                 "Prealgebra", "Precalculus")
_MATH_DIRS = {"algebra": "Algebra", "counting_and_probability": "Counting & Probability", "geometry": "Geometry",
              "intermediate_algebra": "Intermediate Algebra", "number_theory": "Number Theory",
              "prealgebra": "Prealgebra", "precalculus": "Precalculus"}
JEE_SUBJECTS = {"phy": "Physics", "chem": "Chemistry", "math": "Mathematics"}
_LEVEL = re.compile(r"^\s*(?:level\s*)?([1-5])\s*$", re.IGNORECASE)


def _frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(COLUMNS))
    frame["level"] = frame["level"].astype(np.int64)
    return frame


@cache
def _builtin() -> pd.DataFrame:
    text = resources.files("counterbench.builtin.stem").joinpath("problems.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    rows = []
    for subject, levels in raw.items():
        slug = re.sub(r"[^a-z]+", "_", str(subject).lower()).strip("_")
        more = levels.get("more_level_3") or []
        for level, item in sorted((k, v) for k, v in levels.items() if isinstance(k, int)):
            rows.append({"problem_id": f"builtin/{slug}/{int(level)}", "dataset": "builtin", "subject": str(subject),
                         "level": int(level), "problem": str(item["problem"]), "solution": str(item["solution"]),
                         "qtype": "worked"})
        for number, item in enumerate(more, start=2):
            rows.append({"problem_id": f"builtin/{slug}/3-{number}", "dataset": "builtin", "subject": str(subject),
                         "level": 3, "problem": str(item["problem"]), "solution": str(item["solution"]),
                         "qtype": "worked-extra"})
    return _frame(rows)


def builtin_problems() -> pd.DataFrame:
    """The project's own 7 × 5 problems with worked solutions (the ranking task's options)."""
    frame = _builtin()
    return frame[frame["qtype"].eq("worked")].reset_index(drop=True)


def builtin_generation_problems(per_subject: int = 3) -> pd.DataFrame:
    """The built-in generation set: ``per_subject`` level-3 problems per subject (at most 3), in the order
    every subject's first problem (the ranking task's level 3), then every subject's second, ... — so
    problem ``k`` of the first round is subject ``k``, as with one problem per subject."""
    frame = _builtin()
    level3 = frame[frame["level"].eq(3)].copy()
    level3["round"] = level3.groupby("subject", sort=False).cumcount()
    level3["order"] = level3["subject"].map({s: i for i, s in enumerate(dict.fromkeys(frame["subject"]))})
    chosen = level3[level3["round"].lt(per_subject)].sort_values(["round", "order"], kind="mergesort")
    return chosen.drop(columns=["round", "order"]).reset_index(drop=True)


def _level(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 1 <= value <= 5 else None
    match = _LEVEL.match(str(value)) if value is not None else None
    return int(match.group(1)) if match else None


def _math_subject(raw: Mapping[str, Any], fallback_dir: str | None) -> str | None:
    for key in ("type", "subject"):
        value = raw.get(key)
        if isinstance(value, str):
            if value in MATH_SUBJECTS:
                return value
            mapped = _MATH_DIRS.get(value.strip().lower().replace(" & ", "_and_").replace(" ", "_"))
            if mapped:
                return mapped
    return _MATH_DIRS.get(fallback_dir or "")


def _math_row(raw: Any, problem_id: str, fallback_dir: str | None, where: str) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("problem"), str):
        raise UserError(f"{where}: not a MATH problem (expected an object with 'problem', 'level', 'type', 'solution')")
    level = _level(raw.get("level"))
    subject = _math_subject(raw, fallback_dir)
    if level is None or subject is None:
        return None  # MATH has a few "Level ?" problems; they cannot be placed on the 1–5 scale
    return {"problem_id": problem_id, "dataset": "math", "subject": subject, "level": level,
            "problem": raw["problem"], "solution": str(raw.get("solution") or ""), "qtype": "math"}


def load_math(path: str | Path) -> pd.DataFrame:
    """A user's MATH copy: a directory of per-problem JSON files, or one JSONL file (see module docstring)."""
    root = Path(path).expanduser()
    rows: list[dict[str, Any]] = []
    if root.is_dir():
        files = sorted(root.rglob("*.json"))
        for file in files:
            rel = file.relative_to(root).with_suffix("").parts
            problem_id = "math/" + "/".join(rel[-3:])
            row = _math_row(_read_json(file), problem_id, rel[-2] if len(rel) >= 2 else None, str(file))
            if row:
                rows.append(row)
    elif root.is_file():
        for i, (line, raw) in enumerate(read_jsonl_records(root, str(root))):
            ident = raw.get("unique_id") or raw.get("id") if isinstance(raw, Mapping) else None
            stem = re.sub(r"\.json$", "", str(ident)).removeprefix("math/") if ident else str(i + 1)
            problem_id = f"math/{stem}"
            fallback = str(ident).split("/")[-2] if ident and str(ident).count("/") >= 1 else None
            row = _math_row(raw, problem_id, fallback, f"{root} line {line}")
            if row:
                rows.append(row)
    else:
        raise UserError(f"MATH copy {root} does not exist (give the MATH directory or a .jsonl file)")
    if not rows:
        raise UserError(f"no MATH problems with a level 1–5 and a known subject found in {root}")
    return _frame(rows)


def load_jeebench(path: str | Path) -> pd.DataFrame:
    """JEEBench's ``dataset.json`` (or a JSONL copy of its objects)."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise UserError(f"JEEBench file {file} does not exist (give its dataset.json)")
    try:
        with file.open("rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError as err:
        raise UserError(f"cannot read {file}: {err.strerror or err}") from None
    items: list[Any]
    if head.startswith(b"["):
        items = read_json_file(file, str(file))
    else:
        items = [record for _, record in read_jsonl_records(file, str(file))]
    rows = []
    for i, raw in enumerate(items):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("question"), str):
            raise UserError(f"{file} item {i + 1}: not a JEEBench problem (expected 'question', 'subject', 'type')")
        subject = JEE_SUBJECTS.get(str(raw.get("subject")), str(raw.get("subject") or "unknown"))
        ident = raw.get("id") or f"{raw.get('description', 'jeebench')}/{raw.get('index', i + 1)}"
        problem_id = "jeebench/" + str(ident).removeprefix("jeebench/").replace(" ", "_")
        rows.append({"problem_id": problem_id, "dataset": "jeebench", "subject": subject, "level": 0,
                     "problem": raw["question"], "solution": "", "qtype": str(raw.get("type") or "")})
    if not rows:
        raise UserError(f"{file} holds no JEEBench problems")
    return _frame(rows)


def _read_json(file: Path) -> Any:
    return read_json_file(file, str(file))


def ranking_set(problems: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """One problem per subject × level (seeded pick when a copy has several); only complete subjects."""
    rows = []
    for subject, block in problems[problems["level"].between(1, 5)].groupby("subject", sort=False):
        if block["level"].nunique() < 5:
            continue
        for level in range(1, 6):
            cands = block[block["level"].eq(level)].sort_values("problem_id")
            rng = np.random.default_rng(stable_seed("stem", "ranking_set", str(subject), level, base_seed=seed))
            rows.append(cands.iloc[int(rng.integers(len(cands)))])
    if not rows:
        raise UserError("the ranking task needs a subject with problems at all five levels")
    return pd.DataFrame(rows).reset_index(drop=True)


def generation_set(problems: pd.DataFrame, *, per_subject: int = 3, level: int = 3, n: int | None = None,
                   seed: int = 0) -> pd.DataFrame:
    """The generation task's problems (see module docstring); the built-in set gives its level-3 problems."""
    rows: list[pd.DataFrame] = []
    if n is not None:  # JEEBench: n problems stratified by subject (sorted ids, seeded pick)
        groups = list(problems.sort_values("problem_id").groupby("subject", sort=True))
        share = np.full(len(groups), n // max(len(groups), 1))
        share[: n - share.sum()] += 1
        for (subject, block), k in zip(groups, share, strict=True):
            rng = np.random.default_rng(stable_seed("stem", "generation_set", str(subject), base_seed=seed))
            pick = np.sort(rng.choice(len(block), size=min(int(k), len(block)), replace=False))
            rows.append(block.iloc[pick])
    else:
        for subject, block in problems[problems["level"].eq(level)].groupby("subject", sort=False):
            block = block.sort_values("problem_id")
            rng = np.random.default_rng(stable_seed("stem", "generation_set", str(subject), level, base_seed=seed))
            pick = np.sort(rng.choice(len(block), size=min(per_subject, len(block)), replace=False))
            rows.append(block.iloc[pick])
    if not rows:
        raise UserError("no problems for the generation task")
    return pd.concat(rows, ignore_index=True)
