"""Oracle test (spec §1): the built-in RupeeBias prompts against the published release.

``../shared/reference/rupeebias/*.json`` (relative to the repository root) is a transcription of the
authors' release: identifiers, base profiles, templates and question variants, and how the release
generated and numbered its rows. The test renders the release's 39,150 prompts from those files, pairs
them with ours by (use case, language, row number) and counts the identical ones. Every mismatch must be
explained by one of the documented known differences below (docs/rupeebias.md, "Differences from the
released prompts"): each rule rewrites the release's text in one respect only, and after the rules
that apply the two texts must be identical. The reference files are read here, at test time, and never
copied into the project. The tests are skipped when the files are absent.

Run with ``-s`` to see the agreement table.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from counterbench.prompts import build_prompts
from counterbench.studies.declarative import render
from counterbench.studies.registry import load_study

REPO = Path(__file__).resolve().parents[2]
REF = REPO.parent / "shared" / "reference" / "rupeebias"
pytestmark = pytest.mark.skipif(
    not all((REF / f).is_file() for f in ("identifiers.json", "profiles.json", "templates.json")),
    reason=f"RupeeBias reference files not found in {REF}",
)

LANG_SUFFIX = {"en": "en", "hinglish": "hinglish"}
INFIX = {"en": "en", "hinglish": "hi"}
#: release profile field -> our field (the release prints these under other names)
FIELD_NAMES = {
    "experience_years": "experience",
    "current_ctc_lpa": "current_ctc",
    "offered_ctc_lpa": "offered_ctc",
    "rating_value": "rating",
    "min_review_count": "reviews",
}

# What the comparison must show (docs/rupeebias.md): identical prompts per (use case, language), out of
# 4,698 / 7,047 / 4,698 / 1,566 / 1,566 per language.
EXPECTED_IDENTICAL = {
    ("salary_estimation", "en"): 4698,
    ("salary_estimation", "hinglish"): 4698,
    ("salary_increment_estimation", "en"): 6264,
    ("salary_increment_estimation", "hinglish"): 261,
    ("counter_offer_recommendation", "en"): 4698,
    ("counter_offer_recommendation", "hinglish"): 0,
    ("service_pricing_vendor", "en"): 1566,
    ("service_pricing_vendor", "hinglish"): 0,
    ("service_pricing_customer", "en"): 1566,
    ("service_pricing_customer", "hinglish"): 0,
}
# prompts each known difference accounts for (a prompt may show several)
EXPECTED_RULE_COUNTS = {
    "customer_escalation": 783,
    "hinglish_achievement_texts": 6264,
    "hinglish_increment_questions": 4698,
    "hinglish_counter_offer_template": 4698,
    "hinglish_service_descriptions": 3132,
}


# --- the release, rendered from the reference files --------------------------------------------


def _load(name: str) -> dict[str, Any]:
    return json.loads((REF / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class ReleaseRow:
    use_case: str  # our name (service_pricing_client -> service_pricing_customer)
    task: str  # the release's name
    language: str
    number: int
    identifier: dict[str, Any]
    profile_index: int
    profile: dict[str, Any]
    qv_index: int
    question: str
    fields: dict[str, Any]  # the values the release's template is filled with
    text: str


def release_rows() -> list[ReleaseRow]:
    """Render the release's prompts as its generators did (templates.json: generation_order)."""
    study = load_study("rupeebias")
    identifiers = _load("identifiers.json")["identifiers"]
    profiles = _load("profiles.json")
    templates = _load("templates.json")
    assert [i["global_index"] for i in identifiers] == list(range(1, 88))
    rows: list[ReleaseRow] = []
    for task, spec in templates["tasks"].items():
        for lang, lspec in spec["languages"].items():
            suffix = "_" + LANG_SUFFIX[lang]
            number = 0
            for ident in identifiers:
                for p_index, profile in enumerate(profiles[task]["profiles"]):
                    for q_index, qv in enumerate(lspec["question_variants"], start=1):
                        number += 1
                        fields = {
                            (k[: -len(suffix)] if k.endswith(suffix) else k): v
                            for k, v in profile.items()
                            if not k.endswith(("_en", "_hinglish")) or k.endswith(suffix)
                        }
                        fields["identifier_phrase"] = ident["phrase" + suffix]
                        fields["client_identifier_phrase"] = ident["client_phrase" + suffix]
                        fields["question"] = qv["text"]
                        rows.append(
                            ReleaseRow(
                                use_case=study.canonical_use_case(task),
                                task=task,
                                language=lang,
                                number=number,
                                identifier=ident,
                                profile_index=p_index,
                                profile=profile,
                                qv_index=q_index,
                                question=qv["text"],
                                fields=fields,
                                text=render(lspec["template"], fields),
                            )
                        )
            assert number == spec["rows_per_language"]
    return rows


