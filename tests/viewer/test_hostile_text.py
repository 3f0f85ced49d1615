"""The viewer under hostile answers: control, bidi and zero-width characters are shown as escapes exactly as
the report shows them (read over HTTP and in headless Chromium), and a malformed or huge page number is a
404 or the last page, never a 500."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from counterbench.report.visible import show_controls
from counterbench.run import run_prompts
from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread
from tests.report.chromium import CHROMIUM
from tests.run.conftest import FAST_RETRY, make_prompts
from tests.viewer.cdp import Browser
from tests.viewer.conftest import running_viewer
from tests.viewer.test_viewer_http import get

HOSTILE = ("### \u202e0000021\u202c INR", "### 12\u200b00000 INR", "### 12\u200d00000 INR", "\x00\x1b[2J### 5 INR",
           "\ufeff### 7 INR \u2066x\u2069", "कर्मचारी\u200d वेतन 👩\u200d💻 ### 9 INR")
#: what may never reach a page as a raw character (the joiners are checked where they can only hide)
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
N_PROMPTS = 120  # three pages of 50


def _hostile(system: str, user: str) -> str:
    return HOSTILE[int(user.rsplit("#", 1)[1]) % len(HOSTILE)]


@pytest.fixture(scope="module")
def hostile_viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("hostile") / "s.db"
    with run_in_thread(FakeOpenAIServer(FaultConfig(latency_ms=1, reply=_hostile))) as server:
        env = {"OPENAI_API_KEY": "sk-test-1234567890", "OPENAI_BASE_URL": server.base_url}
        run_prompts(make_prompts(N_PROMPTS), ["openai:gpt-a"], store=store, env=env, retry=FAST_RETRY)
    with running_viewer(store) as url:
        yield url


def test_pages_show_hostile_characters_as_the_report_does(hostile_viewer: str) -> None:
    seen = ""
    for page in range(3):
        status, _, html = get(hostile_viewer + "/?" + urlencode({"page": page}))
        assert status == 200
        assert not RAW.findall(html)
        seen += html
    for text in HOSTILE:
        assert show_controls(text).replace("<", "&lt;") in seen  # the report's own rendering of each answer
    assert "12\\u200d00000" in seen and "\u0930\u0940\u200d \u0935" in seen and "👩\u200d💻" in seen


@pytest.mark.parametrize("page", ["abc", "-1", "1e400", "2.5", "٣"])
def test_a_malformed_page_number_is_a_404(hostile_viewer: str, page: str) -> None:
    for path in ("/", "/slots"):
        status, _, html = get(hostile_viewer + path + "?" + urlencode({"page": page}))
        assert status == 404 and "whole number" in html


@pytest.mark.parametrize("page", ["3", "99999999999999999999", "9" * 5000])
def test_a_page_past_the_end_shows_the_last_page(hostile_viewer: str, page: str) -> None:
    status, _, html = get(hostile_viewer + "/?" + urlencode({"page": page}))
    assert status == 200 and "page 3 of 3" in html and 'rel="prev"' in html and 'rel="next"' not in html
    status, _, html = get(hostile_viewer + "/slots?" + urlencode({"page": page}))
    assert status == 200


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless chromium (Debian package `chromium`) is not installed")
def test_a_browser_reads_the_escapes_not_the_characters(hostile_viewer: str, tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        async with Browser(tmp_path) as page:
            await page.goto(hostile_viewer + "/")
            return list(json.loads(await page.evaluate(
                "JSON.stringify([...document.querySelectorAll('main')].map(e => e.textContent))")))

    (text,) = asyncio.run(scenario())
    assert not RAW.findall(text)
    assert "\\u202e0000021\\u202c" in text and "12\\u200b00000" in text and "\\x00\\x1b[2J" in text
    assert "12\\u200d00000" in text and "👩\u200d💻" in text
