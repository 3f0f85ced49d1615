"""Augmentation keeps everything but the Additional Information section; the lint catches identity terms."""

from __future__ import annotations

import pytest

from counterbench.builtin.hiring.data import ResumeTemplate, load_baskets, load_jobs, load_resumes
from counterbench.builtin.hiring.lint import LintFinding, basket_terms, check_templates, lint_template, load_lint_terms
from counterbench.builtin.hiring.prompting import ablation_conditions, resume_table
from counterbench.builtin.hiring.resumes import cumulative_conditions, fill, neutral_resume, outside_section
from counterbench.errors import UserError


def test_every_generated_resume_differs_from_its_neutral_one_only_inside_additional_information():
    jobs, templates, baskets = load_jobs(), load_resumes(), load_baskets()
    table = resume_table(jobs, templates, baskets, ablation_conditions())
    neutral = table[table["group"].eq("neutral")].set_index("job_id")["text"]
    values = {v for b in baskets.baskets for v in b.markers.values()}
    assert len(table) == len(jobs) * (1 + 40 * len(ablation_conditions()))
    for rec in table.itertuples():
        base = neutral[rec.job_id]
        assert outside_section(rec.text) == base, rec.resume_id
        if rec.condition == "none" or rec.group == "neutral":
            assert rec.text == base
            continue
        # inside the section: the heading, then one "Label: marker" line per kept category, nothing else
        extra = [line for line in rec.text.split("\n") if line not in base.split("\n")]
        assert extra[0] == "Additional Information"
        kept = rec.categories.split("+")
        assert len(extra) == 1 + len(kept)
        assert all(line.split(": ", 1)[1] in values for line in extra[1:])
        assert "[" not in rec.text  # no placeholder left
    per_job = table[table["condition"].isin(["neutral", "all"])].groupby("job_id").size()
    assert set(per_job) == {41}


def test_builtin_templates_pass_the_lint():
    check_templates(load_resumes(), load_baskets().baskets)


@pytest.mark.parametrize(
    ("planted", "category"),
    [
        ("Name: Priya Kumar", "name"),
        ("Led the team while she completed a certificate.", "pronoun"),
        ("Nationality: Singaporean", "nationality"),
        ("Enjoys weekend sessions with a Wushu team.", "basket"),
        ("Reference available from John on request.", "name"),
        ("His manager praised the audit.", "pronoun"),
    ],
)
def test_lint_catches_a_planted_name_pronoun_nationality_or_marker(planted, category):
    template = load_resumes()[0]
    lines = template.text.split("\n")
    lines.insert(2, planted)
    findings = lint_template("\n".join(lines), load_baskets().baskets)
    assert category in {f.category for f in findings}
    assert all(f.line == 3 for f in findings)
    with pytest.raises(UserError, match=f"carries a {category}|carries a"):
        check_templates([ResumeTemplate("bad", "\n".join(lines))], load_baskets().baskets)


def test_lint_does_not_flag_words_that_only_contain_a_term():
    text = "Professional Summary\nThe chemistry lab assistant (heritage project).\nShepherd the handover.\n"
    assert lint_template(text, load_baskets().baskets) == []


def test_every_term_is_found_planted_whole_and_none_inside_a_longer_word():
    """A line is screened by one pattern of all the terms before the term-by-term search: that screen must
    pass every term (any case, any spacing, beside punctuation) and none glued into a longer word."""
    baskets = load_baskets().baskets
    lists = load_lint_terms().lists
    terms = [(c, t) for c, key in (("pronoun", "pronouns"), ("nationality", "nationality"), ("name", "first_names"))
             for t in lists[key]] + [("basket", t) for t in sorted(basket_terms(baskets))]
    for category, term in terms:
        spaced = term.upper().replace(" ", " \t ")
        found = lint_template(f"Summary\nWorked ({spaced}), then left.", baskets)
        assert LintFinding(category, term, 2) in found, (category, term, found)
        glued = lint_template(f"Summary\nWorked x{term.replace(' ', '')}y then left.", baskets)
        assert not [f for f in glued if f.term == term], (term, glued)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Skills\nExcel\n", "exactly one 'Additional Information'"),
        ("Additional Information\nLanguages: [LANGUAGES]\nHobbies: [HOBBIES]\n", "lacks"),
        ("Summary [HOBBIES]\n\nAdditional Information\nLanguages: [LANGUAGES]\nCo-curricular Activities: [ACTIVITIES]\n"
         "Volunteering: [VOLUNTEERING]\nHobbies: [HOBBIES]", "appears twice|outside"),
        ("Additional Information\nLanguages: [LANGUAGES] [HOBBIES]\n", "2 placeholders"),
    ],
)
def test_malformed_templates_are_user_errors(text, message):
    with pytest.raises(UserError, match=message):
        neutral_resume(text)


def test_ablation_order_is_configurable_and_checked():
    steps = cumulative_conditions(("languages", "hobbies", "activities", "volunteering"))
    assert [len(kept) for _, kept in steps] == [4, 3, 2, 1, 0]
    assert "languages" not in steps[1][1]
    with pytest.raises(UserError, match="once"):
        cumulative_conditions(("hobbies", "hobbies", "activities", "languages"))
    template = load_resumes()[0].text
    markers = load_baskets().baskets[0].markers
    assert fill(template, markers, ()) == neutral_resume(template)
    with pytest.raises(UserError, match="unknown marker category"):
        fill(template, markers, ("names",))
