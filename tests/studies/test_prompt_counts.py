"""A study's prompt counts without its prompts (:mod:`counterbench.studies.counts`, what ``counterbench studies``
lists) equal those of its full table, ``expand()``: for every registered study, every example study file, the
data-file studies over a fixture, and other designs of the studies that count from their design (hiring plans,
STEM designs, a declarative study's blocks); a study that cannot expand raises the same one-line mistake."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from counterbench.errors import UserError
from counterbench.studies.counts import PromptCounts, prompt_counts
from counterbench.studies.hooks import hook
from counterbench.studies.registry import STUDIES, _load_file
from tests.conftest import REPO, run_cli_here

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def _fresh(source: str | Path) -> Any:
    """A new study object, not the registry's cached one (whose table an earlier test may have built, which
    its counts would then read)."""
    made = STUDIES.build(source, f"study {source}") if isinstance(source, str) else source
    if isinstance(made, str | Path):
        return _load_file.__wrapped__(str(Path(made).resolve()), 0)  # type: ignore[attr-defined]
    return made


def _same_as_the_table(make: Callable[[], Any]) -> PromptCounts | None:
    """Count a new study without its prompts, and expand another one; the counts must agree (or both raise the
    same mistake: ``None``)."""
    counting, expanding = make(), make()
    try:
        expected = PromptCounts.of(expanding.expand())
    except UserError as err:
        with pytest.raises(UserError) as raised:
            prompt_counts(counting)
        assert str(raised.value) == str(err)
        return None
    counted = prompt_counts(counting)
    assert counted == expected
    return counted


@pytest.mark.parametrize("name", STUDIES.names())
def test_every_registered_study_counts_its_table(name: str) -> None:
    _same_as_the_table(lambda: _fresh(name))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_study_file_counts_its_table(path: Path) -> None:
    counted = _same_as_the_table(lambda: _fresh(path))
    assert counted is not None and counted.prompts > 0


def test_the_built_in_studies_count_from_their_design() -> None:
    # the studies whose tables are large have their own counts (the others expand in a few milliseconds)
    for name in ("hiring", "stem", "rupeebias"):
        if name in STUDIES:
            assert hook(_fresh(name), "prompt_counts") is not None, name


def test_the_data_file_studies_count_their_table(tmp_path: Path) -> None:
    from counterbench.builtin.bbq.study import BBQStudy
    from counterbench.builtin.discrim_eval.study import DiscrimEvalStudy
    from tests.studies.test_bbq import RECORDS
    from tests.studies.test_discrim_eval import write_fixture

    bbq = tmp_path / "Age.jsonl"
    bbq.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    assert _same_as_the_table(lambda: BBQStudy(bbq)) == PromptCounts.of_rows(
        len(RECORDS), ["answer"], {f"{r['context_condition']} · {r['question_polarity']}" for r in RECORDS})
    decisions = write_fixture(tmp_path / "explicit.jsonl")
    counted = _same_as_the_table(lambda: DiscrimEvalStudy(decisions))
    assert counted is not None and counted.prompts == 10 * 3 * 3 * 5 and len(counted.identifiers) == 3 * 3 * 5


HIRING_PLANS: list[dict[str, Any]] = [  # the full plan is the registered study's
    {"jobs": 8, "settings": ["compare"]},
    {"jobs": 8, "settings": ["score"], "rationale": [True]},
    {"settings": ["recover"], "ablation": []},
    {"jobs": 8, "language_only": False, "rationale": [False], "recover_jobs": 3},
    {"jobs": 3, "variations": [1, 2], "recover_jobs": 2},
    {"jobs": ["civeng_1", "electech_1"], "recover_jobs": ["civeng_1"], "ablation": ["languages", "hobbies",
                                                                                    "activities", "volunteering"]},
    {"variations": [99]},  # no such basket: both refuse it
]


@pytest.mark.parametrize("plan", HIRING_PLANS, ids=[json.dumps(p) for p in HIRING_PLANS])
def test_hiring_plans_count_their_table(plan: dict[str, Any]) -> None:
    from counterbench.builtin.hiring.plan import full_plan, plan_from_mapping
    from counterbench.builtin.hiring.study import HiringStudy

    counted = _same_as_the_table(lambda: HiringStudy(plan_from_mapping(plan, base=full_plan())))
    assert (counted is None) == (plan == {"variations": [99]})
    assert counted is None or counted.prompts > 0


def test_a_hiring_study_file_from_other_files_counts_its_table() -> None:
    counted = _same_as_the_table(lambda: _fresh(REPO / "examples" / "kenya_hiring.yaml"))
    assert counted is not None and "neutral" in counted.identifiers


STEM_DESIGNS: list[dict[str, Any]] = [  # the paper's design is the registered study's
    {"contexts": ["india"], "progressive": [], "single_attribute": [], "profiles": 5},
    {"contexts": ["usa"], "tasks": ["ranking"], "roles": ["teacher"], "profiles": 7, "single_attribute": ["usa"]},
    {"contexts": ["india", "usa"], "tasks": ["generation"], "profiles": 6, "progressive": ["india"],
     "math_per_subject": 1},
]


@pytest.mark.parametrize("design", STEM_DESIGNS, ids=[json.dumps(d) for d in STEM_DESIGNS])
def test_stem_designs_count_their_table(design: dict[str, Any]) -> None:
    from counterbench.builtin.stem.design import StemDesign
    from counterbench.builtin.stem.study import StemStudy

    counted = _same_as_the_table(lambda: StemStudy(StemDesign.paper(**design)))
    assert counted is not None and counted.prompts > 0


def test_studies_lists_the_counts_without_writing_a_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("`counterbench studies` built a prompt table")

    from counterbench.builtin.hiring import study as hiring
    from counterbench.builtin.stem import study as stem
    from counterbench.studies import declarative, registry

    monkeypatch.setattr(hiring, "build_prompts", refuse)
    monkeypatch.setattr(stem, "build_prompt_table", refuse)
    monkeypatch.setattr(declarative, "assemble", refuse)
    registry._load_entry.cache_clear()  # new study objects: none has its table yet
    try:
        done = run_cli_here("studies")
    finally:
        registry._load_entry.cache_clear()
    assert done.returncode == 0, done.stderr + done.stdout
    for name in STUDIES.names():
        assert name in done.stdout
