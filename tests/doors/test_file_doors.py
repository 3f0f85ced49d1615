"""Every JSONL, JSON and CSV file a user gives is read by one strict reader per format
(``counterbench.table_files``): a line nested too deep, ``NaN``/``Infinity``, a key given twice, text that is
not UTF-8, a truncated line or a line that is not an object is one line naming the file (and the line) and
exit 2, for every door — ``run --prompts``, a recovery file's ``import``, hiring's ``--jobs``/``--resumes``/
``--baskets``, DiscrimEval's and BBQ's ``--data``, STEM's ``--math``/``--jeebench``, ``verify``'s test
record, an annotation sheet, a price table and an Inspect ``.json`` log. Nothing is left behind. (YAML
files: test_yaml_doors.py.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from counterbench.builtin.hiring.annotation import annotation_sheet
from counterbench.builtin.hiring.data import load_baskets, load_resumes
from counterbench.errors import UserError, check_keys
from counterbench.run.store import open_store
from counterbench.table_files import read_csv_file, read_json_file, read_jsonl_records
from tests.conftest import REPO, run_cli_here

NAMES = REPO / "examples" / "names_groups.yaml"

#: defect -> (the file's bytes, what its one line must say)
JSONL_DEFECTS: dict[str, tuple[bytes, str]] = {
    "too deep": (b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}\n", "line 1: JSON nested deeper than 64 levels"),
    "NaN": (b'{"job_id": "j1", "a": NaN}\n', "line 1: NaN is not a JSON number"),
    "Infinity": (b'{"job_id": "j1", "a": -Infinity}\n', "line 1: -Infinity is not a JSON number"),
    "duplicate key": (b'{"job_id": "j1", "job_id": "j2"}\n', "line 1: duplicate key 'job_id'"),
    "not UTF-8": (b'{"job_id": "Z\xfcrich"}\n', "line 1: not UTF-8 text"),
    "truncated": (b'{"job_id": "j1", "text": "a r\n', "line 1: not valid JSON"),
    "not an object": (b'["job_id", "j1"]\n', "line 1: expected a JSON object"),
    "after blank lines": (b'\n  \n{"job_id": "j2",\n', "line 3: not valid JSON"),
}


def _jsonl_doors(path: Path, store: Path) -> dict[str, list[str]]:
    return {
        "run --prompts": ["run", "--prompts", str(path), "-m", "sim:fair", "--store", str(store)],
        "import (recovery file)": ["import", str(path), "--store", str(store)],
        "hiring --jobs": ["prompts", "hiring", "--jobs", str(path)],
        "hiring --resumes": ["prompts", "hiring", "--resumes", str(path)],
        "hiring --baskets (JSONL)": ["prompts", "hiring", "--baskets", str(path)],
        "discrim_eval --data": ["audit", "discrim_eval", "--data", str(path), "-m", "sim:x", "--store", str(store)],
        "bbq --data": ["audit", "bbq", "--data", str(path), "-m", "sim:fair", "--store", str(store)],
        "stem --math": ["prompts", "stem", "--math", str(path)],
        "stem --jeebench (JSONL)": ["prompts", "stem", "--jeebench", str(path)],
    }


def _one_line(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _left(folder: Path, *given: Path) -> list[str]:
    """Files in ``folder`` other than the ones the test gave."""
    return sorted(p.name for p in folder.iterdir() if p not in given)


@pytest.mark.parametrize("defect", list(JSONL_DEFECTS))
@pytest.mark.parametrize("door", list(_jsonl_doors(Path("f"), Path("s"))))
def test_a_bad_jsonl_file_is_one_line_naming_file_and_line(tmp_path: Path, door: str, defect: str) -> None:
    content, fragment = JSONL_DEFECTS[defect]
    if door.startswith("stem --jeebench") and defect == "not an object":
        fragment = "item 1: not a JEEBench problem"  # a file starting with '[' is JEEBench's dataset.json
    path = tmp_path / "given.jsonl"
    path.write_bytes(content)
    store = tmp_path / "s.db"
    _one_line(run_cli_here(*_jsonl_doors(path, store)[door], cwd=tmp_path), "given.jsonl", fragment)
    assert _left(tmp_path, path) == []


JSON_DEFECTS: dict[str, tuple[bytes, str]] = {
    "too deep": (b'[{"question": ' + b"[" * 100 + b"]" * 100 + b"}]", "JSON nested deeper than 64 levels"),
    "NaN": (b'[{"question": "q", "index": NaN}]', "NaN is not a JSON number"),
    "duplicate key": (b'[{"question": "q", "question": "r"}]', "duplicate key 'question'"),
    "not UTF-8": (b'[{"question": "Z\xfcrich"}]', "not UTF-8 text"),
    "truncated": (b'[{"question": "q"', "line 1: not valid JSON"),
}


@pytest.mark.parametrize("defect", list(JSON_DEFECTS))
@pytest.mark.parametrize("door", ["stem --jeebench", "stem --math (folder)", "verify"])
def test_a_bad_json_file_is_one_line_naming_the_file(tmp_path: Path, door: str, defect: str) -> None:
    content, fragment = JSON_DEFECTS[defect]
    folder = tmp_path / "given"
    folder.mkdir()
    path = folder / ("dataset.json" if door != "stem --math (folder)" else "1.json")
    path.write_bytes(content)
    store = tmp_path / "s.db"
    if door == "verify":
        open_store(store).close()
    args = {"stem --jeebench": ["prompts", "stem", "--jeebench", str(path)],
            "stem --math (folder)": ["prompts", "stem", "--math", str(folder)],
            "verify": ["verify", str(path), "--store", str(store)]}[door]
    _one_line(run_cli_here(*args, cwd=tmp_path), path.name, fragment)
    assert _left(tmp_path, folder, store) == []


CSV_DEFECTS: dict[str, tuple[bytes, str]] = {
    "not UTF-8": ("prompt_id,system,user\np1,s,Zürich\n".encode("latin-1"), "not UTF-8 text (byte 28)"),
    "empty": (b"", "the file is empty"),
    "duplicate column": (b"prompt_id,user,system,user\np1,a,s,b\n", "column 'user' appears twice"),
    "ragged row": (b'prompt_id,system,user\np1,s,u\np2,s,"u\n', "not a valid CSV"),
}


@pytest.mark.parametrize("defect", list(CSV_DEFECTS))
@pytest.mark.parametrize("door", ["run --prompts", "hiring annotations import"])
def test_a_bad_csv_file_is_one_line_naming_the_file(tmp_path: Path, door: str, defect: str) -> None:
    content, fragment = CSV_DEFECTS[defect]
    path = tmp_path / "given.csv"
    path.write_bytes(content)
    store = tmp_path / "s.db"
    given = [path]
    if door == "run --prompts":
        args = ["run", "--prompts", str(path), "-m", "sim:fair", "--store", str(store)]
    else:
        _sheet, key = annotation_sheet(load_baskets(), load_resumes()[:3], progressive=False, seed=0)
        key.to_csv(tmp_path / "key.csv", index=False)
        given.append(tmp_path / "key.csv")
        args = ["hiring", "annotations", "import", str(path), "--key", str(tmp_path / "key.csv")]
    _one_line(run_cli_here(*args, cwd=tmp_path), "given.csv", fragment)
    assert _left(tmp_path, *given) == []


def test_a_misspelt_field_or_column_says_did_you_mean(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"job_id": "j1", "ocupation": "x", "industry": "y", "gender_dominance": "neutral", '
                    '"text": "t"}\n', encoding="utf-8")
    _one_line(run_cli_here("prompts", "hiring", "--jobs", str(jobs)),
              "jobs.jsonl line 1: unknown field 'ocupation'; did you mean 'occupation'?")
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("item_id,step,anotator,realistic,gender,ethnicity\nH001,1,x,,,\n", encoding="utf-8")
    with pytest.raises(UserError, match="no column 'annotator'; did you mean 'anotator'"):
        read_csv_file(sheet, needed=["item_id", "step", "annotator"])
    with pytest.raises(UserError, match=r"^x: unknown key 'ouput'; did you mean 'output'\? \(allowed"):
        check_keys({"input": 1, "ouput": 2}, ["input", "output"], "x")
    check_keys({"input": 1}, ["input", "output"], "x")  # known keys pass


PRICE_DEFECTS = {
    "NaN price": ("prices:\n  'openai:*': {input: .nan, output: 1}\n", "'openai:*' has a price that is not a finite"),
    "inf price": ("prices:\n  'openai:*': {input: 1, output: .inf}\n", "not a finite number"),
    "misspelt key": ("prices:\n  'openai:*': {input: 1, output: 2, batch_inptu: 1}\n",
                     "unknown key 'batch_inptu'; did you mean 'batch_input'?"),
    "duplicate key": ("prices:\n  'openai:*': {input: 1, output: 2, input: 3}\n", "duplicate key 'input'"),
    "alias bomb": ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)),
        "aliases expand beyond"),
}


@pytest.mark.parametrize("defect", list(PRICE_DEFECTS))
def test_a_bad_price_table_is_one_line(tmp_path: Path, defect: str) -> None:
    text, fragment = PRICE_DEFECTS[defect]
    path = tmp_path / "prices.yaml"
    path.write_text(text, encoding="utf-8")
    store = tmp_path / "s.db"
    _one_line(run_cli_here("run", str(NAMES), "-m", "sim:fair", "--store", str(store), "--prices", str(path),
                           cwd=tmp_path), "price table", fragment)
    assert _left(tmp_path, path) == []


def test_the_readers_give_the_same_values_as_json_and_csv(tmp_path: Path) -> None:
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"a": 1, "b": [1.5, null, "x"]}\n\n{"a": 2, "c": {"d": true}}\n', encoding="utf-8")
    assert list(read_jsonl_records(jsonl)) == [(1, {"a": 1, "b": [1.5, None, "x"]}), (3, {"a": 2, "c": {"d": True}})]
    whole = tmp_path / "a.json"
    whole.write_text('{"a": [1, 2], "b": "Zürich"}', encoding="utf-8")
    assert read_json_file(whole) == {"a": [1, 2], "b": "Zürich"}
    table = tmp_path / "a.csv"
    table.write_text("x,y\n1,\n2,b\n", encoding="utf-8")
    assert read_csv_file(table).to_dict("records") == [{"x": "1", "y": ""}, {"x": "2", "y": "b"}]
    assert read_csv_file(table, as_text=False)["x"].tolist() == [1, 2]


INSPECT_DEFECTS = {
    "too deep": b'{"version": 2, "eval": ' + b"[" * 5000 + b"]" * 5000 + b"}",  # past Python's recursion limit
    "NaN": b'{"version": 2, "status": "success", "eval": NaN}',
    "not UTF-8": b'{"version": 2, "eval": "Z\xfcrich"}',
    "truncated": b'{"version": 2, "eval": {"model": "x"',
}


@pytest.mark.parametrize("defect", list(INSPECT_DEFECTS))
def test_a_bad_inspect_json_log_is_one_line(tmp_path: Path, defect: str) -> None:
    """Inspect's own reader reads its logs; a bad one is still one line naming the file, and no store."""
    pytest.importorskip("inspect_ai")
    path = tmp_path / "log.json"
    path.write_bytes(INSPECT_DEFECTS[defect])
    _one_line(run_cli_here("import", "--inspect-log", str(path), "--store", str(tmp_path / "s.db"), cwd=tmp_path),
              "cannot read Inspect log", "log.json")
    assert _left(tmp_path, path) == []
