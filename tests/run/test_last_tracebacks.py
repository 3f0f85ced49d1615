"""The last tracebacks and leftovers: each is one line, exit 2, and nothing is left beside a refused store."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from counterbench.run import run_prompts
from tests.run.conftest import cli, make_prompts, one_error_line


@pytest.fixture(scope="module")
def corrupt_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store in WAL mode whose pages past the first are scrambled (the header still says SQLite)."""
    folder = tmp_path_factory.mktemp("corrupt")
    good = folder / "good.db"
    run_prompts(make_prompts(400), ["sim:fair"], store=good)
    data = bytearray(good.read_bytes())
    rng = random.Random(1)
    for offset in range(4096, len(data), 4096):
        data[offset:offset + 200] = bytes(rng.randrange(256) for _ in range(200))
    bad = folder / "bad.db"
    bad.write_bytes(bytes(data))
    return bad


def _alone(store: Path) -> None:
    assert sorted(p.name for p in store.parent.iterdir() if p.name.startswith(store.name)) == [store.name]


@pytest.mark.parametrize("args", [["view", "--port", "0"], ["export", "--out", "x.csv"],
                                  ["run", "rupeebias", "--preset", "quick", "-m", "sim:fair"]],
                         ids=["view", "export", "run"])
def test_a_corrupted_store_is_one_line_and_gets_no_wal_or_shm(corrupt_store: Path, tmp_path: Path,
                                                               args: list[str]) -> None:
    before = corrupt_store.read_bytes()
    line = one_error_line(cli(*args, "--store", str(corrupt_store), cwd=tmp_path, timeout=120))
    assert "corrupted" in line and str(corrupt_store) in line
    _alone(corrupt_store)
    assert corrupt_store.read_bytes() == before  # left untouched, as the message says
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("value", ["1e400", "-1e400", "nan", "2.5", "0"])
def test_a_requested_max_tokens_that_is_no_whole_number_is_one_line(tmp_path: Path, value: str) -> None:
    table = make_prompts(2)
    table.to_csv(tmp_path / "p.csv", index=False)
    text = (tmp_path / "p.csv").read_text().splitlines()
    text = [text[0] + ",requested_max_tokens"] + [line + f",{value}" for line in text[1:]]
    (tmp_path / "p.csv").write_text("\n".join(text) + "\n")
    line = one_error_line(cli("run", "--prompts", "p.csv", "-m", "sim:fair", "--store", "s.db", cwd=tmp_path))
    assert "requested_max_tokens must be a whole number of at least 1" in line
    assert not list(tmp_path.glob("s.db*"))


def test_a_latin1_jobs_file_for_hiring_resumes_is_one_line(tmp_path: Path) -> None:
    job = {"job_id": "J1", "occupation": "Café manager", "industry": "Food", "gender_dominance": "neutral",
           "text": "Runs the café"}
    (tmp_path / "jobs.jsonl").write_bytes((json.dumps(job, ensure_ascii=False) + "\n").encode("latin-1"))
    line = one_error_line(cli("hiring", "resumes", "-m", "sim:fair", "--jobs", "jobs.jsonl", "--out", "r.jsonl",
                              cwd=tmp_path))
    assert "jobs.jsonl line 1: not UTF-8 text" in line
