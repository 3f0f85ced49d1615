"""``counterbench hiring resumes`` as a user runs it (the CLI's ``main`` in the test's process): a real
OpenAI-compatible HTTP server on 127.0.0.1 writes the resumes, the lint rejects a bad one, a failed request and
new jobs are picked up by rerunning, nothing already written is lost; the simulated model; user mistakes are one
line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from counterbench.builtin.hiring.data import load_jobs, load_resumes
from counterbench.builtin.hiring.study import hiring_study
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import cli_here, fake_model, one_error_line

JOBS = load_jobs()[:4]
TEMPLATES = {t.job_id: t.text for t in load_resumes()}
NAMED = JOBS[2].job_id  # the server writes a name into this one's resume


def _write_jobs(path: Path, jobs: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(j) + "\n" for j in jobs), encoding="utf-8")
    return path


def _job_rows() -> list[dict[str, str]]:
    rows = [{"job_id": j.job_id, "occupation": j.occupation, "industry": j.industry,
             "gender_dominance": j.gender_dominance, "text": j.text} for j in JOBS]
    rows[1]["text"] += "\n[[fault:500:1]]"  # the server fails this job's first request
    return rows


def _reply(system: str, user: str) -> str:
    job = next(j for j in JOBS if j.text in user)
    resume = TEMPLATES[job.job_id]
    return f"```\nName: Tan Wei Ming\n{resume}```" if job.job_id == NAMED else f"Here is the resume:\n\n{resume}"


def _lines(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_resumes_from_a_server_linted_resumable_and_never_lost(tmp_path: Path) -> None:
    jobs_file = _write_jobs(tmp_path / "jobs.jsonl", _job_rows()[:3])
    out = tmp_path / "resumes.jsonl"
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_reply))) as server:
        args = ("hiring", "resumes", "--model", fake_model(server), "--jobs", str(jobs_file), "--out", str(out),
                "--max-attempts", "1")
        first = cli_here(*args, cwd=tmp_path)
        assert first.returncode == 1, first.stderr  # incomplete: one rejected, one failed
        for line in ("1 resume(s) in", "1 rejected", "1 without an answer"):
            assert line in first.stdout
        assert [r["job_id"] for r in _lines(out)] == [JOBS[0].job_id]
        assert _lines(out)[0]["text"].strip() == TEMPLATES[JOBS[0].job_id].strip()  # the text around it is dropped
        (rejected,) = _lines(tmp_path / "resumes.rejected.jsonl")
        assert rejected["job_id"] == NAMED and "name" in rejected["reason"] and "Tan Wei Ming" in rejected["text"]
        assert (tmp_path / "resumes.generation.db").is_file()

        # a person fixes the rejected resume by hand; a new job is added
        with out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"job_id": NAMED, "text": TEMPLATES[NAMED], "weakness": "fixed by hand"}) + "\n")
        _write_jobs(jobs_file, _job_rows())
        sent_before = server.counters.requests
        second = cli_here(*args, cwd=tmp_path)
        assert second.returncode == 0, (second.stdout, second.stderr)
        assert server.counters.requests - sent_before == 2  # the failed job again and the new one, nothing else
    assert "2 generated now, 2 kept from before" in second.stdout
    rows = _lines(out)
    assert [r["job_id"] for r in rows] == [j.job_id for j in JOBS]  # in the jobs file's order
    assert rows[2]["weakness"] == "fixed by hand"  # the hand-fixed resume is kept as it was
    assert not (tmp_path / "resumes.rejected.jsonl").exists()
    study = hiring_study(jobs=str(jobs_file), resumes=str(out), recover_jobs=1)  # the file is a usable study input
    assert set(study.expand()["job_id"]) == {j.job_id for j in JOBS}


def test_simulated_model_answers_are_rejected_and_the_rerun_asks_nothing(tmp_path: Path) -> None:
    jobs_file = _write_jobs(tmp_path / "jobs.jsonl", _job_rows()[:2])
    args = ("hiring", "resumes", "--model", "sim:hiring-fair", "--jobs", str(jobs_file), "--out",
            str(tmp_path / "r.jsonl"))
    first = cli_here(*args, cwd=tmp_path)
    assert first.returncode == 1 and "2 rejected" in first.stdout and "Additional Information" in first.stdout
    assert not (tmp_path / "r.jsonl").exists() and len(_lines(tmp_path / "r.rejected.jsonl")) == 2
    again = cli_here(*args, cwd=tmp_path)
    assert again.returncode == 1 and "0 answered now" in again.stdout and "2 already stored" in again.stdout


@pytest.mark.parametrize(("extra", "needle"), [
    (("--model", "sim:fair", "--model", "sim:biased", "--out", "r.jsonl"), "exactly one --model"),
    (("--model", "sim:fair"), "--out"),
    (("--model", "sim:fair", "--out", "missing/r.jsonl"), "folder missing does not exist"),
    (("--model", "sim:fair", "--out", "r.jsonl", "--jobs", "bad.jsonl"), "bad.jsonl line 1"),
    (("--model", "sim:fair", "--out", "broken.jsonl"), "broken.jsonl line 1"),
    (("--model", "sim:fair", "--out", "r.jsonl", "--prompt-texts", "bad.yaml"), "not valid YAML"),
])
def test_user_mistakes_are_one_line_and_exit_2(tmp_path: Path, extra: tuple[str, ...], needle: str) -> None:
    (tmp_path / "bad.jsonl").write_text('{"job_id": "x"\n', encoding="utf-8")
    (tmp_path / "broken.jsonl").write_text("not json\n", encoding="utf-8")
    (tmp_path / "bad.yaml").write_text("compare: [\n", encoding="utf-8")
    assert needle in one_error_line(cli_here("hiring", "resumes", *extra, cwd=tmp_path))
    assert not (tmp_path / "r.jsonl").exists()


def test_a_term_relaxed_on_purpose_with_its_reason_recorded(tmp_path: Path) -> None:
    job = JOBS[0]
    jobs_file = _write_jobs(tmp_path / "jobs.jsonl", [{"job_id": job.job_id, "occupation": job.occupation,
                                                       "industry": job.industry,
                                                       "gender_dominance": job.gender_dominance, "text": job.text}])
    resume = TEMPLATES[job.job_id].replace("Additional Information", "Organised a staff cycling safety campaign.\n\n"
                                           "Additional Information", 1)

    def reply(system: str, user: str) -> str:
        return resume

    out = tmp_path / "resumes.jsonl"
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=reply))) as server:
        args = ("hiring", "resumes", "--model", fake_model(server), "--jobs", str(jobs_file), "--out", str(out))
        strict = cli_here(*args, cwd=tmp_path)
        assert strict.returncode == 1 and "('cycling')" in strict.stdout, strict.stdout  # a basket term: rejected
        assert not out.exists()
        relaxed = cli_here(*args, "--allow", "cycling=a workplace safety campaign, not a hobby", cwd=tmp_path)
        assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert "cycling safety campaign" in _lines(out)[0]["text"]
    import yaml

    recorded = yaml.safe_load((tmp_path / "resumes.lint_allowed.yaml").read_text(encoding="utf-8"))
    assert recorded == {"allow": [{"term": "cycling", "reason": "a workplace safety campaign, not a hobby"}]}
    assert "resumes.lint_allowed.yaml" in relaxed.stdout
    base = ("hiring", "resumes", "--model", "sim:hiring-fair", "--out", str(out), "--allow")
    bad = cli_here(*base, "cycling", cwd=tmp_path)
    assert bad.returncode == 2 and "give TERM=REASON" in one_error_line(bad)
    no_reason = cli_here(*base, "cycling=", cwd=tmp_path)
    assert no_reason.returncode == 2 and "needs a reason" in one_error_line(no_reason)


def test_resumes_through_a_batch_api(tmp_path: Path) -> None:
    """``--batch`` (here ``batch=True`` in Python): the resumes come back through OpenAI's Batch API."""
    from counterbench.builtin.hiring.resume_generation import generate_resumes
    from counterbench.testing.fake_batch import BatchConfig, FakeOpenAIBatchServer

    jobs_file = _write_jobs(tmp_path / "jobs.jsonl", [r for r in _job_rows() if r["job_id"] != NAMED][:1])
    out = tmp_path / "resumes.jsonl"
    fake = FakeOpenAIBatchServer(FaultConfig(reply=_reply), batch=BatchConfig(processing_s=0.05))
    with run_in_thread(fake) as server:
        generate_resumes("openai:gpt-4o-mini", out, jobs=jobs_file, batch=True, batch_poll=0.05,
                         env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url})
        assert server.server.batch.jobs == 1 and server.counters.outcomes["ok"] == 1
    assert [r["job_id"] for r in _lines(out)] == [JOBS[0].job_id]
