"""TreeSHAP chosen for ``stem_shap`` (``--shap tree`` or ``StemStudy(shap="tree")``), and the
one-line error when the ``shap`` extra is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from counterbench.builtin.stem.design import StemDesign, build_prompt_table
from counterbench.builtin.stem.simulate import simulate_outcomes
from counterbench.builtin.stem.study import StemStudy
from counterbench.errors import UserError
from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)


def test_tree_shap_attributes_the_planted_attribute_first() -> None:
    pytest.importorskip("shap")
    table = build_prompt_table(StemDesign.paper(contexts=("india",), progressive=(), single_attribute=(),
                                                tasks=("generation",)))
    results = simulate_outcomes(table, "sim:stem", seed=2)
    tables, summary = StemStudy(shap="tree").analyze_tables(results)
    shap = tables["stem_shap"]
    assert summary["stem_shap_method"] == "tree" and set(shap["method"]) == {"TreeSHAP (gradient-boosted trees)"}
    attributes = shap[shap["kind"].eq("attribute")].sort_values("mean_abs", ascending=False)
    assert attributes.iloc[0]["attribute"] == "disability"  # sim:stem plants Disabled −1.5 grade levels
    linear, _ = StemStudy().analyze_tables(results)
    assert set(linear["stem_shap"]["method"]) == {"linear (exact)"}


def test_a_missing_shap_package_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "shap", None)  # as if the extra were not installed
    with pytest.raises(UserError, match=r"^shap tree \(TreeSHAP\) needs the optional packages shap and "
                                        r"scikit-learn \(shap missing\): pip install 'counterbench\[shap\]'$"):
        StemStudy(shap="tree")
    with pytest.raises(UserError, match=r"^shap must be one of linear, tree"):
        StemStudy(shap="forest")


def test_the_cli_reads_the_shap_option(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    out = run_cli("run", "stem", "--model", "sim:stem", "--preset", "quick", "--store", str(store), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    bad = run_cli("analyze", "stem", "--shap", "forest", "--store", str(store), "-o", str(tmp_path / "a"),
                  cwd=tmp_path)
    assert bad.returncode == 2 and "--shap must be one of linear, tree" in bad.stderr
    assert "Traceback" not in bad.stderr
    pytest.importorskip("shap")
    good = run_cli("analyze", "stem", "--store", str(store), "-o", str(tmp_path / "a"), "--shap", "tree",
                   cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert '"stem_shap_method": "tree"' in (tmp_path / "a" / "summary.json").read_text()