# --- the documented known differences -----------------------------------------------------------


@dataclass(frozen=True)
class KnownDifference:
    key: str
    use_cases: tuple[str, ...]
    languages: tuple[str, ...]
    doc: str
    #: rewrite the release's text in this one respect (given the release row and our study)
    apply: Callable[[str, ReleaseRow, Any], str]


def _ours(study: Any, row: ReleaseRow) -> Any:
    return study.definition.use_cases[row.use_case]


def _swap_achievement(text: str, row: ReleaseRow, study: Any) -> str:
    ours = _ours(study, row).profiles[row.profile_index]["achievement_text"][row.language]
    return text.replace(row.fields["achievement_text"], ours)


def _swap_question(text: str, row: ReleaseRow, study: Any) -> str:
    ours = _ours(study, row).question_variants[row.language][row.qv_index - 1]
    return text[: -len(row.question)] + ours if text.endswith(row.question) else text


def _our_template(text: str, row: ReleaseRow, study: Any) -> str:
    values = {FIELD_NAMES.get(k, k): v for k, v in row.fields.items()}
    return render(_ours(study, row).templates[row.language], values)


def _swap_service_description(text: str, row: ReleaseRow, study: Any) -> str:
    ours = _ours(study, row).profiles[row.profile_index]["service_description"][row.language]
    return text.replace(row.fields["service_description"], ours)


KNOWN_DIFFERENCES = (
    KnownDifference(
        "customer_escalation",
        ("salary_increment_estimation",),
        ("en",),
        "TCS strong achievement: paper Table 11 'critical customer escalation', release 'critical client escalation'",
        lambda text, row, study: text.replace("critical client escalation", "critical customer escalation"),
    ),
    KnownDifference(
        "hinglish_achievement_texts",
        ("salary_increment_estimation",),
        ("hinglish",),
        "Hinglish achievement texts: the project's own (the paper prints only Google India/weak)",
        _swap_achievement,
    ),
    KnownDifference(
        "hinglish_increment_questions",
        ("salary_increment_estimation",),
        ("hinglish",),
        "Hinglish increment Q2/Q3: paper Table 18 'kitne ... target', '... hike aim karna'; release "
        "'kitna ... target', '... hike ke liye aim karna'",
        _swap_question,
    ),
    KnownDifference(
        "hinglish_counter_offer_template",
        ("counter_offer_recommendation",),
        ("hinglish",),
        "Hinglish counter-offer template: paper Table 18 'Mujhe {experience} saal ka software engineer ka "
        "experience hai.'; the release words the experience clause differently",
        _our_template,
    ),
    KnownDifference(
        "hinglish_service_descriptions",
        ("service_pricing_vendor", "service_pricing_customer"),
        ("hinglish",),
        "Hinglish service descriptions: English as in paper Table 18's examples; the release partly "
        "translates them ('ek ...', 'aur', 'ke liye')",
        _swap_service_description,
    ),
)


def classify(row: ReleaseRow, ours_text: str, study: Any) -> tuple[str, ...] | None:
    """The known differences that turn the release's text into ours, or None if they do not suffice."""
    text, used = row.text, []
    for rule in KNOWN_DIFFERENCES:
        if row.use_case in rule.use_cases and row.language in rule.languages:
            new = rule.apply(text, row, study)
            if new != text:
                used.append(rule.key)
                text = new
    return tuple(used) if text == ours_text else None


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def study():
    return load_study("rupeebias")


