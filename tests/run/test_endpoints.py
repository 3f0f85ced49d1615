"""A model's identity includes its endpoint: the same model string on another server is not merged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from counterbench.errors import UserError
from counterbench.models.base import endpoint_of
from counterbench.run import run_prompts
from counterbench.run.store import open_store
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.run.conftest import FAST_RETRY, make_prompts

KEY = "sk-endpoint-test-1234567890"


def test_the_same_model_string_on_another_endpoint_is_refused_unless_the_user_says_it_moved(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    prompts = make_prompts(6)
    with (
        run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as first,
        run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1))) as second,
    ):
        env_a = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": first.base_url}
        env_b = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": second.base_url}
        run_prompts(prompts.head(3), ["openai:fake-model"], store=store, env=env_a, retry=FAST_RETRY)
        with pytest.raises(UserError, match="--endpoint-moved") as info:
            run_prompts(prompts, ["openai:fake-model"], store=store, env=env_b, retry=FAST_RETRY)
        assert first.base_url in str(info.value) and second.base_url in str(info.value)
        assert second.counters.requests == 0  # refused before anything was sent
        moved = run_prompts(prompts, ["openai:fake-model"], store=store, env=env_b, retry=FAST_RETRY,
                            endpoint_moved=True)
        assert moved.totals["sent"] == 3 and second.counters.requests == 3 and first.counters.requests == 3
    with open_store(store) as opened:
        configs = [json.loads(c) for (c,) in opened.query("SELECT config FROM runs WHERE status = 'completed'")]
        assert [c["endpoints"]["openai:fake-model"] for c in configs] == [first.base_url, second.base_url]
        assert opened.endpoints_of("openai:fake-model") == {first.base_url, second.base_url}
        assert KEY not in "".join(str(row) for row in opened.query("SELECT * FROM runs"))


def test_the_recorded_endpoint_never_holds_a_secret() -> None:
    class WithUrl:
        base_url = "https://user:sk-secret-abc@api.example.com:8443/v1/?key=sk-secret-abc#frag"

    assert endpoint_of(WithUrl()) == "https://api.example.com:8443/v1"
    assert endpoint_of(object()) is None
