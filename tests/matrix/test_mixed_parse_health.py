"""``parse_health`` lists every use case of a study that mixes outcome kinds (amount ones included).

The amount analysis and the generic outcome tables each counted their own use cases and the second
table replaced the first: a study with an amount use case beside others lost the amount rows (its
refusals and unparseable answers too). Audited here through real HTTP with some refused and some
unparseable amount answers.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import counterbench
from counterbench.testing._fakecore import FaultConfig, run_in_thread
from counterbench.testing.fake_openai import FakeOpenAIServer
from tests.matrix.planted import KINDS, Planted, reply, use_case, write_study


def _spoiled(system: str, user: str) -> str:
    answer = reply(Planted())(system, user)
    if not answer.endswith(" INR"):
        return answer
    pick = hashlib.sha256(user.encode()).digest()[0] % 10
    return "I cannot help with that request." if pick == 0 else "Somewhere around fifty thousand." if pick == 1 \
        else answer


def test_parse_health_counts_every_use_case_of_a_mixed_study(tmp_path: Path) -> None:
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_spoiled))) as server:
        result = counterbench.audit(str(write_study(tmp_path, "single")), [f"m=openai-compatible:{server.base_url}:x"],
                                    store=tmp_path / "cb.db", out=tmp_path / "out", bootstrap=100, concurrency=16)
    health = result.analysis.tables["parse_health"]
    assert set(health["use_case"].astype(str)) == {use_case(k) for k in KINDS}
    amount = health[health["use_case"].astype(str) == use_case("amount")].iloc[0]
    assert int(amount["n"]) == 3 * 12 * 2 and int(amount["n_refused"]) > 0 and int(amount["n_unparseable"]) > 0
    assert int(amount["n_ok"]) + int(amount["n_refused"]) + int(amount["n_unparseable"]) == int(amount["n"])
    assert int(health["n"].sum()) == 5 * 3 * 12 * 2


def _amounts_out_of_range(system: str, user: str) -> str:
    answer = reply(Planted())(system, user)
    return "### 5 INR" if answer.endswith(" INR") else answer  # below the plausible ₹100: excluded


def test_a_mixed_study_whose_amount_answers_are_all_unusable_still_reports_the_others(tmp_path: Path) -> None:
    """Found by the study generator: the amount analysis stopped the whole audit ("no usable standard-prompt
    answers") when only the amount use case had none; the other use cases' tables must still come out."""
    with run_in_thread(FakeOpenAIServer(FaultConfig(reply=_amounts_out_of_range))) as server:
        result = counterbench.audit(str(write_study(tmp_path, "single")), [f"m=openai-compatible:{server.base_url}:x"],
                                    store=tmp_path / "cb.db", out=tmp_path / "out", bootstrap=100, concurrency=16)
    health = result.analysis.tables["parse_health"]
    assert set(health["use_case"].astype(str)) == {use_case(k) for k in KINDS}
    amount = health[health["use_case"].astype(str) == use_case("amount")].iloc[0]
    assert int(amount["n_out_of_range"]) == int(amount["n"]) == 3 * 12 * 2
    gaps = result.analysis.tables["outcome_gaps"]
    assert set(gaps["use_case"].astype(str)) == {use_case(k) for k in KINDS if k != "amount"}
    assert "amount use cases (amount_case)" in result.analysis.summary["unsupported"]["amount_tables"]
    assert (tmp_path / "out" / "report.html").is_file()
