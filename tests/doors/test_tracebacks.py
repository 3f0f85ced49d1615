"""The last tracebacks and leftovers: each a single line and exit 2, nothing left behind."""

from __future__ import annotations

import sqlite3
import subprocess
import urllib.request
from pathlib import Path

from counterbench.builtin.hiring.annotation import annotation_sheet
from counterbench.builtin.hiring.data import load_baskets, load_resumes
from counterbench.viewer.catalog import Catalog
from tests.conftest import REPO, run_cli_here
from tests.viewer.conftest import running_viewer

NAMES = REPO / "examples" / "names_groups.yaml"


def _one_line(done: subprocess.CompletedProcess[str], fragment: str) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert fragment in lines[0], lines[0]


def _key(tmp_path: Path) -> Path:
    sheet, key = annotation_sheet(load_baskets(), load_resumes()[:3], progressive=False, seed=0)
    key.to_csv(tmp_path / "key.csv", index=False)
    sheet.assign(annotator="x", gender="Male", ethnicity="cannot determine").to_csv(tmp_path / "good.csv", index=False)
    return tmp_path / "key.csv"


def test_an_empty_annotation_sheet_is_one_line(tmp_path: Path) -> None:
    key = _key(tmp_path)
    (tmp_path / "empty.csv").write_bytes(b"")
    _one_line(run_cli_here("hiring", "annotations", "import", str(tmp_path / "empty.csv"), "--key", str(key)),
              "empty.csv: the file is empty")
    (tmp_path / "latin.csv").write_bytes("item_id,step\nH1,Zürich\n".encode("latin-1"))
    _one_line(run_cli_here("hiring", "annotations", "import", str(tmp_path / "latin.csv"), "--key", str(key)),
              "latin.csv: not UTF-8 text")


def test_annotation_import_out_at_an_existing_file_is_one_line(tmp_path: Path) -> None:
    key = _key(tmp_path)
    taken = tmp_path / "taken.txt"
    taken.write_text("mine")
    for sheet in ("good.csv", "empty.csv"):
        (tmp_path / "empty.csv").write_bytes(b"")
        _one_line(run_cli_here("hiring", "annotations", "import", str(tmp_path / sheet), "--key", str(key),
                               "--out", str(taken)), f"--out {taken} is a file")
    assert taken.read_text() == "mine"


def test_a_latin1_sim_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_bytes("description: Modèle simulé\nnoise_sd: 0.1\n".encode("latin-1"))
    store = tmp_path / "s.db"
    _one_line(run_cli_here("run", str(NAMES), "-m", f"sim:{path}", "--store", str(store)), "not UTF-8 text (byte 16)")
    assert not store.exists()


def test_run_accepts_study_options_like_audit(tmp_path: Path) -> None:
    kenya = REPO / "examples" / "kenya_hiring"
    store = tmp_path / "s.db"
    done = run_cli_here("run", "hiring", "--jobs", str(kenya / "jobs.jsonl"), "--resumes", str(kenya / "resumes.jsonl"),
                        "--baskets", str(kenya / "baskets.yaml"), "--preset", "quick", "--use-case", "score",
                        "-m", "sim:fair", "--store", str(store))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        users = [u for (u,) in conn.execute("SELECT user FROM prompts")]
    assert users and any("Nairobi" in u for u in users)  # the Kenyan jobs, not the built-in ones
    # the hiring study's own --prompts (a .yaml of prompt texts) reaches the study, not the prompt-table reader
    bad = tmp_path / "prompts.yaml"
    bad.write_text("compare: {}\n", encoding="utf-8")
    _one_line(run_cli_here("run", "hiring", "--prompts", str(bad), "-m", "sim:fair", "--store", str(tmp_path / "u.db")),
              "section 'generation' needs text")
    # a study option on a study that takes none is one line, nothing stored
    _one_line(run_cli_here("run", str(NAMES), "--jobs", str(kenya / "jobs.jsonl"), "-m", "sim:fair", "--store",
                           str(tmp_path / "t.db")), "--jobs")
    assert not (tmp_path / "t.db").exists() and not (tmp_path / "u.db").exists()


def test_the_viewer_leaves_no_wal_or_shm_beside_the_store(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert run_cli_here("run", str(NAMES), "-m", "sim:fair", "--store", str(store)).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]
    catalog = Catalog(store)
    assert catalog.total() > 0
    catalog.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]
    with running_viewer(store) as url, urllib.request.urlopen(url + "/", timeout=30) as page:
        assert page.status == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]
