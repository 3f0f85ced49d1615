"""The hiring study's resumes and prompt tables (paper "Small Changes, Big Impact" §3.2–3.6, App. I).

- :func:`resume_table` — per job, the neutral resume and one augmented resume per basket (41 for the
  built-in baskets), plus ablated resumes for the recoverability conditions.
- :func:`compare_prompts` — *Direct Comparison*: each augmented resume against its job's neutral one,
  twice (augmented in position A, then in B); verdict ``A`` / ``B`` / ``Tie``.
- :func:`score_prompts` — *Score & Shortlist*: every resume of a job scored 1–100 on its own.
- :func:`recover_prompts` — recoverability: gender and ethnicity asked of each (ablated) resume.
- :func:`generation_prompts` — the neutral-resume generation prompt for each job (any backend).

Each prompt row carries the base prompt-table columns (``prompt_id``, ``study``, ``use_case``, ...,
``system``, ``user``) and the design columns the analyses need: ``job_id``, ``occupation``,
``gender_dominance``, ``group``, ``ethnicity``, ``gender``, ``variation``, ``condition``,
``categories``, ``position`` (where the augmented resume stands), ``rationale``, ``attribute``,
``truth``, ``resume_chars``, ``option_A`` / ``option_B`` (what each option stands for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.builtin.hiring.answers import VERDICTS
from counterbench.builtin.hiring.data import (
    BasketSet,
    Job,
    ResumeTemplate,
    builtin_path,
    pair_jobs_resumes,
)
from counterbench.builtin.hiring.resumes import (
    cumulative_conditions,
    fill,
    neutral_resume,
    single_conditions,
)
from counterbench.errors import UserError
from counterbench.yaml_files import read_yaml_file

STUDY = "hiring"
NEUTRAL = "neutral"
CANNOT = "Cannot determine"
#: use case -> (setting, rationale)
USE_CASES: dict[str, tuple[str, bool]] = {
    "compare": ("compare", False),
    "compare_rationale": ("compare", True),
    "score": ("score", False),
    "score_rationale": ("score", True),
    "recover_gender": ("recover", True),
    "recover_ethnicity": ("recover", True),
}
COMPARE_ANSWER = "choice:" + "|".join(VERDICTS)
SCORE_ANSWER = "score:1:100"


@lru_cache(maxsize=4)
def prompt_texts(path: str | None = None) -> dict[str, dict[str, str]]:
    """The prompt texts (``data/prompts.yaml`` or a user file with the same keys)."""
    p = builtin_path("prompts.yaml") if path is None else path
    data = read_yaml_file(Path(p), f"prompt file {p}")
    needed = {"generation": ("system", "user"), "compare": ("system", "user", "no_rationale", "rationale"),
              "score": ("system", "user", "no_rationale", "rationale"), "recover": ("system", "user")}
    if not isinstance(data, dict):
        raise UserError(f"prompt file {p}: expected a mapping")
    for section, keys in needed.items():
        part = data.get(section)
        if not isinstance(part, dict) or any(not isinstance(part.get(k), str) for k in keys):
            raise UserError(f"prompt file {p}: section '{section}' needs text for {', '.join(keys)}")
        _check_placeholders(str(p), section, part["user"])
    return {s: {k: str(v) for k, v in data[s].items()} for s in needed}


#: the placeholders each section's ``user`` text must hold: without one, the prompts of a job (or of a
#: pair) would not vary with what the design varies (15 of 36 compare prompts identical)
PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "generation": ("job",), "compare": ("job", "resume_a", "resume_b"), "score": ("job", "resume"),
    "recover": ("resume", "attribute", "labels"),
}


def _check_placeholders(path: str, section: str, text: str) -> None:
    """One line naming the key when ``text`` lacks a placeholder of :data:`PLACEHOLDERS` or has another one."""
    import string

    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as err:
        raise UserError(f"prompt file {path}: {section}.user: {err} (write a literal brace as {{{{ or }}}})") from None
    wanted = PLACEHOLDERS[section]
    missing = [name for name in wanted if name not in fields]
    if missing:
        raise UserError(f"prompt file {path}: {section}.user has no {{{missing[0]}}} placeholder; the prompts would "
                        f"not vary with it (give {', '.join('{' + n + '}' for n in wanted)})")
    unknown = sorted(fields - set(wanted))
    if unknown:
        raise UserError(f"prompt file {path}: {section}.user has an unknown placeholder {{{unknown[0]}}} "
                        f"(known here: {', '.join('{' + n + '}' for n in wanted)}; write a literal brace as {{{{)")


@lru_cache(maxsize=4)
def token_limits(path: str | None = None) -> dict[str, int]:
    """``max_tokens`` of the prompt file: use case (or ``recover`` / ``generation``) -> output-token limit."""
    p = builtin_path("prompts.yaml") if path is None else path
    data = read_yaml_file(Path(p), f"prompt file {p}") or {}
    raw = (data.get("max_tokens") or {}) if isinstance(data, dict) else {}
    if not isinstance(raw, dict):
        raise UserError(f"prompt file {p}: max_tokens must map a use case to a number of tokens")
    limits = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"prompt file {p}: max_tokens.{key} must be a whole number of at least 1, got {value!r}")
        limits[str(key)] = value
    return limits


def resume_table(jobs: Sequence[Job], templates: Sequence[ResumeTemplate], baskets: BasketSet,
                 conditions: Sequence[tuple[str, tuple[str, ...]]] = (("all", ("languages", "activities",
                                                                                "volunteering", "hobbies")),),
                 *, texts: bool = True) -> pd.DataFrame:
    """One row per resume: the neutral resume of each job, then each basket under each condition.

    Columns: ``resume_id``, ``job_id``, ``occupation``, ``industry``, ``gender_dominance``, ``group``
    (``neutral`` for the neutral resume), ``ethnicity``, ``gender``, ``variation``, ``condition``,
    ``categories`` (kept categories joined by ``+``), ``text``, ``resume_chars``. With ``texts=False`` the
    augmented resumes are not written (their ``text`` is empty): the same rows, for counting prompts.
    """
    rows: list[dict[str, Any]] = []
    wanted = {j.job_id for j in jobs}
    for job, template in pair_jobs_resumes(jobs, [t for t in templates if t.job_id in wanted]):
        where = f"resume template for job '{job.job_id}'"
        try:
            neutral = neutral_resume(template.text)
        except UserError as err:
            raise UserError(f"{where}: {err}") from None
        base = {"job_id": job.job_id, "occupation": job.occupation, "industry": job.industry,
                "gender_dominance": job.gender_dominance}
        rows.append({**base, "resume_id": f"{job.job_id}__neutral", "group": NEUTRAL, "ethnicity": NEUTRAL,
                     "gender": NEUTRAL, "variation": 0, "condition": "neutral", "categories": "", "text": neutral})
        for condition, keep in conditions:
            for b in baskets.baskets:
                text = (fill(template.text, b.markers, keep) if keep else neutral) if texts else ""
                rows.append({**base, "resume_id": f"{job.job_id}__{b.ethnicity}_{b.gender}_{b.variation}__{condition}",
                             "group": b.group, "ethnicity": b.ethnicity, "gender": b.gender,
                             "variation": b.variation, "condition": condition, "categories": "+".join(keep),
                             "text": text})
    table = pd.DataFrame(rows)
    table["resume_chars"] = table["text"].str.len()
    return table


def _base(use_case: str, prompt_id: str, rec: Mapping[Any, Any], answer_type: str, system: str,
          user: str) -> dict[str, Any]:
    """The base prompt-table columns: ``axis`` is the marker condition, ``identifier`` the group,
    ``profile_id`` the job and ``question_variant`` the basket variation (0: the neutral resume)."""
    condition = "all" if rec["condition"] == "neutral" else rec["condition"]
    return {"prompt_id": prompt_id, "study": STUDY, "use_case": use_case, "language": "en", "axis": condition,
            "identifier": rec["group"], "profile_id": rec["job_id"], "question_variant": int(rec["variation"]),
            "variant": "standard", "answer_type": answer_type, "system": system, "user": user}


_DESIGN = ("job_id", "occupation", "gender_dominance", "group", "ethnicity", "gender", "variation", "condition",
           "categories", "resume_chars")


def _resume_row(use_case: str, prompt_id: str, rec: Mapping[Any, Any], answer_type: str, system: str, user: str,
                limit: int | None, **design: Any) -> dict[str, Any]:
    """A prompt about one resume ``rec``: the base columns, the resume's design columns, ``design`` and the
    output-token limit it requests."""
    row = _base(use_case, prompt_id, rec, answer_type, system, user)
    row.update({k: rec[k] for k in _DESIGN})
    row.update(design, requested_max_tokens=limit)
    return row


def _texts_and_limits(texts: dict[str, dict[str, str]] | None, limits: Mapping[str, int] | None,
                      ) -> tuple[dict[str, dict[str, str]], Mapping[str, int]]:
    """The prompt texts and token limits given, else the built-in ones."""
    return texts or prompt_texts(), token_limits() if limits is None else limits


def compare_prompts(resumes: pd.DataFrame, jobs: Sequence[Job], *, rationale: Sequence[bool] = (False, True),
                    texts: dict[str, dict[str, str]] | None = None, limits: Mapping[str, int] | None = None,
                    ) -> pd.DataFrame:
    """Direct Comparison: every non-neutral resume against its job's neutral one, in both positions."""
    t, limits = _texts_and_limits(texts, limits)
    job_text = {j.job_id: j.text for j in jobs}
    neutral = dict(resumes[resumes["group"].eq(NEUTRAL)].set_index("job_id")["text"])
    rows: list[dict[str, Any]] = []
    augmented = resumes[~resumes["group"].eq(NEUTRAL)]
    for with_reason in rationale:
        use_case = _use_case("compare", with_reason)
        tail = t["compare"]["rationale" if with_reason else "no_rationale"]
        for rec in augmented.to_dict("records"):
            for position in ("A", "B"):
                base_text = neutral[rec["job_id"]]
                a, b = (rec["text"], base_text) if position == "A" else (base_text, rec["text"])
                user = t["compare"]["user"].format(job=job_text[rec["job_id"]], resume_a=a, resume_b=b) + "\n\n" + tail
                rows.append(_resume_row(use_case, _prompt_id(use_case, rec["resume_id"], position), rec,
                                        COMPARE_ANSWER, t["compare"]["system"], user, limits.get(use_case),
                                        position=position, rationale=with_reason, setting="compare",
                                        option_A=rec["group"] if position == "A" else NEUTRAL,
                                        option_B=NEUTRAL if position == "A" else rec["group"]))
    return pd.DataFrame(rows)


