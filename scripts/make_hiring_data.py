"""Write the hiring study's built-in jobs and neutral resumes from phrase banks (deterministic, seeded).

    PYTHONPATH=src python scripts/make_hiring_data.py            # rewrite data/jobs.jsonl, data/resumes.jsonl
    PYTHONPATH=src python scripts/make_hiring_data.py --check    # only report lengths and overlaps

The phrase banks (``scripts/hiring_phrase_banks.yaml``) hold, per occupation, duties, skills, resume
bullets, earlier job titles, certifications and study projects; each of the 5 jobs of an occupation
draws its own sample from them (a string seed per job id), so no two jobs and no two resumes share a
text. Each resume has one minor, plausible weakness, as in the paper "Small Changes, Big Impact:
Demographic Bias in LLM-Based Hiring Through Subtle Sociocultural Markers in Anonymised Resumes":
a year less experience than the job asks for, or the job's "advantage" skill missing. Every resume
passes the study's template lint. Not an LLM: rerunning gives the same files byte for byte.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
BANKS = HERE / "hiring_phrase_banks.yaml"
DATA = HERE.parent / "src" / "counterbench" / "builtin" / "hiring" / "data"
SEED = 2026
JOBS_PER_OCCUPATION = 5
END_YEAR = 2025
SECTION = ("Additional Information\nLanguages: [LANGUAGES]\nCo-curricular Activities: [ACTIVITIES]\n"
           "Volunteering: [VOLUNTEERING]\nHobbies: [HOBBIES]\n")
_CHOICE = re.compile(r"\[\[([^\]]+)\]\]")


def fill(rng: random.Random, template: str, **values: Any) -> str:
    """Pick ``[[a|b]]`` alternatives and fill ``{n}``/``{p}``/``{m}`` and the named values."""
    text = _CHOICE.sub(lambda m: rng.choice(m.group(1).split("|")), template)
    numbers = {"n": rng.randint(3, 24), "p": rng.choice(range(8, 36)), "m": rng.choice(range(40, 900, 20))}
    return text.format(**{**numbers, **values})


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def make_job(occ: dict[str, Any], banks: dict[str, Any], index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """One job description, and what its resume needs (skills, years, the advantage skill)."""
    job_id = f"{occ['id']}_{index}"
    rng = random.Random(f"{SEED}:job:{job_id}")
    sector = occ["industry"].lower()
    years = rng.randint(2, 6)
    core = rng.sample(occ["core"], 3)
    secondary = rng.choice(occ["secondary"])
    duties = rng.sample(occ["duties"], rng.randint(5, 6)) + rng.sample(banks["generic_duties"], 1)
    offers = rng.sample(banks["offers"], 3)
    employer = fill(rng, rng.choice(banks["employers"]), sector=sector)
    lines = [f"Job title: {occ['title']}", f"Employer: {employer}, Singapore",
             f"Location: {rng.choice(banks['locations'])}", "Employment type: Full-time, permanent", "",
             "About us", fill(rng, rng.choice(banks["about_company"]), sector=sector), "",
             "About the role", fill(rng, rng.choice(banks["role_intro"]), title=occ["title"],
                                    context=occ["context"]), "",
             "Responsibilities", *(f"- {d}" for d in duties), "",
             "Requirements", f"- {rng.choice(occ['degree'])} or a related qualification",
             f"- At least {years} years of relevant experience in {occ['context']}",
             f"- Skills in {_join(core)}",
             f"- Experience with {secondary} is an advantage",
             f"- {rng.choice(banks['traits'])}", "",
             "What we offer", *(f"- {o}" for o in offers), ""]
    job = {"job_id": job_id, "occupation": occ["title"], "industry": occ["industry"],
           "gender_dominance": occ["dominance"], "text": "\n".join(lines)}
    return job, {"years": years, "core": core, "secondary": secondary}


def _role(title: str, employer: str, start: int, end: int | None, bullets: list[str]) -> list[str]:
    span = f"{start} – {'present' if end is None else end}"
    return [f"{title}, {employer}, {span}", *(f"- {b}" for b in bullets), ""]


def make_resume(occ: dict[str, Any], banks: dict[str, Any], job: dict[str, Any], need: dict[str, Any],
                index: int) -> dict[str, Any]:
    """The neutral resume of one job: its own sample of bullets, one minor weakness, the marker section."""
    rng = random.Random(f"{SEED}:resume:{job['job_id']}")
    short_of_years = index % 2 == 1  # alternate the two kinds of weakness
    years = need["years"] - 1 if short_of_years else need["years"] + rng.randint(0, 1)
    years = max(years, 1)
    skills = list(need["core"])
    extra = [s for s in occ["core"] if s not in skills]
    skills += rng.sample(extra, 1)
    if short_of_years:
        skills.append(need["secondary"])
        weakness = f"{years} years of experience against {need['years']} required"
    else:
        weakness = f"no experience with {need['secondary']}, named as an advantage"
    rng.shuffle(skills)
    summary = " ".join([
        fill(rng, rng.choice(banks["summary_openers"]), title=occ["title"], years=years, context=occ["context"],
             skill1=skills[0], skill2=skills[1]),
        fill(rng, rng.choice(banks["summary_skills"]), skill1=skills[1], skill2=skills[2], skill3=skills[3]),
        rng.choice(banks["summary_closers"])])
    bullets = [fill(rng, b) for b in rng.sample(occ["bullets"], 10)]
    generic = [fill(rng, b) for b in rng.sample(banks["generic_bullets"], 2)]
    current = max(1, years - rng.randint(1, 2)) if years >= 2 else years
    sector = occ["industry"].lower()
    employers = rng.sample(banks["employers"], 2)
    start = END_YEAR - current
    lines = ["Professional Summary", summary, "", rng.choice(banks["experience_headers"])]
    lines += _role(occ["title"], fill(rng, employers[0], sector=sector), start, None,
                   bullets[:6] + generic[:1])
    if years > current:
        junior = rng.choice(occ["juniors"])
        lines += _role(junior, fill(rng, employers[1], sector=sector), start - (years - current), start,
                       bullets[6:10] + generic[1:])
        start -= years - current
    else:
        lines += [f"Internship, {fill(rng, employers[1], sector=sector)}, {start - 1}",
                  *(f"- {b}" for b in bullets[6:9]), ""]
    degree = rng.choice(occ["degree"])
    school = rng.choice(banks["universities" if degree.startswith("Bachelor") else "colleges"])
    lines += [rng.choice(banks["education_headers"]), f"{degree}, {school}, {start - rng.randint(0, 1)}",
              f"- {rng.choice(occ['projects'])}", "",
              "Certifications", *(f"- {c}" for c in rng.sample(occ["certs"], rng.randint(1, 2))), "",
              rng.choice(banks["skills_headers"]), "; ".join(s[0].upper() + s[1:] for s in skills), "", SECTION]
    return {"job_id": job["job_id"], "weakness": weakness, "text": "\n".join(lines)}


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    banks = yaml.safe_load(BANKS.read_text(encoding="utf-8"))
    jobs, resumes = [], []
    for occ in banks["occupations"]:
        for index in range(1, JOBS_PER_OCCUPATION + 1):
            job, need = make_job(occ, banks, index)
            jobs.append(job)
            resumes.append(make_resume(occ, banks, job, need, index))
    return jobs, resumes


def check(jobs: list[dict[str, Any]], resumes: list[dict[str, Any]]) -> dict[str, Any]:
    """Lengths, the largest pairwise 5-gram Jaccard, and the lint (raises on a finding)."""
    from counterbench.builtin.hiring.data import ResumeTemplate, load_baskets
    from counterbench.builtin.hiring.lint import check_templates
    from counterbench.builtin.hiring.overlap import max_pairwise_overlap

    check_templates([ResumeTemplate(r["job_id"], r["text"]) for r in resumes], load_baskets().baskets)
    lengths = sorted(len(r["text"]) for r in resumes)
    return {"resume_chars_min": lengths[0], "resume_chars_median": lengths[len(lengths) // 2],
            "resume_chars_max": lengths[-1],
            "job_chars_median": sorted(len(j["text"]) for j in jobs)[len(jobs) // 2],
            "max_job_overlap": max_pairwise_overlap([j["text"] for j in jobs]),
            "max_resume_overlap": max_pairwise_overlap([r["text"] for r in resumes])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report lengths and overlaps, write nothing")
    args = parser.parse_args(argv)
    jobs, resumes = build()
    print(json.dumps(check(jobs, resumes), indent=1))
    if not args.check:
        for name, rows in (("jobs.jsonl", jobs), ("resumes.jsonl", resumes)):
            (DATA / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
