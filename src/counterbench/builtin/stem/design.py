"""The STEM study's prompt table: ranking and generation prompts over sampled and designed profiles.

:class:`StemDesign` holds what a table varies (:meth:`StemDesign.paper`: the design in ``presets.yaml``);
:func:`build_prompt_table` expands it into one row per prompt.

- **Ranking** (paper §3.3, Appendix A): for each profile × role × subject, the subject's five
  problem–solution pairs (levels 1–5) are shown as options A–E in a seeded random order per item
  (:func:`option_order`; seed = stable hash of the design seed, profile, role and subject). The order is
  stored in ``option_order`` (the levels in A..E order, e.g. ``31524``) and in ``option_A`` …
  ``option_E`` (each option's level), so the chosen letter maps back to a level without the seed.
- **Generation**: for each profile × problem, teacher framing; ``requested_max_tokens`` is the design's
  ``generation_tokens`` (512, the paper's), a ranking prompt's its ``ranking_tokens`` (16); the run sends
  each prompt its own limit unless ``--max-tokens`` overrides every prompt's.
- **Experiments** (column ``experiment``): ``main`` (sampled profiles), ``progressive`` and
  ``ablation`` (§4.3.1, §4.5.2; generation task only, as in the paper), ``single`` (§4.5.1; both tasks).

Columns: the base prompt columns (``prompt_id`` … ``user``), then ``task``, ``role``, ``context``,
``experiment``, ``step``, ``varied``, ``dataset``, ``subject``, ``problem_id``, ``level``,
``option_order``, ``option_A`` … ``option_E``, ``requested_max_tokens``, ``characteristic`` and one column per
profile attribute (empty when the profile does not state it).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from counterbench.builtin.stem import problems as pb
from counterbench.builtin.stem.profiles import (
    attribute_columns,
    get_context,
    progressive_profiles,
    sample_profiles,
    single_attribute_profiles,
)
from counterbench.errors import UserError
from counterbench.stats.seeding import stable_seed
from counterbench.studies.counts import PromptCounts

STUDY = "stem"
LETTERS = ("A", "B", "C", "D", "E")
DUPLICATE_IDS = "duplicate STEM prompt ids"
RANKING_ANSWER_TYPE = "choice:" + "|".join(LETTERS)
GENERATION_ANSWER_TYPE = "text:mgl"
RANKING_MAX_TOKENS = 16
#: what the analysis does with an explanation cut at the token limit: ``score`` the text received (the
#: paper's rule, the default) or ``drop`` it
TRUNCATED_MODES = ("score", "drop")
BASE = ("prompt_id", "study", "use_case", "language", "axis", "identifier", "profile_id", "question_variant",
        "variant", "answer_type", "system", "user")
DESIGN = ("task", "role", "context", "experiment", "step", "varied", "dataset", "subject", "problem_id", "level",
          "option_order", *(f"option_{x}" for x in LETTERS), "requested_max_tokens", "characteristic")


@cache
def prompt_texts() -> dict[str, Any]:
    text = resources.files("counterbench.builtin.stem").joinpath("prompts.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


@cache
def presets() -> dict[str, Any]:
    """``presets.yaml``: the study's ``design`` and its named ``presets``."""
    text = resources.files("counterbench.builtin.stem").joinpath("presets.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


@dataclass(frozen=True)
class StemDesign:
    """What one STEM prompt table varies; :meth:`paper` gives the paper's design (``presets.yaml``)."""

    contexts: tuple[str, ...] = ("india", "usa")
    profiles: int = 100
    sampling: str = "paper"
    roles: tuple[str, ...] = ("teacher", "student")
    generation_tokens: int = 512
    ranking_tokens: int = RANKING_MAX_TOKENS
    math_per_subject: int = 3
    jeebench: int = 50
    progressive: tuple[str, ...] = ()
    single_attribute: tuple[str, ...] = ()
    seed: int = 0
    math_path: str | None = None
    jeebench_path: str | None = None
    tasks: tuple[str, ...] = ("ranking", "generation")

    @classmethod
    def paper(cls, **overrides: Any) -> StemDesign:
        """The design in ``presets.yaml`` with ``overrides`` (``None`` values are ignored)."""
        raw: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in presets()["design"].items()}
        raw.update({k: (tuple(v) if isinstance(v, list) else v) for k, v in overrides.items() if v is not None})
        unknown = sorted(set(raw) - {f.name for f in fields(cls)})
        if unknown:
            raise UserError(f"unknown STEM design setting '{unknown[0]}'")
        return cls(**raw).validated()

    def validated(self) -> StemDesign:
        for ctx in (*self.contexts, *self.progressive, *self.single_attribute):
            get_context(ctx)
        bad_roles = [r for r in self.roles if r not in prompt_texts()["ranking"]]
        if bad_roles:
            raise UserError(f"unknown role '{bad_roles[0]}' (one of: teacher, student)")
        bad_tasks = [t for t in self.tasks if t not in ("ranking", "generation")]
        if bad_tasks:
            raise UserError(f"unknown STEM task '{bad_tasks[0]}' (one of: ranking, generation)")
        for name in ("generation_tokens", "ranking_tokens"):
            if int(getattr(self, name)) < 1:
                raise UserError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 1 <= self.math_per_subject <= 3 and not self.math_path:
            raise UserError(f"math_per_subject must be 1 to 3 with the built-in problems, got {self.math_per_subject}")
        return self


