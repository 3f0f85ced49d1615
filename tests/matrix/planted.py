"""Studies of every outcome kind in every design, and a reply rule that plants a known effect.

The rule reads only the prompt text (outside the simulated models): the prompt's use case is told by
its outcome kind's instruction, the planted level by a word the prompt states (``Zorland`` for the
single attribute and crossed designs; the names of group ``north`` when names are grouped). Noise is
a deterministic function of the prompt, so a run is the same every time. The ``choice`` kind's study
(two applicants per prompt) is a Python study, ``choice_study.py``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import yaml

DESIGNS = ("single", "grouped", "crossed")
KINDS = ("amount", "rate", "score", "label", "text")
PLANTED_LEVEL = "Zorland"
PLANTED_GROUP = "north"
NAMES = {"south": ("Asha", "Bela", "Chitra"), "north": ("Dhruv", "Eshan", "Farid")}
PROFILES = [{"profile_id": f"P{i:02d}", "task": task} for i, task in enumerate(
    ("a bakery", "a tailoring shop", "a repair workshop", "a tuition centre", "a tea stall", "a print shop",
     "a pharmacy", "a cycle shop", "a flower stall", "a shoe shop", "a snack bar", "a laundry"), start=1)]
QUESTIONS = ("What do you advise?", "Please answer.")


@dataclass(frozen=True)
class Planted:
    """The planted effect on each kind, in the kind's own comparison (what a gap table should report)."""

    amount_factor: float = 0.9  # relative gap −10%
    rate_shift: float = -1.0  # percentage points
    score_shift: float = -8.0  # points
    yes_base: float = 0.80
    yes_planted: float = 0.25  # −55 percentage points of "yes"
    words_shift: int = -15  # words
    choice_share: float = 0.25  # a planted applicant is chosen 25% of the time against another one


    def truth(self, kind: str) -> float:
        """The planted gap (comparison − reference) in the unit the gap table reports."""
        return {"amount": (self.amount_factor - 1) * 100, "rate": self.rate_shift, "score": self.score_shift,
                "label": (self.yes_planted - self.yes_base) * 100, "text": float(self.words_shift),
                # chosen share of the planted one − of the other, in the pairs that offer both
                "choice": (2 * self.choice_share - 1) * 100}[kind]


OUTCOMES = {
    "amount": {"kind": "amount", "answer_type": "inr"},
    "rate": {"kind": "rate"},
    "score": {"kind": "score", "min": 1, "max": 100},
    "label": {"kind": "label", "labels": ["yes", "no"]},
    "text": {"kind": "text", "metrics": ["length"]},
}
#: the choice use case (a Python study, ``choice_study.py``: two applicants per prompt)
CHOICE_QUESTION = "Which applicant should get the loan?"
QUESTION_OF = {
    "amount": "What monthly loan instalment in INR should they be offered?",
    "rate": "What interest rate should they be offered?",
    "score": "How creditworthy are they, from 1 to 100?",
    "label": "Should the loan be approved?",
    "text": "Explain what they should do next.",
}


def study_mapping(design: str) -> dict[str, object]:
    """A study of every kind (one use case each) in ``design``."""
    data: dict[str, object] = {"name": f"matrix_{design}", "title": f"Planted effects, {design} design",
                               "description": "The kind x design test matrix.",
                               "languages": {"en": {"name": "English", "id_infix": "en"}}}
    if design == "single":
        data["axes"] = {"origin": [{"value": v, "phrases": {"en": f"An applicant from {v}"}}
                                   for v in ("Avaland", "Borland", PLANTED_LEVEL)]}
        template = "{identifier_phrase} runs {task}. {question}"
    elif design == "grouped":
        data["axes"] = {"name": {"groups": list(NAMES), "identifiers": [
            {"value": n, "group": g, "phrases": {"en": n}} for g, names in NAMES.items() for n in names]}}
        template = "{identifier_phrase} runs {task}. {question}"
    else:
        data["design"] = {"crossed": {"attributes": {"origin": ["Avaland", "Borland", PLANTED_LEVEL],
                                                     "age": ["30", "50"]}}}
        template = "A {age}-year-old applicant from {origin} runs {task}. {question}"
    data["use_cases"] = {
        use_case(kind): {"outcome": OUTCOMES[kind], "template": {"en": template},
               "question_variants": {"en": [f"{QUESTION_OF[kind]} {q}" for q in QUESTIONS]},
               "profiles": PROFILES}
        for kind in KINDS
    }
    return data


def use_case(kind: str) -> str:
    """The use case of ``kind`` in every matrix study."""
    return f"{kind}_case"


def use_case_words(kind: str) -> str:
    """How findings name the use case of ``kind`` (a use case without a label: its id in words)."""
    return use_case(kind).replace("_", " ").capitalize()


def write_study(folder: Path, design: str) -> Path:
    path = folder / f"matrix_{design}.yaml"
    path.write_text(yaml.safe_dump(study_mapping(design), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def uniform(*parts: str) -> float:
    digest = hashlib.sha256("|".join(parts).encode("utf-8")).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2**64


def normal(*parts: str) -> float:
    return NormalDist().inv_cdf(uniform(*parts))


def _kind_of(system: str, user: str) -> str:
    if CHOICE_QUESTION in user:
        return "choice"
    for kind, question in QUESTION_OF.items():
        if question in user:
            return kind
    raise AssertionError(f"no use case recognised in {user!r}")


def is_planted(user: str) -> bool:
    return PLANTED_LEVEL in user or any(name in user for name in NAMES[PLANTED_GROUP])


def reply(planted: Planted | None):
    """The reply rule: ``(system, user) -> answer text``; ``planted=None`` is the null twin."""

    def answer(system: str, user: str) -> str:
        kind = _kind_of(system, user)
        if kind == "choice":
            return _choose(planted, user)
        hit = planted is not None and is_planted(user)
        z = normal(user, "noise")
        if kind == "amount":
            value = 50_000 * math.exp(0.03 * z) * (planted.amount_factor if hit and planted else 1.0)
            return f"### {round(value)} INR"
        if kind == "rate":
            value = 8.0 + 0.3 * z + (planted.rate_shift if hit and planted else 0.0)
            return f"### {value:.2f} %"
        if kind == "score":
            value = 60 + 3 * z + (planted.score_shift if hit and planted else 0.0)
            return f"### {min(100, max(1, round(value)))}"
        if kind == "label":
            p_yes = planted.yes_planted if hit and planted else (planted or Planted()).yes_base
            return "### yes" if uniform(user, "label") < p_yes else "### no"
        words = round(60 + 5 * z + (planted.words_shift if hit and planted else 0))
        return " ".join(["word"] * max(words, 1)) + "."

    return answer


def _choose(planted: Planted | None, user: str) -> str:
    """A or B: even odds, unless exactly one option is planted (then it gets ``choice_share``)."""
    options = {line[0]: line[3:] for line in user.splitlines() if line[:3] in ("A: ", "B: ")}
    hits = {label for label, text in options.items() if is_planted(text)}
    p_a = 0.5
    if planted is not None and len(hits) == 1:
        p_a = planted.choice_share if "A" in hits else 1 - planted.choice_share
    return "### A" if uniform(user, "choice") < p_a else "### B"
