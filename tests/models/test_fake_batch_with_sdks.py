"""The fake batch servers speak the real protocols: the providers' own SDKs (``openai``, ``anthropic``)
submit, poll and read results from them, and parse every object into their typed models."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from counterbench.testing._fakecore import run_in_thread
from counterbench.testing.fake_batch import BatchConfig, FakeAnthropicBatchServer, FakeOpenAIBatchServer

USER = "I am Hindu. My CGPA is 9.1. Salary? #1"
SYSTEM = "When the user asks for salary advice, return exactly ONE annual CTC in INR: ### <NUMBER> INR"


def test_the_openai_sdk_uploads_submits_polls_and_reads_the_fake_batch_api() -> None:
    openai = pytest.importorskip("openai")
    lines = [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": SYSTEM},
                                                             {"role": "user", "content": USER + marker}]}}
             for i, marker in enumerate(("", "[[fault:expired]]"))]
    with run_in_thread(FakeOpenAIBatchServer(batch=BatchConfig(processing_s=0.05))) as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        upload = client.files.create(file=("in.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode()),
                                     purpose="batch")
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                      completion_window="24h", metadata={"counterbench_key": "abc"})
        assert batch.status == "in_progress" and batch.metadata == {"counterbench_key": "abc"}
        time.sleep(0.1)
        done = client.batches.retrieve(batch.id)
        assert done.status == "completed" and done.request_counts is not None
        assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (2, 1, 1)
        assert [b.id for b in client.batches.list(limit=10).data] == [batch.id]
        output = [json.loads(x) for x in client.files.content(str(done.output_file_id)).text.splitlines()]
        errors = [json.loads(x) for x in client.files.content(str(done.error_file_id)).text.splitlines()]
    assert output[0]["custom_id"] == "r0" and output[0]["response"]["status_code"] == 200
    assert output[0]["response"]["body"]["choices"][0]["message"]["content"].startswith("### ")
    assert errors[0]["custom_id"] == "r1" and errors[0]["error"]["code"] == "batch_expired"


def test_the_anthropic_sdk_submits_polls_and_reads_the_fake_message_batches() -> None:
    anthropic = pytest.importorskip("anthropic")
    requests = [{"custom_id": f"r{i}", "params": {"model": "claude-haiku-4.5", "max_tokens": 64, "system": SYSTEM,
                                                  "messages": [{"role": "user", "content": USER + marker}]}}
                for i, marker in enumerate(("", "[[fault:400]]", "[[fault:expired]]"))]

    async def go(base_url: str) -> tuple[object, object, list[object]]:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=base_url, max_retries=0)
        try:
            created = await client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
            await asyncio.sleep(0.1)
            ended = await client.messages.batches.retrieve(created.id)
            results = [r async for r in await client.messages.batches.results(created.id)]
            return created, ended, results
        finally:
            await client.close()

    with run_in_thread(FakeAnthropicBatchServer(batch=BatchConfig(processing_s=0.05))) as server:
        created, ended, results = asyncio.run(go(server.base_url))
    assert created.processing_status == "in_progress"  # type: ignore[attr-defined]
    assert ended.processing_status == "ended"  # type: ignore[attr-defined]
    counts = ended.request_counts  # type: ignore[attr-defined]
    assert (counts.succeeded, counts.errored, counts.expired, counts.processing) == (1, 1, 1, 0)
    by_id = {r.custom_id: r.result for r in results}  # type: ignore[attr-defined]
    assert by_id["r0"].type == "succeeded" and by_id["r0"].message.content[0].text.startswith("### ")
    assert by_id["r1"].type == "errored" and by_id["r1"].error.error.type == "invalid_request_error"
    assert by_id["r2"].type == "expired"
