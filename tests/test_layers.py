"""Layers below the studies name no study: what only RupeeBias has (its release import, its
``rupeebias-v1`` parse and analysis profile, its languages, labels and wording) lives in
``counterbench/studies/rupeebias``; the lower layers take languages, axes, pairs and words from the
study they are given."""

from __future__ import annotations

import re

from tests.conftest import REPO

LOWER_LAYERS = ("outcomes", "run", "stats", "analyses", "report", "parse", "models")
STUDY_WORDS = re.compile(r"rupeebias|hinglish", re.IGNORECASE)
#: path (relative to src/counterbench) -> why it may name the built-in study
ALLOWED: dict[str, str] = {
    "models/sim_presets/biased.yaml": "the sim:biased preset is data: it plants the built-in study's canonical "
    "pairs on prompts of that study (keyed by its name) and a generic effect on every other study",
}


def test_lower_layers_name_no_study() -> None:
    root = REPO / "src" / "counterbench"
    hits = []
    for layer in LOWER_LAYERS:
        for path in sorted((root / layer).rglob("*")):
            if not path.is_file() or path.suffix not in (".py", ".yaml", ".yml", ".html", ".css", ".js", ".j2"):
                continue
            rel = path.relative_to(root).as_posix()
            if rel in ALLOWED:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if STUDY_WORDS.search(line):
                    hits.append(f"{rel}:{number}: {line.strip()}")
    assert not hits, "lower layers name a study:\n" + "\n".join(hits)


def test_the_allow_list_is_needed() -> None:
    root = REPO / "src" / "counterbench"
    for rel in ALLOWED:
        assert STUDY_WORDS.search((root / rel).read_text(encoding="utf-8")), f"{rel} no longer needs its exception"
