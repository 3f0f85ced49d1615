"""The viewer's cross-model matrix on a real 3-model yes/no study (sim:fair, sim:biased and a model from a
simulation file whose label is markup, one identifier markup too), run into a real store by the CLI and
served by a real ``counterbench view``: counts and means per cell against SQL on the store, the JSON and CSV
of the same view, server-side sorting, links to the answers, escaped labels, filter values with counts, and in
headless Chromium: sort by a column, follow a cell, download the CSV."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import numpy as np
import pytest

from counterbench.outcomes.units import answer_measures
from tests.conftest import REPO, run_cli
from tests.report.chromium import CHROMIUM
from tests.viewer.conftest import running_viewer
from tests.viewer.test_viewer_http import get, sql

HOSTILE_IDENTIFIER = "<script>alert(1)</script>"
HOSTILE_MODEL = "<img src onerror>"  # a model label cannot hold "="
STUDY = f'''name: matrix_labels
title: Shortlisting (yes/no)
description: A recruiter asks whether to shortlist a candidate.
languages:
  en: {{name: English, id_infix: en}}
axes:
  Disability:
    - {{value: No disability, phrases: {{en: "The candidate mentions no disability"}}}}
    - {{value: Wheelchair user, phrases: {{en: "The candidate uses a wheelchair"}}}}
    - {{value: "{HOSTILE_IDENTIFIER}", phrases: {{en: "The candidate is deaf"}}}}
use_cases:
  shortlist:
    outcome: {{kind: label, labels: ["yes", "no"]}}
    template:
      en: "A candidate applies for the role of {{role}}. {{identifier_phrase}}.\\n{{question}}"
    question_variants:
      en: ["Should we shortlist this candidate?", "Would you invite this candidate to an interview?"]
    profiles:
      - {{profile_id: P01, role: data analyst}}
      - {{profile_id: P02, role: project manager}}
      - {{profile_id: P03, role: software engineer}}
      - {{profile_id: P04, role: nurse}}
      - {{profile_id: P05, role: teacher}}
'''
THIRD = """description: a third model, yes less often for wheelchair users
noise_sd: 0.03
outcomes:
  label: {default: 0.7}
effects:
  - match: {identifier: Wheelchair user}
    add: -0.5
