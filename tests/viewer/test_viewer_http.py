"""The viewer over real HTTP (a ``counterbench view`` subprocess): filters, search, slots, headers,
host check, read-only store, and the one-line errors of the command."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import re
import socket
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from counterbench.stats.gaps import relative_gap
from counterbench.viewer.catalog import Catalog, spread_of
from tests.conftest import run_cli, run_cli_here
from tests.viewer.conftest import PlantedStore, running_viewer


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, {k.lower(): v for k, v in reply.headers.items()}, reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read().decode()


def cells(html: str, table: str, column: int) -> list[str]:
    body = html.split(f'id="{table}"', 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)[1:]
    return [re.sub(r"<[^>]+>", "", re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)[column]) for r in rows]


def sql(store: Path, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(store)) as conn:
        return conn.execute(query, params).fetchall()


def test_headers_forbid_scripts_and_framing(viewer: str) -> None:
    status, headers, html = get(viewer + "/")
    assert status == 200
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp and "'unsafe-inline'" not in csp
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    assert "<script" not in html.lower() and " style=" not in html


def test_only_local_host_names_are_served(viewer: str) -> None:
    port = urlsplit(viewer).port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/", headers={"Host": f"attacker.example:{port}"})
    assert conn.getresponse().status == 400
    assert get(viewer.replace("127.0.0.1", "localhost") + "/")[0] == 200


def test_filters_count_what_sql_counts(viewer: str, planted_store: PlantedStore) -> None:
    (model, axis), = sql(planted_store.path, "SELECT r.model, p.axis FROM responses r JOIN prompts p "
                         "USING (prompt_id, prompt_hash) ORDER BY r.id DESC LIMIT 1")
    (want,), = sql(planted_store.path, "SELECT count(*) FROM responses r JOIN prompts p USING (prompt_id, "
                   "prompt_hash) WHERE r.model = ? AND p.axis = ? AND r.status = 'ok'", (model, axis))
    status, _, html = get(viewer + "/?" + urlencode({"model": model, "axis": axis, "status": "ok"}))
    assert status == 200
    assert int(re.search(r'id="count">([\d,]+)<', html).group(1).replace(",", "")) == want
    assert set(cells(html, "responses", 0)) == {model} and set(cells(html, "responses", 3)) == {axis}


def test_search_finds_text_case_insensitively(viewer: str, planted_store: PlantedStore) -> None:
    (want,), = sql(planted_store.path, "SELECT count(*) FROM responses WHERE response LIKE '%OnErRoR%'")
    assert want == 1
    _, _, html = get(viewer + "/?" + urlencode({"q": "ONERROR=alert"}))
    assert re.search(r'id="count">1<', html)
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_slots_are_sorted_by_spread_and_match_the_pair(viewer: str, planted_store: PlantedStore) -> None:
    (model, axis, first, second), = sql(planted_store.path, "SELECT r.model, p.axis, min(p.identifier), "
                                        "max(p.identifier) FROM responses r JOIN prompts p USING (prompt_id, "
                                        "prompt_hash) GROUP BY p.axis ORDER BY p.axis LIMIT 1")
    _, _, html = get(viewer + "/slots?" + urlencode([("model", model), ("axis", axis), ("identifier", first),
                                                     ("identifier", second)]))
    spreads = [float(s.rstrip("%")) for s in cells(html, "slots", 12) if s != "—"]
    assert spreads == sorted(spreads, reverse=True) and spreads
    assert {int(n) for n in cells(html, "slots", 8)} <= {1, 2}  # only the pair's answers count


def test_slot_spread_is_the_largest_pair_gap() -> None:
    values = [100.0, 80.0, 125.0]
    top, mean = spread_of(values)
    assert top == pytest.approx(float(relative_gap(125.0, 80.0)))
    pairs = [relative_gap(a, b) for a, b in ((100, 80), (100, 125), (80, 125))]
    assert mean == pytest.approx(float(sum(pairs) / 3))
    assert all(x != x for x in spread_of([5.0]))


def test_each_kind_compares_in_its_own_unit() -> None:
    from counterbench.outcomes.units import answer_measures, gap_unit

    assert spread_of([7.0, 6.0, 8.5], relative=False) == pytest.approx((2.5, (1.0 + 1.5 + 2.5) / 3))
    assert [gap_unit(k).suffix for k in ("amount", "rate", "label", "score")] == ["%", " pp", " pp", " points"]
    assert gap_unit("score").format(-1.25, digits=2) == "-1.25 points"
    # a label's stored value is its position among the labels; its measure is the positive share
    assert list(answer_measures("label:yes|no", [0.0, 1.0])) == [100.0, 0.0]
    assert list(answer_measures("score:1:10", [7.0])) == [7.0]
    assert all(m != m for m in answer_measures("choice:A|B", [0.0]))


def test_a_partial_slot_key_opens_the_first_matching_slot(viewer: str, planted_store: PlantedStore) -> None:
    (model, use_case, axis, first), = sql(planted_store.path, "SELECT r.model, p.use_case, p.axis, p.identifier "
                                          "FROM responses r JOIN prompts p USING (prompt_id, prompt_hash) "
                                          "ORDER BY r.id LIMIT 1")
    status, _, html = get(viewer + "/slot?" + urlencode({"model": model, "use_case": use_case}))
    assert status == 200 and f'data-identifier="{first}"' in html and f"· {axis} ·" in html


def test_unknown_slot_is_404_not_500(viewer: str) -> None:
    status, _, html = get(viewer + "/slot?" + urlencode({"model": "nope", "axis": "x"}))
    assert status == 404 and "no answers in this slot" in html
    assert get(viewer + "/no/such/page")[0] == 404


def test_the_store_is_never_written(planted_store: PlantedStore, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(planted_store.path.read_bytes())
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    catalog = Catalog(copy)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            catalog.conn.execute("DELETE FROM main.responses")
    finally:
        catalog.close()
    with running_viewer(copy) as url:
        assert get(url + "/slots")[0] == 200
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before


def test_user_mistakes_are_one_line(tmp_path: Path, planted_store: PlantedStore) -> None:
    missing = run_cli_here("view", "--store", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "does not exist" in missing.stderr
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    bad = run_cli_here("view", "--store", str(junk))
    assert bad.returncode == 2 and "read-only" in bad.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        taken = run_cli("view", "--store", str(planted_store.path), "--port", str(busy.getsockname()[1]))
        # in process: refused before the store is opened, so no file of the store stays open
        here = run_cli_here("view", "--store", str(planted_store.path), "--port", str(busy.getsockname()[1]))
        assert not [fd for fd in Path("/proc/self/fd").iterdir()
                    if fd.resolve(strict=False).name.startswith(planted_store.path.name)]
    assert taken.returncode == 2 and "choose another --port" in taken.stderr
    assert here.returncode == 2 and here.stderr.count("\n") == 1 and "choose another --port" in here.stderr


def test_the_catalog_follows_a_store_being_written(planted_store: PlantedStore, tmp_path: Path) -> None:
    copy = tmp_path / "live.db"
    copy.write_bytes(planted_store.path.read_bytes())
    catalog = Catalog(copy)
    try:
        before = catalog.total()
        with contextlib.closing(sqlite3.connect(copy)) as conn, conn:  # a run appends answers
            cols = [r[1] for r in conn.execute("PRAGMA table_info(responses)") if r[1] != "id"]
            conn.execute(f"INSERT INTO responses ({', '.join(cols)}) SELECT {', '.join(cols[:2])}, 'sim:late', "
                         f"{', '.join(cols[3:])} FROM responses WHERE model = 'sim:fair' LIMIT 7")
        catalog._checked = 0.0  # skip the few seconds between checks
        catalog.refresh()
        assert catalog.total() == before + 7 and "sim:late" in catalog.options["model"]
        with contextlib.closing(sqlite3.connect(copy)) as conn, conn:  # a re-parse changes rows in place
            conn.execute("UPDATE responses SET status = 'unparseable' WHERE model = 'sim:late'")
        catalog._checked = 0.0
        catalog.refresh()
        assert catalog.responses({"model": ["sim:late"], "status": ["unparseable"]})[0] == 7
    finally:
        catalog.close()
