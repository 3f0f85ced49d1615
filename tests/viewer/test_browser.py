"""The viewer in headless Chromium, driven as a person would: filter to one axis, open a slot, read
every identity's answer; follow a link from the report's canonical-pair table to its slots; and a
planted ``<script>``/``<img onerror>`` answer shows as text (no dialog, no request)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import run_cli
from tests.report.chromium import CHROMIUM
from tests.viewer.cdp import Browser, Page
from tests.viewer.conftest import PAYLOAD, PlantedStore

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless chromium (Debian package `chromium`) is not installed"),
]

ROWS = "JSON.stringify([...document.querySelectorAll('#answers tbody tr')].map(tr => [tr.dataset.identifier, " \
       "tr.querySelector('td.value').textContent, tr.querySelector('td.status').textContent.trim(), " \
       "tr.querySelector('pre.raw').textContent]))"


def stored_slot(store: Path, query: dict[str, list[str]]) -> dict[str, tuple[str, float | None, str]]:
    """identifier -> (status, value, raw text) for the slot named by a viewer URL's query, read with SQL."""
    keys = ("model", "config_fp", "use_case", "language", "axis", "profile_id", "question_variant", "variant")
    with contextlib.closing(sqlite3.connect(store)) as conn:
        rows = conn.execute(
            "SELECT p.identifier, r.status, r.value, r.response FROM responses r JOIN prompts p "
            "USING (prompt_id, prompt_hash) WHERE r.model = ? AND r.config_fp = ? AND p.use_case = ? AND "
            "p.language = ? AND p.axis = ? AND p.profile_id = ? AND CAST(p.question_variant AS TEXT) = ? "
            "AND p.variant = ?", [query[k][0] for k in keys]).fetchall()
    return {ident: (status, value, text) for ident, status, value, text in rows}


def shown_number(text: str) -> float | None:
    return None if text.strip() == "—" else float(text.replace(",", ""))


async def read_slot(page: Page) -> list[list[str]]:
    return json.loads(await page.evaluate(ROWS))


def check_slot_matches_store(rows: list[list[str]], url: str, store: Path) -> dict[str, list[str]]:
    query = parse_qs(urlsplit(url).query)
    stored = stored_slot(store, query)
    assert len(stored) >= 2
    assert sorted(r[0] for r in rows) == sorted(stored), "every identity of the slot, once"
    for ident, value, status, raw in rows:
        want_status, want_value, want_text = stored[ident]
        assert status.split()[0] == want_status
        assert raw == (want_text or "")
        if want_value is None:
            assert shown_number(value) is None
        else:  # shown with up to 4 significant digits below 1,000, else whole
            assert shown_number(value) == pytest.approx(want_value, rel=5e-4, abs=0.5)
    return query