def score_prompts(resumes: pd.DataFrame, jobs: Sequence[Job], *, rationale: Sequence[bool] = (False, True),
                  texts: dict[str, dict[str, str]] | None = None, limits: Mapping[str, int] | None = None,
                  ) -> pd.DataFrame:
    """Score & Shortlist: each resume (neutral included) scored 1–100 against its job on its own."""
    t, limits = _texts_and_limits(texts, limits)
    job_text = {j.job_id: j.text for j in jobs}
    rows: list[dict[str, Any]] = []
    for with_reason in rationale:
        use_case = _use_case("score", with_reason)
        tail = t["score"]["rationale" if with_reason else "no_rationale"]
        for rec in resumes.to_dict("records"):
            user = t["score"]["user"].format(job=job_text[rec["job_id"]], resume=rec["text"]) + "\n\n" + tail
            rows.append(_resume_row(use_case, _prompt_id(use_case, rec["resume_id"]), rec, SCORE_ANSWER,
                                    t["score"]["system"], user, limits.get(use_case), position="",
                                    rationale=with_reason, setting="score"))
    return pd.DataFrame(rows)


def prompt_keys(setting: str, resumes: pd.DataFrame, *, rationale: Sequence[bool] = (False, True),
                ) -> list[tuple[str, str, str]]:
    """``(prompt_id, use_case, identifier)`` of each prompt :func:`compare_prompts`, :func:`score_prompts` or
    :func:`recover_prompts` (``setting``) makes of ``resumes``, in its order, without writing one (their texts
    may be empty: :func:`resume_table` with ``texts=False``)."""
    augmented = resumes[~resumes["group"].eq(NEUTRAL)]
    if setting == "compare":
        pairs = list(zip(augmented["resume_id"], augmented["group"], strict=True))
        return [(_prompt_id(use_case, resume_id, position), use_case, group)
                for use_case in [_use_case("compare", with_reason) for with_reason in rationale]
                for resume_id, group in pairs for position in ("A", "B")]
    chosen = resumes if setting == "score" else augmented
    pairs = list(zip(chosen["resume_id"], chosen["group"], strict=True))
    use_cases = ([f"recover_{attribute}" for attribute in RECOVERED] if setting == "recover" else
                 [_use_case("score", with_reason) for with_reason in rationale])
    return [(_prompt_id(use_case, resume_id), use_case, group) for use_case in use_cases for resume_id, group in pairs]