@pytest.fixture(scope="module")
def comparison(study) -> dict[str, Any]:
    ours = build_prompts("rupeebias")
    ours_by_key = {
        (uc, lang, int(pid[-5:])): text
        for uc, lang, pid, text in zip(ours["use_case"], ours["language"], ours["prompt_id"], ours["user"], strict=True)
    }
    rel = release_rows()
    assert len(rel) == len(ours) == 39_150
    identical: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    rule_counts: Counter[str] = Counter()
    categories: Counter[tuple[str, str, tuple[str, ...]]] = Counter()
    unexplained: list[tuple[ReleaseRow, str]] = []
    for row in rel:
        key = (row.use_case, row.language)
        total[key] += 1
        mine = ours_by_key[(row.use_case, row.language, row.number)]
        if mine == row.text:
            identical[key] += 1
            continue
        used = classify(row, mine, study)
        if used is None:
            unexplained.append((row, mine))
            continue
        categories[(*key, used)] += 1
        rule_counts.update(used)
    table = pd.DataFrame(
        [
            {
                "use_case": uc,
                "language": lang,
                "prompts": total[(uc, lang)],
                "identical": identical[(uc, lang)],
                "agreement_%": round(100 * identical[(uc, lang)] / total[(uc, lang)], 1),
            }
            for uc, lang in total
        ]
    )
    print("\nRupeeBias: built-in prompts identical to the release's, by (use case, language, row number)")
    print(table.to_string(index=False))
    print("mismatches by known difference(s):")
    for (uc, lang, used), n in categories.items():
        print(f"  {uc:30s} {lang:9s} {' + '.join(used):70s} {n:6d}")
    return {
        "identical": identical,
        "total": total,
        "rules": rule_counts,
        "categories": categories,
        "unexplained": unexplained,
        "ours": ours,
    }


# --- the oracle ---------------------------------------------------------------------------------


def test_every_mismatch_is_a_documented_difference(comparison):
    unexplained = comparison["unexplained"]
    if unexplained:
        row, mine = unexplained[0]
        pytest.fail(
            f"{len(unexplained)} prompt(s) differ from the release in an undocumented way; first: "
            f"{row.use_case} {row.language} row {row.number}\nrelease: {row.text!r}\nours:    {mine!r}"
        )


def test_agreement_per_use_case_and_language(comparison):
    identical, total = comparison["identical"], comparison["total"]
    assert dict(identical) | {k: 0 for k in total if k not in identical} == EXPECTED_IDENTICAL


def test_english_agreement(comparison):
    identical, total = comparison["identical"], comparison["total"]
    en = [k for k in total if k[1] == "en"]
    overall = sum(identical[k] for k in en) / sum(total[k] for k in en)
    assert overall >= 0.95  # spec §1: 18,792 / 19,575 = 96.0%
    for key in en:
        share = identical[key] / total[key]
        if key[0] == "salary_increment_estimation":
            # The one English difference the project keeps on purpose: the paper's "customer" in the TCS
            # strong achievement text (3 of 27 profiles), so 24/27 = 88.9% (docs/rupeebias.md).
            assert share == pytest.approx(24 / 27)
        else:
            assert share >= 0.95, key


def test_known_difference_counts(comparison):
    assert dict(comparison["rules"]) == EXPECTED_RULE_COUNTS
    # each rule stays inside its documented scope
    for (uc, lang, used), _n in comparison["categories"].items():
        for key in used:
            rule = next(r for r in KNOWN_DIFFERENCES if r.key == key)
            assert uc in rule.use_cases and lang in rule.languages


def test_ids_match_the_release_numbering(comparison):
    ours = comparison["ours"]
    for (uc, lang), group in ours.groupby(["use_case", "language"], sort=False):
        task = "service_pricing_client" if uc == "service_pricing_customer" else uc
        release_ids = [f"{task}_{INFIX[lang]}_{n:05d}" for n in range(1, len(group) + 1)]
        ours_ids = [pid.replace("service_pricing_customer", "service_pricing_client") for pid in group["prompt_id"]]
        assert ours_ids == release_ids


# --- components ---------------------------------------------------------------------------------


def test_identifiers_match_the_release(study):
    release = _load("identifiers.json")
    ours = study.definition.identifiers
    assert list(study.definition.axes) == release["axis_order"]
    assert {a: len(v) for a, v in study.definition.axes.items()} == release["counts_per_axis"]
    renamed = {}
    for mine, theirs in zip(ours, release["identifiers"], strict=True):
        assert mine.axis == theirs["axis"]
        assert mine.phrases == {"en": theirs["phrase_en"], "hinglish": theirs["phrase_hinglish"]}
        en = study.identifier_forms(mine, "en")["client_identifier_phrase"]
        hi = study.identifier_forms(mine, "hinglish")["client_identifier_phrase"]
        assert en == "who " + theirs["client_phrase_en"]  # the release's template supplies "who"
        assert hi == theirs["client_phrase_hinglish"]
        if mine.value != theirs["value"]:
            renamed[mine.value] = theirs["value"]
    # documented: Table 16's value names vs the release's shorter ones (prompt text is the same)
    assert renamed == {"Shia Muslim": "Shia", "Sunni Muslim": "Sunni"}


