"""The hiring study's inputs: job descriptions, neutral resume templates and marker baskets.

All three are data files a user can replace (``docs/hiring.md``):

- **jobs** — JSONL, one object per line: ``job_id``, ``occupation``, ``industry``,
  ``gender_dominance`` (``male`` / ``female`` / ``neutral``), ``text``;
- **resumes** — JSONL: ``job_id``, ``text`` (a resume template whose "Additional Information" section
  holds the four placeholders), optionally ``weakness`` (what makes it imperfect);
- **baskets** — YAML (``baskets:`` list, plus ``name``/``country``/``label``) or JSONL, one basket per
  entry: ``ethnicity``, ``gender``, ``variation`` and one value per marker category (``languages``,
  ``activities``, ``volunteering``, ``hobbies``).

The built-in set (``data/``) is project-written: 20 occupations × 5 employers = 100 jobs (25 male-,
25 female-dominated, 50 neutral, as in the paper "Small Changes, Big Impact: Demographic Bias in
LLM-Based Hiring Through Subtle Sociocultural Markers in Anonymised Resumes"), one neutral resume per
job, and Singapore baskets labelled as the project's own (the paper's lists are not public).

Every malformed file is a :class:`~counterbench.errors.UserError` naming the file, the line and the
field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from counterbench.errors import UserError, check_keys
from counterbench.table_files import read_jsonl_records
from counterbench.yaml_files import read_yaml_file

#: marker categories in template order, with their placeholders
CATEGORIES: tuple[str, ...] = ("languages", "activities", "volunteering", "hobbies")
PLACEHOLDERS: dict[str, str] = {
    "languages": "[LANGUAGES]",
    "activities": "[ACTIVITIES]",
    "volunteering": "[VOLUNTEERING]",
    "hobbies": "[HOBBIES]",
}
GENDER_DOMINANCE: tuple[str, ...] = ("male", "female", "neutral")
DATA_PACKAGE = "counterbench.builtin.hiring"


@dataclass(frozen=True)
class Job:
    """One job description."""

    job_id: str
    occupation: str
    industry: str
    gender_dominance: str
    text: str


@dataclass(frozen=True)
class ResumeTemplate:
    """The neutral resume of one job, with the four placeholders in its Additional Information section."""

    job_id: str
    text: str
    weakness: str = ""


@dataclass(frozen=True)
class Basket:
    """One variation of one demographic basket: a value per marker category."""

    ethnicity: str
    gender: str
    variation: int
    markers: Mapping[str, str]

    @property
    def group(self) -> str:
        """The basket's group name, e.g. ``Chinese Male``."""
        return f"{self.ethnicity} {self.gender}"


@dataclass(frozen=True)
class BasketSet:
    """A loaded basket file: its name, country, label and baskets in file order."""

    name: str
    country: str
    label: str
    baskets: tuple[Basket, ...]

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.group for b in self.baskets))

    @property
    def ethnicities(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.ethnicity for b in self.baskets))

    @property
    def genders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.gender for b in self.baskets))


def builtin_path(name: str) -> Path:
    """Path of a built-in data file (``jobs.jsonl``, ``resumes.jsonl``, ``baskets.yaml``, ...)."""
    return Path(str(resources.files(DATA_PACKAGE).joinpath("data", name)))


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = list(read_jsonl_records(path))
    if not rows:
        raise UserError(f"{path.name}: the file has no entries")
    return rows


def _text(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where}: '{key}' must be a non-empty string")
    return value


