"""A planted fake API key never reaches the store, exports, logs or error messages."""

from __future__ import annotations

from pathlib import Path

from counterbench.table_files import write_table
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import cli, fake_model, make_prompts, one_error_line, subprocess_env

KEY = "sk-PLANTED-7c1d2e3f4a5b6c7d8e9f"


def _files_with_key(folder: Path) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and path.name != ".env" and KEY.encode() in path.read_bytes():
            hits.append(path.name)
    return hits


def test_planted_key_is_nowhere(tmp_path: Path) -> None:
    prompts = make_prompts(12)
    prompts.loc[1, "user"] += " [[fault:500:2]]"
    prompts.loc[2, "user"] += " [[fault:400]]"  # an error row with the server's message
    prompts.loc[3, "user"] += " [[fault:malformed:1]]"
    prompt_file = write_table(prompts, tmp_path / "p.csv")
    store = tmp_path / "cb.db"
    env = subprocess_env(OPENAI_COMPATIBLE_API_KEY=KEY)
    outputs = []
    with run_in_thread(FakeOpenAIServer(FaultConfig(api_key=KEY, retry_after="0.01"))) as server:
        model = fake_model(server)
        for extra in ((), ("--retry-errors",)):
            proc = cli("run", "--prompts", str(prompt_file), "--model", model, "--store", str(store), *extra,
                       cwd=tmp_path, env=env)
            assert proc.returncode == 0, proc.stderr
            outputs += [proc.stdout, proc.stderr]
        assert any(h.get("Authorization") == f"Bearer {KEY}" for h in server.counters.recent_headers)
        # a server that rejects the key and echoes it back (as careless servers do)
        server.config.api_key = "another-key-0000000000"
        bad = cli("run", "--prompts", str(prompt_file), "--model", model, "--store", str(tmp_path / "other.db"),
                  cwd=tmp_path, env=env)
        line = one_error_line(bad)
        assert "credentials" in line
        outputs += [bad.stdout, bad.stderr]
    # the same key through an --env-file
    (tmp_path / ".env").write_text(f"OPENAI_COMPATIBLE_API_KEY={KEY}\n")
    with run_in_thread(FakeOpenAIServer(FaultConfig(api_key=KEY))) as server:
        proc = cli("run", "--prompts", str(prompt_file), "--model", fake_model(server), "--store",
                   str(tmp_path / "envfile.db"), "--env-file", str(tmp_path / ".env"), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        outputs += [proc.stdout, proc.stderr]
    for suffix in (".csv", ".jsonl", ".parquet"):
        proc = cli("export", "--store", str(store), "--out", str(tmp_path / f"out{suffix}"), "--with-prompts",
                   cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        outputs += [proc.stdout, proc.stderr]
    proc = cli("parse", "--store", str(store), cwd=tmp_path)
    outputs += [proc.stdout, proc.stderr]
    assert "HTTP 400" in (tmp_path / "out.csv").read_text()  # the error text itself is kept
    assert not any(KEY in text for text in outputs)
    assert _files_with_key(tmp_path) == []