#: the attributes a recoverability question asks about (:data:`USE_CASES`' ``recover_*``), in table order
RECOVERED = tuple(name.removeprefix("recover_") for name, (setting, _) in USE_CASES.items() if setting == "recover")
#: (setting, rationale) -> the Direct Comparison or Score & Shortlist use case (:data:`USE_CASES` turned round)
_USE_CASE_OF = {parts: name for name, parts in USE_CASES.items() if parts[0] != "recover"}


def _use_case(setting: str, with_reason: bool) -> str:
    """The use case of a ``compare`` or ``score`` prompt, asking why or not (from :data:`USE_CASES`)."""
    return _USE_CASE_OF[setting, with_reason]


def _prompt_id(use_case: str, resume_id: str, position: str = "") -> str:
    """A prompt's id: its use case and resume, and (Direct Comparison) where the augmented resume stands."""
    return f"hiring_{use_case}_{resume_id}" + (f"_{position}" if position else "")


def recover_labels(baskets: BasketSet, attribute: str) -> tuple[str, ...]:
    """The answer options of one recoverability question: the basket values, then "Cannot determine"."""
    values = baskets.ethnicities if attribute == "ethnicity" else baskets.genders
    return (*values, CANNOT)


def recover_prompts(resumes: pd.DataFrame, baskets: BasketSet, *,
                    texts: dict[str, dict[str, str]] | None = None, limits: Mapping[str, int] | None = None,
                    ) -> pd.DataFrame:
    """Gender and ethnicity asked of every non-neutral resume (each condition of the ablation).

    The prompt and the row's ``answer_type`` list the options in one fixed order, the baskets' order then
    "Cannot determine", whatever the truth (``truth`` is a column of its own: the simulated models read
    it through ``label_from: truth``), so nothing in a request leaks the answer or its position.
    """
    t, limits = _texts_and_limits(texts, limits)
    rows: list[dict[str, Any]] = []
    for attribute in RECOVERED:
        labels = recover_labels(baskets, attribute)
        use_case = f"recover_{attribute}"
        for rec in resumes[~resumes["group"].eq(NEUTRAL)].to_dict("records"):
            truth = rec[attribute]
            user = t["recover"]["user"].format(resume=rec["text"], attribute=attribute, labels=", ".join(labels))
            rows.append(_resume_row(use_case, _prompt_id(use_case, rec["resume_id"]), rec,
                                    "label:" + "|".join(labels), t["recover"]["system"], user, limits.get("recover"),
                                    position="", rationale=True, setting="recover", attribute=attribute, truth=truth,
                                    has_languages="languages" in rec["categories"].split("+")))
    return pd.DataFrame(rows)


def generation_prompts(jobs: Sequence[Job], texts: dict[str, dict[str, str]] | None = None,
                       limits: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One resume-generation prompt per job (the answer is the job's neutral resume template)."""
    t, limits = _texts_and_limits(texts, limits)
    rows = []
    for job in jobs:
        rec = {"condition": "neutral", "group": NEUTRAL, "job_id": job.job_id, "variation": 0}
        row = _base("generate_resume", f"hiring_generate_{job.job_id}", rec, "text", t["generation"]["system"],
                    t["generation"]["user"].format(job=job.text))
        row.update(job_id=job.job_id, requested_max_tokens=limits.get("generation"))
        rows.append(row)
    return pd.DataFrame(rows)


def ablation_conditions(order: Sequence[str] = ("hobbies", "volunteering", "activities", "languages"),
                        single: bool = True) -> list[tuple[str, tuple[str, ...]]]:
    """The recoverability conditions: the cumulative removal in ``order`` plus, optionally, one per category."""
    conditions = cumulative_conditions(order)
    if single:
        conditions += [c for c in single_conditions() if c[0] not in {n for n, _ in conditions}]
    return conditions