def test_filter_to_one_axis_then_read_a_slot(viewer: str, planted_store: PlantedStore, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with Browser(tmp_path) as page:
            await page.goto(viewer + "/")
            axes = json.loads(await page.evaluate(
                "JSON.stringify([...document.querySelectorAll('select[name=axis] option')].map(o => o.value))"))
            axis = [a for a in axes if a][1]  # the second axis the store holds, whatever the study
            await page.evaluate(f"document.querySelector('select[name=axis]').value = {json.dumps(axis)}")
            await page.navigating("document.getElementById('apply').click()")
            assert parse_qs(urlsplit(await page.url()).query)["axis"] == [axis]
            shown_axes = json.loads(await page.evaluate(
                "JSON.stringify([...document.querySelectorAll('#responses tbody tr')]"
                ".map(tr => tr.cells[3].textContent))"))
            assert shown_axes and set(shown_axes) == {axis}
            await page.navigating("document.querySelector('#responses a.slot-link').click()")
            url = await page.url()
            assert urlsplit(url).path == "/slot"
            rows = await read_slot(page)
            query = check_slot_matches_store(rows, url, planted_store.path)
            assert query["axis"] == [axis]
            assert "spread" in (await page.evaluate("document.getElementById('spread').textContent"))
            await page.send("Page.captureScreenshot", {"format": "png"})
        assert page.recorded.dialogs == []

    asyncio.run(scenario())


def test_report_link_opens_the_pairs_slots(viewer: str, planted_store: PlantedStore, tmp_path: Path) -> None:
    done = run_cli("report", "--store", str(planted_store.path), "--out", str(tmp_path / "report.html"),
                   "--bootstrap", "50", env={"COUNTERBENCH_VIEWER_URL": viewer})
    assert done.returncode == 0, done.stderr
    assert f"counterbench view --store {planted_store.path}" in done.stdout

    async def scenario() -> None:
        async with Browser(tmp_path) as page:
            await page.goto((tmp_path / "report.html").as_uri())
            link = json.loads(await page.evaluate(
                "JSON.stringify((() => { const a = document.querySelector('#cpg a.viewer-link'); "
                "const tr = a.closest('tr'); return [a.href, [...tr.cells].map(c => c.textContent)]; })())"))
            href, cells = link
            assert href.startswith(viewer + "/slots?")
            await page.navigating("document.querySelector('#cpg a.viewer-link').click()")
            query = parse_qs(urlsplit(await page.url()).query)
            pair = query["identifier"]
            assert len(pair) == 2 and f"{pair[0]} vs {pair[1]}" in cells  # the row's own pair
            assert query["model"][0] in cells and query["axis"][0] in cells
            slots = json.loads(await page.evaluate(
                "JSON.stringify([...document.querySelectorAll('#slots tbody tr')].map(tr => "
                "[tr.cells[0].textContent, tr.cells[4].textContent]))"))
            assert slots and {tuple(s) for s in slots} == {(query["model"][0], query["axis"][0])}
            await page.navigating("document.querySelector('#slots a.slot-link').click()")
            rows = await read_slot(page)
            assert [r[0] for r in rows[:2]] == pair, "the pair's two answers come first"
            check_slot_matches_store(rows, await page.url(), planted_store.path)
        assert page.recorded.dialogs == []

    asyncio.run(scenario())


def test_planted_markup_is_text(viewer: str, planted_store: PlantedStore, tmp_path: Path) -> None:
    with contextlib.closing(sqlite3.connect(planted_store.path)) as conn:
        model, config_fp, use_case, language, axis, profile, qv, variant, _ = conn.execute(
            "SELECT r.model, r.config_fp, p.use_case, p.language, p.axis, p.profile_id, p.question_variant, "
            "p.variant, p.identifier FROM responses r JOIN prompts p USING (prompt_id, prompt_hash) WHERE r.id = ?",
            (planted_store.payload_id,)).fetchone()
    from urllib.parse import urlencode

    slot = viewer + "/slot?" + urlencode({"model": model, "config_fp": config_fp, "use_case": use_case,
                                          "language": language, "axis": axis, "profile_id": profile,
                                          "question_variant": qv, "variant": variant, "study": "rupeebias"})

    async def scenario() -> None:
        async with Browser(tmp_path) as page:
            for url in (slot, viewer + "/?" + urlencode({"q": "onerror"})):
                page.recorded.requests.clear()
                await page.goto(url)
                await asyncio.sleep(0.5)  # time for a planted image to load or a script to run
                texts = json.loads(await page.evaluate(
                    "JSON.stringify([...document.querySelectorAll('pre.raw, td.text')].map(e => e.textContent))"))
                assert any(PAYLOAD in t for t in texts), "the payload is shown, as text"
                assert await page.evaluate("document.querySelectorAll('main img, main script').length") == 0
                requests = page.recorded.requests
                assert requests[:2] == [url, viewer + "/static/viewer.css"], requests
                allowed = ("/", "/slot", "/static/viewer.css", "/favicon.ico")
                assert all(r.startswith(viewer + "/") and urlsplit(r).path in allowed for r in requests), requests
            shot = await page.send("Page.captureScreenshot", {"format": "png"})
            (tmp_path / "slot.png").write_bytes(__import__("base64").b64decode(shot["data"]))
        assert page.recorded.dialogs == [], "a dialog opened: the payload ran"
        assert not [c for c in page.recorded.console if "Content Security Policy" in c]

    asyncio.run(scenario())
    if os.environ.get("COUNTERBENCH_KEEP_SCREENSHOTS"):
        Path(os.environ["COUNTERBENCH_KEEP_SCREENSHOTS"]).write_bytes((tmp_path / "slot.png").read_bytes())


def test_a_yes_no_slot_reads_its_spread_in_percentage_points(tmp_path: Path) -> None:
    from tests.viewer.conftest import running_viewer

    store = tmp_path / "approval.db"
    done = run_cli("run", "examples/approval_crossed.yaml", "--model", "sim:examples/sim/approval_crossed.yaml",
                   "--profile", "S01", "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stderr
    with contextlib.closing(sqlite3.connect(store)) as conn:
        said = {(ident, str(qv)): text.strip() for ident, qv, text in conn.execute(
            "SELECT p.identifier, p.question_variant, r.response FROM responses r JOIN prompts p "
            "USING (prompt_id, prompt_hash) WHERE r.status = 'ok'")}

    async def scenario(viewer: str) -> None:
        async with Browser(tmp_path) as page:
            await page.goto(viewer + "/slots")
            spreads = json.loads(await page.evaluate(
                "JSON.stringify([...document.querySelectorAll('#slots tbody tr')]"
                ".map(tr => tr.cells[12].textContent))"))
            assert spreads and all(s.endswith(" pp") for s in spreads), spreads  # never "200.0%"
            await page.navigating("document.querySelector('#slots a.slot-link').click()")
            text = await page.evaluate("document.getElementById('spread').textContent")
            strong = await page.evaluate("document.querySelector('#spread strong').textContent")
            assert strong == "100.0 pp" and "percentage points" in text, text
            qv = parse_qs(urlsplit(await page.url()).query)["question_variant"][0]
            high = text.split(" · highest ", 1)[1].split(" (", 1)[0]
            low = text.split(", lowest ", 1)[1].split(" (", 1)[0]
            # ordered by the kind's measure: the identity answering the positive label ("yes") is the highest
            assert said[(high, qv)] == "### yes" and said[(low, qv)] == "### no"
        assert page.recorded.dialogs == []

    with running_viewer(store) as url:
        asyncio.run(scenario(url))