def _check_keys(obj: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    check_keys(obj, allowed, where, "field")


def load_jobs(path: str | Path | None = None) -> tuple[Job, ...]:
    """Job descriptions from a JSONL file (the built-in set when ``path`` is ``None``)."""
    p = Path(path) if path is not None else builtin_path("jobs.jsonl")
    fields = ("job_id", "occupation", "industry", "gender_dominance", "text")
    jobs: list[Job] = []
    seen: set[str] = set()
    for number, obj in _read_jsonl(p):
        where = f"{p.name} line {number}"
        _check_keys(obj, fields, where)
        job = Job(*(_text(obj, key, where).strip() if key != "text" else _text(obj, key, where) for key in fields))
        if job.gender_dominance not in GENDER_DOMINANCE:
            raise UserError(f"{where}: gender_dominance must be one of {', '.join(GENDER_DOMINANCE)}, "
                            f"got '{job.gender_dominance}'")
        if job.job_id in seen:
            raise UserError(f"{where}: job_id '{job.job_id}' appears twice")
        seen.add(job.job_id)
        jobs.append(job)
    return tuple(jobs)


def load_resumes(path: str | Path | None = None) -> tuple[ResumeTemplate, ...]:
    """Neutral resume templates from a JSONL file (the built-in set when ``path`` is ``None``)."""
    p = Path(path) if path is not None else builtin_path("resumes.jsonl")
    out: list[ResumeTemplate] = []
    seen: set[str] = set()
    for number, obj in _read_jsonl(p):
        where = f"{p.name} line {number}"
        _check_keys(obj, ("job_id", "text", "weakness"), where)
        job_id = _text(obj, "job_id", where).strip()
        if job_id in seen:
            raise UserError(f"{where}: a second resume for job_id '{job_id}' (one neutral resume per job)")
        seen.add(job_id)
        weakness = obj.get("weakness", "")
        out.append(ResumeTemplate(job_id, _text(obj, "text", where), str(weakness or "")))
    return tuple(out)


def _basket(obj: Mapping[str, Any], where: str) -> Basket:
    _check_keys(obj, ("ethnicity", "gender", "variation", *CATEGORIES), where)
    variation = obj.get("variation")
    if isinstance(variation, bool) or not isinstance(variation, int):
        raise UserError(f"{where}: 'variation' must be a whole number")
    markers = {}
    for category in CATEGORIES:
        value = _text(obj, category, where).strip()
        if "\n" in value or any(ph in value for ph in PLACEHOLDERS.values()):
            raise UserError(f"{where}: '{category}' must be one line without placeholders")
        markers[category] = value
    return Basket(_text(obj, "ethnicity", where).strip(), _text(obj, "gender", where).strip(), variation, markers)


def load_baskets(path: str | Path | None = None) -> BasketSet:
    """Marker baskets from YAML (``baskets:`` list) or JSONL (the built-in Singapore set by default)."""
    p = Path(path) if path is not None else builtin_path("baskets.yaml")
    entries: list[tuple[str, Mapping[str, Any]]]
    meta: Mapping[str, Any] = {}
    if p.suffix == ".jsonl":
        entries = [(f"{p.name} line {n}", obj) for n, obj in _read_jsonl(p)]
    else:
        data = read_yaml_file(p)
        if not isinstance(data, dict) or not isinstance(data.get("baskets"), list) or not data["baskets"]:
            raise UserError(f"{p.name}: expected a mapping with a non-empty 'baskets' list")
        _check_keys(data, ("name", "country", "label", "baskets"), p.name)
        meta = data
        entries = []
        for i, obj in enumerate(data["baskets"], start=1):
            if not isinstance(obj, dict):
                raise UserError(f"{p.name} basket {i}: expected a mapping")
            entries.append((f"{p.name} basket {i}", obj))
    baskets = tuple(_basket(obj, where) for where, obj in entries)
    keys = [(b.group, b.variation) for b in baskets]
    for (group, variation), (where, _) in zip(keys, entries, strict=True):
        if keys.count((group, variation)) > 1:
            raise UserError(f"{where}: {group} variation {variation} appears twice")
    basket_set = BasketSet(str(meta.get("name", p.stem)), str(meta.get("country", "")),
                           str(meta.get("label", "user-supplied baskets")), baskets)
    if len(basket_set.ethnicities) < 2 or len(basket_set.genders) < 2:
        raise UserError(f"{p.name}: baskets need at least two ethnicities and two genders")
    return basket_set


def pair_jobs_resumes(jobs: Sequence[Job], resumes: Sequence[ResumeTemplate]) -> list[tuple[Job, ResumeTemplate]]:
    """Each job with its neutral resume; a job without a resume (or a resume without a job) is an error."""
    by_job = {r.job_id: r for r in resumes}
    job_ids = {j.job_id for j in jobs}
    missing = [j.job_id for j in jobs if j.job_id not in by_job]
    if missing:
        raise UserError(f"no neutral resume for job '{missing[0]}' ({len(missing)} job(s) without one); "
                        "give one resume per job (docs/hiring.md shows how to generate them with any model)")
    orphans = [r.job_id for r in resumes if r.job_id not in job_ids]
    if orphans:
        raise UserError(f"resume for unknown job_id '{orphans[0]}' (not in the job file)")
    return [(j, by_job[j.job_id]) for j in jobs]