def test_profiles_match_the_release_facts(study):
    release = _load("profiles.json")
    checks = {
        "salary_estimation": {"institution": "institution", "cgpa": "cgpa", "institution_type": "ownership"},
        "salary_increment_estimation": {
            "experience": "experience_years",
            "company": "company",
            "current_ctc": "current_ctc_lpa",
            "achievement": "achievement_level",
        },
        "counter_offer_recommendation": {
            "experience": "experience_years",
            "company": "company",
            "offer_strength": "offer_strength",
            "offered_ctc": "offered_ctc_lpa",
            "market_ctc": "market_rate_ctc_lpa",
        },
        "service_pricing_vendor": {
            "service": "service",
            "rating_tier": "rating_tier",
            "rating": "rating_value",
            "reviews": "min_review_count",
        },
    }
    checks["service_pricing_customer"] = checks["service_pricing_vendor"]
    for uc, fields in checks.items():
        task = "service_pricing_client" if uc == "service_pricing_customer" else uc
        theirs = release[task]["profiles"]
        mine = study.definition.use_cases[uc].profiles
        assert len(mine) == len(theirs) == release[task]["count"]
        for p, q in zip(mine, theirs, strict=True):
            assert p["profile_id"][1:] == q["profile_id"][1:]  # P01 vs the release's P/R/N/S01
            for ours_key, their_key in fields.items():
                assert p[ours_key] == q[their_key], (uc, p["profile_id"], ours_key)
    # English texts shown to the model
    inc = study.definition.use_cases["salary_increment_estimation"].profiles
    for p, q in zip(inc, release["salary_increment_estimation"]["profiles"], strict=True):
        theirs = q["achievement_text_en"].replace("critical client escalation", "critical customer escalation")
        assert p["achievement_text"]["en"] == theirs
    for p, q in zip(_ours_service(study), release["service_pricing_vendor"]["profiles"], strict=True):
        assert p["service_description"]["en"] == q["service_description_en"]
        assert p["rating_phrase"] == {"en": q["rating_phrase_en"], "hinglish": q["rating_phrase_hinglish"]}


def _ours_service(study):
    return study.definition.use_cases["service_pricing_vendor"].profiles


def test_templates_and_questions_match_the_release(study):
    tasks = _load("templates.json")["tasks"]
    documented = {
        ("salary_increment_estimation", "hinglish"): "questions",
        ("counter_offer_recommendation", "hinglish"): "template",
    }
    for task, spec in tasks.items():
        uc = study.definition.use_cases[study.canonical_use_case(task)]
        for lang, lspec in spec["languages"].items():
            theirs = [q["text"] for q in lspec["question_variants"]]
            ours = list(uc.question_variants[lang])
            if documented.get((uc.name, lang)) == "questions":
                assert ours[0] == theirs[0] and ours[1:] != theirs[1:]
            else:
                assert ours == theirs, (task, lang)
            template = lspec["template"]
            for old, new in FIELD_NAMES.items():
                template = template.replace("{" + old + "}", "{" + new + "}")
            if uc.name == "service_pricing_customer" and lang == "en":
                template = template.replace("who {client_identifier_phrase}", "{client_identifier_phrase}")
            if documented.get((uc.name, lang)) == "template":
                assert uc.templates[lang] != template
            else:
                assert uc.templates[lang] == template, (task, lang)


def test_system_prompts_match_the_release(study):
    templates = _load("templates.json")
    main_py = templates["system_prompts_main_py"]
    mapping = {"salary": "salary_inr", "hike": "hike_percent", "price": "project_price_inr"}
    for ours, theirs in mapping.items():
        assert study.definition.system_prompts[ours] == main_py[theirs]
    # the runs recorded an indented copy: the same text line by line
    recorded = templates["system_prompts_as_recorded_in_runs"]
    for theirs, text in recorded.items():
        if theirs.startswith("_"):
            continue
        ours = {"salary_inr": "salary", "hike_percent": "hike"}.get(theirs, "price")
        assert [ln.strip() for ln in text.split("\n")] == [
            ln.strip() for ln in study.definition.system_prompts[ours].split("\n")
        ]
    for task, key in templates["task_to_system_prompt"].items():
        assert study.system_prompt_for(task) == main_py[key]
    fair = templates["fairness_instruction"]
    assert study.system_prompt_for("salary_estimation", "fairness") == main_py["salary_inr"] + "\n\n" + fair["text"]
