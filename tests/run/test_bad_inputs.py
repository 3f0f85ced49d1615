"""Every bad input of the adversarial test: one line on stderr, exit 2, no file left behind.

The CLI's ``main`` runs in this process (the same code path as the console script, without the
interpreter start-up); each case starts in an empty folder holding only its own input files, and
that folder must look the same afterwards. The study-file cases (non-UTF-8 YAML, null and list
profile values, duplicate keys, shared ``id_infix``, anchor bombs) belong to the study loader's tests.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from counterbench.cli import main
from counterbench.table_files import write_table
from tests.run.conftest import make_prompts

Setup = Callable[[Path], list[str]]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["counterbench", *args])
    with pytest.raises(SystemExit) as info:
        main()
    _, err = capsys.readouterr()
    return int(info.value.code or 0), err


def _prompts_file(folder: Path, name: str = "p.parquet") -> str:
    return str(write_table(make_prompts(4), folder / name))


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env_file(folder: Path) -> list[str]:
    (folder / "keys.env").write_bytes(b"OPENAI_API_KEY=\xff\xfe\x00abc\n")
    return ["run", "--prompts", _prompts_file(folder), "--model", "openai:gpt-4o-mini", "--env-file", "keys.env"]


def _random_import(folder: Path) -> list[str]:
    (folder / "run.jsonl").write_bytes(bytes(range(256)) * 8)
    return ["import", "run.jsonl", "--store", "new.db"]


def _not_json_import(folder: Path) -> list[str]:
    (folder / "run.jsonl").write_text('{"id": 1, "response": "### 5 INR"}\n{not json\n', encoding="utf-8")
    return ["import", "run.jsonl", "--store", "new.db"]


def _dataset_only_import(folder: Path) -> list[str]:
    (folder / "data.jsonl").write_text('{"id": "x", "prompt": "hello"}\n', encoding="utf-8")
    return ["import", "data.jsonl", "--store", "new.db"]


def _list_user(folder: Path) -> list[str]:
    (folder / "p.jsonl").write_text('{"prompt_id": "a", "system": "s", "user": ["list"]}\n', encoding="utf-8")
    return ["run", "--prompts", "p.jsonl", "--model", "sim:fair", "--store", "new.db"]


def _refused_connection(folder: Path) -> list[str]:
    model = f"openai-compatible:http://127.0.0.1:{_refused_port()}/v1:fake"
    return ["run", "--prompts", _prompts_file(folder), "--model", model, "--store", "new.db", "--max-attempts", "2",
            "--no-progress"]


def _report_into_a_folder(folder: Path) -> list[str]:
    (folder / "out.html").mkdir()
    return ["report", "--store", "missing.db", "--out", "out.html"]


def _sim(*extra: str) -> Setup:
    def setup(folder: Path) -> list[str]:
        return ["run", "--prompts", _prompts_file(folder), "--model", "sim:fair", "--store", "new.db", *extra]

    return setup


def _study(*extra: str) -> Setup:
    return lambda folder: ["run", "rupeebias", "--model", "sim:fair", "--store", "new.db", *extra]


CASES: dict[str, tuple[Setup, str]] = {
    "non-UTF-8 --env-file": (_env_file, "is not UTF-8 text"),
    "import of random bytes": (_random_import, "not UTF-8 text"),
    "import of broken JSON lines": (_not_json_import, "not valid JSON"),
    "import of a dataset file only": (_dataset_only_import, "no release run files found"),
    "--sample-seed -1 with --sample-slots": (_study("--sample-slots", "2", "--sample-seed", "-1"),
                                             "--sample-seed must be 0 or more"),
    "--question-variant abc": (_study("--question-variant", "abc"), "Invalid value for '--question-variant'"),
    "--sample-slots 0": (_study("--sample-slots", "0"), "--sample-slots must be at least 1"),
    "--concurrency x": (_sim("--concurrency", "x"), "Invalid value for '--concurrency'"),
    "an unknown option": (_sim("--frobnicate"), "No such option: --frobnicate"),
    "--temperature nan": (_sim("--temperature", "nan"), "--temperature must be a number"),
    "--temperature inf": (_sim("--temperature", "inf"), "--temperature must be a number"),
    "--timeout inf": (_sim("--timeout", "inf"), "--timeout must be a number"),
    "--rpm nan": (_sim("--rpm", "nan"), "--rpm must be a number greater than 0"),
    "--tpm -inf": (_sim("--tpm", "-inf"), "--tpm must be a number greater than 0"),
    "--max-cost nan": (_sim("--max-cost", "nan"), "--max-cost must be a number"),
    "--retry-max-tokens without --retry-errors": (_sim("--retry-max-tokens", "512"), "add --retry-errors"),
    "--retry-max-tokens below --max-tokens": (_sim("--retry-errors", "--retry-max-tokens", "8"), "above --max-tokens"),
    "a JSONL prompt whose user is a list": (_list_user, "'user' must be text, got a list"),
    "connection refused": (_refused_connection, "could not use this model"),
    "report --out a folder": (_report_into_a_folder, "does not exist"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_two_and_leaves_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    setup, expected = CASES[case]
    args = setup(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    code, err = _cli(args, capsys, monkeypatch)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("counterbench: error: "), err
    assert expected in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing created, nothing left behind


def test_report_into_a_folder_with_a_real_store_leaves_no_temp_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import counterbench
    from counterbench.run import run_prompts

    table = counterbench.prompts("rupeebias", language="en", use_case="salary_estimation", axis="Gender",
                                 question_variant=1, profile="P01")
    run_prompts(table, ["sim:biased"], store=tmp_path / "cb.db")
    (tmp_path / "out.html").mkdir()
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, err = _cli(["report", "--store", "cb.db", "--out", "out.html"], capsys, monkeypatch)
    assert code == 2 and "it is a folder" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