_PERMUTATIONS = tuple(itertools.permutations(range(1, 6)))
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def option_order(seed: int, profile_id: str, role: str, subject: str) -> tuple[int, ...]:
    """Levels 1–5 in the order shown as A–E for one ranking item (reproducible from the seed).

    One of the 120 orders, indexed by a stable hash of (seed, profile, role, subject): uniform up to
    a bias below 1e-16, and cheap enough for tens of thousands of items.
    """
    return _PERMUTATIONS[stable_seed(STUDY, "options", profile_id, role, subject, base_seed=seed) % 120]


@cache
def _slug(text: str) -> str:
    return _UNSAFE.sub("_", text)


def problem_sets(design: StemDesign) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ranking problems, generation problems) for the design's datasets."""
    builtin = pb.builtin_problems()
    math = pb.load_math(design.math_path) if design.math_path else None
    ranking = pb.ranking_set(math if math is not None else builtin, seed=design.seed)
    parts = []
    if math is not None:
        parts.append(pb.generation_set(math, per_subject=design.math_per_subject, seed=design.seed))
    else:
        parts.append(pb.builtin_generation_problems(per_subject=design.math_per_subject))
    if design.jeebench_path:
        parts.append(pb.generation_set(pb.load_jeebench(design.jeebench_path), n=design.jeebench, seed=design.seed))
    return ranking, pd.concat(parts, ignore_index=True)


def design_profiles(design: StemDesign) -> pd.DataFrame:
    """Every profile the design uses, with ``experiment``, ``step`` and ``varied`` (the profiles saved with a run)."""
    frames = []
    for ctx in design.contexts:
        frames.append(sample_profiles(ctx, design.profiles, design.sampling, design.seed).assign(experiment="main"))
    for ctx in design.progressive:
        frames.append(progressive_profiles(ctx).assign(experiment="progressive"))
        fixed = dict(get_context(ctx).ablation)
        if fixed:
            frames.append(progressive_profiles(ctx, fixed).assign(experiment="ablation"))
    for ctx in design.single_attribute:
        frames.append(single_attribute_profiles(ctx).assign(experiment="single"))
    frame = pd.concat(frames, ignore_index=True)
    for col, default in (("step", 0), ("varied", "")):
        frame[col] = frame[col].fillna(default) if col in frame.columns else default
    frame["step"] = frame["step"].astype(np.int64)
    for col in attribute_columns(sorted(set(frame["context"]), key=["india", "usa"].index)):
        frame[col] = frame[col].fillna("") if col in frame.columns else ""
    return frame


def _ranking_rows(profiles: pd.DataFrame, problems: pd.DataFrame, design: StemDesign) -> list[dict[str, Any]]:
    texts = prompt_texts()
    rank = texts["ranking"]
    rows = []
    option_text: dict[tuple[str, str, int], str] = {}
    datasets: dict[str, str] = {}
    for item in problems.to_dict("records"):
        subject = str(item["subject"])
        datasets[subject] = str(item["dataset"])
        for letter in LETTERS:
            option_text[subject, letter, int(item["level"])] = rank["option"].format(
                letter=letter, problem=item["problem"], solution=item["solution"])
    subject_index = {subject: i + 1 for i, subject in enumerate(datasets)}
    for prof in _records(profiles):
        for role in design.roles:
            for subject, dataset in datasets.items():
                order = option_order(design.seed, prof["profile_id"], role, subject)
                options = "\n\n".join(option_text[subject, letter, lv]
                                        for letter, lv in zip(LETTERS, order, strict=True))
                framing = rank[role].format(characteristic=prof["characteristic"], subject=subject)
                rows.append({
                    **prof, "task": "ranking", "role": role, "use_case": "ranking", "dataset": dataset,
                    "subject": subject, "problem_id": f"{dataset}/{subject}", "level": 0,
                    "question_variant": subject_index[subject],
                    "option_order": "".join(map(str, order)),
                    **{f"option_{x}": str(v) for x, v in zip(LETTERS, order, strict=True)},
                    "answer_type": RANKING_ANSWER_TYPE, "requested_max_tokens": design.ranking_tokens,
                    "user": f"{_tidy(framing)}\n\n{options}\n\n{rank['instruction']}",
                    "prompt_id": _ranking_id(role, prof["profile_id"], subject),
                })
    return rows