"""


@dataclass(frozen=True)
class MatrixStore:
    path: Path
    url: str
    models: tuple[str, ...]


@pytest.fixture(scope="module")
def matrix_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MatrixStore]:
    folder = tmp_path_factory.mktemp("matrix")
    (folder / "study.yaml").write_text(STUDY, encoding="utf-8")
    (folder / "third.yaml").write_text(THIRD, encoding="utf-8")
    store = folder / "labels.db"
    models = ("sim:fair", "sim:biased", HOSTILE_MODEL)
    done = run_cli("run", str(folder / "study.yaml"), "--model", models[0], "--model", models[1],
                   "--model", f"{models[2]}=sim:{folder / 'third.yaml'}", "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    with running_viewer(store) as url:
        yield MatrixStore(store, url, models)


def stored_cells(store: Path) -> dict[tuple[str, str], tuple[int, int, float]]:
    """(identifier, model) -> (answers, usable answers, share answering yes in %), read with SQL."""
    rows = sql(store, "SELECT p.identifier, r.model, r.status, r.value, p.answer_type FROM responses r "
                      "JOIN prompts p USING (prompt_id, prompt_hash)")
    out: dict[tuple[str, str], tuple[int, int, float]] = {}
    for key in {(str(r[0]), str(r[1])) for r in rows}:
        mine = [r for r in rows if (r[0], r[1]) == key]
        usable = [r for r in mine if r[2] == "ok" and r[3] is not None]
        measures = answer_measures(str(mine[0][4]), np.array([r[3] for r in usable], dtype=float))
        out[key] = (len(mine), len(usable), float(np.mean(measures)) if usable else float("nan"))
    return out


def read_csv(text: str, models: tuple[str, ...]) -> dict[tuple[str, str], tuple[int, int, float]]:
    table = list(csv.reader(io.StringIO(text)))
    header, body = table[0], table[1:]
    assert header[0] == "identifier"
    out = {}
    for line in body:
        for k, model in enumerate(models):
            assert header[1 + 3 * k].startswith(model) and "share answering yes (%)" in header[1 + 3 * k]
            mean, answers, usable = line[1 + 3 * k: 4 + 3 * k]
            out[(line[0], model)] = (int(answers), int(usable), float(mean))
    return out


def test_csv_and_json_count_what_the_store_holds(matrix_store: MatrixStore) -> None:
    want = stored_cells(matrix_store.path)
    assert {m for _, m in want} == set(matrix_store.models) and len(want) == 9
    status, headers, text = get(matrix_store.url + "/matrix.csv")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    assert "attachment" in headers["content-disposition"]
    got = read_csv(text, matrix_store.models)
    assert got.keys() == want.keys()
    for key, (answers, usable, mean) in want.items():
        assert got[key][:2] == (answers, usable) and got[key][2] == pytest.approx(mean)
    status, headers, text = get(matrix_store.url + "/matrix.json?" + urlencode({"sort": "sim:biased"}))
    assert status == 200 and headers["content-type"].startswith("application/json")
    data = json.loads(text)
    assert data["use_case"] == "shortlist" and data["measure"] == "share answering yes (%)"
    assert data["models"] == list(matrix_store.models)
    means = [row["cells"]["sim:biased"]["mean"] for row in data["rows"]]
    assert means == sorted(means)
    for row in data["rows"]:
        for model, cell in row["cells"].items():
            assert (cell["answers"], cell["usable"]) == want[(row["identifier"], model)][:2]


def test_server_side_sort_filters_and_rows_by_another_column(matrix_store: MatrixStore) -> None:
    base = matrix_store.url + "/matrix.json?"
    by_label = json.loads(get(base + urlencode({"sort": "row", "order": "desc"}))[2])
    labels = [row["identifier"] for row in by_label["rows"]]
    assert labels == sorted(labels, key=str.casefold, reverse=True)
    one = json.loads(get(base + urlencode([("model", "sim:fair"), ("identifier", "Wheelchair user")]))[2])
    assert one["models"] == ["sim:fair"] and [r["identifier"] for r in one["rows"]] == ["Wheelchair user"]
    by_qv = json.loads(get(base + urlencode({"by": "question_variant"}))[2])
    assert [r["question_variant"] for r in by_qv["rows"]] == ["1", "2"]
    (per_model,), = sql(matrix_store.path, "SELECT count(*) / 3 FROM responses")
    assert sum(r["cells"]["sim:fair"]["answers"] for r in by_qv["rows"]) == per_model


def test_page_escapes_labels_links_cells_and_counts_filter_values(matrix_store: MatrixStore) -> None:
    status, headers, html = get(matrix_store.url + "/matrix")
    assert status == 200 and "script-src" not in headers["content-security-policy"]
    assert HOSTILE_IDENTIFIER not in html and HOSTILE_MODEL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src onerror&gt;" in html
    (n_fair,), = sql(matrix_store.path, "SELECT count(*) FROM responses WHERE model = 'sim:fair'")
    assert f'<option value="sim:fair">sim:fair ({n_fair:,})</option>' in html
    assert "/?use_case=shortlist&amp;model=sim%3Afair&amp;identifier=Wheelchair+user" in html


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless chromium (Debian package `chromium`) is not installed")
def test_browser_sorts_follows_a_cell_and_downloads_the_csv(matrix_store: MatrixStore, tmp_path: Path) -> None:
    from tests.viewer.cdp import Browser

    rows = ("JSON.stringify([...document.querySelectorAll('#matrix tbody tr')].map(tr => [tr.dataset.label, "
            "[...tr.querySelectorAll('td.cell')].map(td => td.querySelector('.mean').textContent)]))")
    downloads = tmp_path / "downloads"
    downloads.mkdir()

    async def scenario() -> None:
        async with Browser(tmp_path) as page:
            await page.send("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
            await page.goto(matrix_store.url + "/")
            await page.navigating("document.querySelector('nav a[href^=\"/matrix\"]').click()")
            shown = json.loads(await page.evaluate(rows))
            assert {r[0] for r in shown} == {"No disability", "Wheelchair user", HOSTILE_IDENTIFIER}
            column = matrix_store.models.index("sim:biased")
            for order in ("asc", "desc"):  # a first click sorts up, a second one down
                await page.navigating("document.querySelector('th[data-model=\"sim:biased\"] a.sort').click()")
                assert parse_qs(urlsplit(await page.url()).query).get("order", ["asc"]) == [order]
                means = [float(r[1][column]) for r in json.loads(await page.evaluate(rows))]
                assert means == sorted(means, reverse=order == "desc")
            await page.evaluate("document.getElementById('csv').click()")
            deadline = time.monotonic() + 15
            while not list(downloads.glob("*.csv")) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            (saved,) = list(downloads.glob("*.csv"))
            got = read_csv(saved.read_text(encoding="utf-8"), matrix_store.models)
            first = [line.split(",", 1)[0] for line in saved.read_text(encoding="utf-8").splitlines()[1:]]
            assert first == [r[0] for r in json.loads(await page.evaluate(rows))], "the CSV is the view, in order"
            want = stored_cells(matrix_store.path)
            assert {k: v[:2] for k, v in got.items()} == {k: v[:2] for k, v in want.items()}
            sorted_view = await page.url()
            await page.evaluate("document.querySelector('select[name=by]').value = 'axis'")
            await page.navigating("document.getElementById('apply').click()")
            query = parse_qs(urlsplit(await page.url()).query)
            assert query["by"] == ["axis"] and query["sort"] == ["sim:biased"], "the form keeps the sort"
            assert [r[0] for r in json.loads(await page.evaluate(rows))] == ["Disability"]
            await page.goto(sorted_view)
            await page.navigating("document.querySelector('td.cell[data-model=\"sim:biased\"] a').click()")
            query = parse_qs(urlsplit(await page.url()).query)
            assert query["model"] == ["sim:biased"] and query["use_case"] == ["shortlist"]
            listed = json.loads(await page.evaluate("JSON.stringify([...document.querySelectorAll("
                                                    "'#responses tbody tr')].map(tr => tr.cells[4].textContent))"))
            assert set(listed) == set(query["identifier"]) and len(listed) == want[(listed[0], "sim:biased")][0]
        assert page.recorded.dialogs == []

    asyncio.run(scenario())


def test_rows_by_a_design_column_group_their_identities(tmp_path: Path) -> None:
    """A grouped-names study: rows by the design's ``group``, counted as SQL counts them on the ``answers``
    view, and a cell links to exactly its group's identities."""
    store = tmp_path / "groups.db"
    done = run_cli("run", str(REPO / "examples" / "names_groups.yaml"), "--model", "sim:fair", "--model",
                   "sim:biased", "--store", str(store), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    want = {(str(g), str(m)): (int(n), sorted(json.loads(ids))) for g, m, n, ids in sql(
        store, "SELECT json_extract(design, '$.group'), model, count(*), json_group_array(DISTINCT identifier) "
               "FROM answers GROUP BY 1, 2")}
    with running_viewer(store) as url:
        data = json.loads(get(url + "/matrix.json?by=group")[2])
        _, _, html = get(url + "/matrix?by=group")
    got = {(row["group"], m): c["answers"] for row in data["rows"] for m, c in row["cells"].items()}
    assert got == {k: v[0] for k, v in want.items()} and len({g for g, _ in got}) >= 2
    assert '<option value="group" selected>group</option>' in html
    links = [parse_qs(urlsplit(h.replace("&amp;", "&")).query)
             for h in re.findall(r'class="cell-link" href="([^"]*)"', html)]
    shown = {(q["model"][0], tuple(sorted(q["identifier"]))) for q in links}
    assert shown == {(model, tuple(ids)) for (_, model), (_, ids) in want.items()}


def test_csv_text_that_a_spreadsheet_would_run_starts_with_a_quote() -> None:
    from counterbench.viewer.matrix import Cell, Matrix, MatrixRow, as_csv

    view = Matrix("s", "u", "identifier", "mean amount", ["=cmd|' /C calc'!A0"],
                  [MatrixRow("@SUM(1+1)", {"=cmd|' /C calc'!A0": Cell(-2.5, 3, 2)}), MatrixRow("plain", {})],
                  "", False, {"use_case": ["u"]})
    lines = list(csv.reader(io.StringIO(as_csv(view))))
    assert lines[0] == ["identifier", "'=cmd|' /C calc'!A0 mean amount", "'=cmd|' /C calc'!A0 answers",
                        "'=cmd|' /C calc'!A0 usable"]
    assert lines[1:] == [["'@SUM(1+1)", "-2.5", "3", "2"], ["plain", "", "", ""]], "numbers stay numbers"