def _generation_rows(profiles: pd.DataFrame, problems: pd.DataFrame, design: StemDesign) -> list[dict[str, Any]]:
    template = prompt_texts()["generation"]["teacher"]
    records = problems.to_dict("records")
    rows = []
    for prof in _records(profiles):
        for number, prob in enumerate(records, start=1):
            user = template.format(characteristic=prof["characteristic"], subject=prob["subject"],
                                   problem=prob["problem"])
            rows.append({
                **prof, "task": "generation", "role": "teacher", "use_case": "generation",
                "dataset": prob["dataset"], "subject": prob["subject"], "problem_id": prob["problem_id"],
                "level": int(prob["level"]), "question_variant": number, "option_order": "",
                **{f"option_{x}": "" for x in LETTERS},
                "answer_type": GENERATION_ANSWER_TYPE, "requested_max_tokens": design.generation_tokens,
                "user": _tidy(user), "prompt_id": _generation_id(prof["profile_id"], prob["problem_id"]),
            })
    return rows


def _ranking_id(role: str, profile_id: Any, subject: str) -> str:
    return f"stem-rank-{role}-{profile_id}-{_slug(str(subject))}"


def _generation_id(profile_id: Any, problem_id: Any) -> str:
    return f"stem-gen-{profile_id}-{_slug(problem_id)}"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _tidy(text: str) -> str:
    """``a  student`` when the characteristic is empty (baseline profile) → ``a student``."""
    return text.replace("a  student", "a student")


def build_prompt_table(design: StemDesign) -> pd.DataFrame:
    """The full prompt table of ``design`` (see module docstring), in a canonical order."""
    ranking_problems, generation_problems = problem_sets(design)
    profiles = design_profiles(design)
    main_or_single = profiles[profiles["experiment"].isin(["main", "single"])]
    rows: list[dict[str, Any]] = []
    if "ranking" in design.tasks:
        rows += _ranking_rows(main_or_single, ranking_problems, design)
    if "generation" in design.tasks:
        rows += _generation_rows(profiles, generation_problems, design)
    attrs = [c for c in attribute_columns(["india", "usa"]) if c in profiles.columns]
    table = pd.DataFrame(rows)
    table["study"] = STUDY
    table["language"] = "en"
    table["axis"] = "profile"
    table["identifier"] = table["profile_id"]
    table["variant"] = "standard"
    table["system"] = prompt_texts()["system"]
    table = table[[*BASE, *DESIGN, *attrs]]
    if table["prompt_id"].duplicated().any():
        raise RuntimeError(DUPLICATE_IDS)
    return table.reset_index(drop=True)


def prompt_counts(design: StemDesign) -> PromptCounts:
    """What :func:`build_prompt_table` makes of ``design``, counted without writing a prompt: the same profiles,
    problems and prompt ids (and the same refusal of two prompts with one id)."""
    ranking_problems, generation_problems = problem_sets(design)
    profiles = design_profiles(design)
    main_or_single = profiles[profiles["experiment"].isin(["main", "single"])]
    ids: list[str] = []
    identifiers: list[Any] = []
    use_cases: list[str] = []
    if "ranking" in design.tasks:
        subjects = list(dict.fromkeys(str(subject) for subject in ranking_problems["subject"]))
        ranked = list(main_or_single["profile_id"])
        ids += [_ranking_id(role, pid, subject) for pid in ranked for role in design.roles for subject in subjects]
        if design.roles and subjects:
            identifiers += ranked
            use_cases += ["ranking"] if ranked else []
    if "generation" in design.tasks:
        problem_ids = list(generation_problems["problem_id"])
        every = list(profiles["profile_id"])
        ids += [_generation_id(pid, problem) for pid in every for problem in problem_ids]
        if problem_ids:
            identifiers += every
            use_cases += ["generation"] if every else []
    if len(set(ids)) < len(ids):
        raise RuntimeError(DUPLICATE_IDS)
    return PromptCounts.of_rows(len(ids), use_cases, identifiers)


def chosen_levels(frame: pd.DataFrame, letter_col: str = "letter") -> pd.Series:
    """The level each row's chosen letter stands for (NaN when no valid letter), via ``option_<L>``."""
    letters = frame[letter_col].astype(object)
    out = np.full(len(frame), np.nan)
    for x in LETTERS:
        hit = letters.eq(x).to_numpy()
        if hit.any():
            out[hit] = pd.to_numeric(frame.loc[hit, f"option_{x}"], errors="coerce").to_numpy(dtype=np.float64)
    return pd.Series(out, index=frame.index, name="chosen_level")


def save_profiles(design: StemDesign, path: str | Path) -> Path:
    """Write the design's profiles (all experiments) as CSV next to a run."""
    target = Path(path)
    design_profiles(design).to_csv(target, index=False)
    return target


def describe(design: StemDesign) -> Mapping[str, Any]:
    """A small summary of the design for the report's methods section."""
    return {"contexts": list(design.contexts), "profiles": design.profiles,
            "sampling": design.sampling, "roles": list(design.roles), "generation_tokens": design.generation_tokens,
            "ranking_tokens": design.ranking_tokens,
            "progressive": list(design.progressive), "single_attribute": list(design.single_attribute),
            "seed": design.seed, "math": bool(design.math_path), "jeebench": bool(design.jeebench_path)}


__all__: Sequence[str] = ("LETTERS", "StemDesign", "build_prompt_table", "chosen_levels", "option_order",
                           "prompt_counts")
