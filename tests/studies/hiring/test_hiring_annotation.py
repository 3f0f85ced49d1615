"""Human validation of the baskets (App. L): the annotation sheet, its import, and Krippendorff's alpha."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from counterbench.builtin.hiring.annotation import annotation_sheet, annotation_tables, read_annotations
from counterbench.builtin.hiring.data import load_baskets, load_resumes
from counterbench.builtin.hiring.recoverability import CANNOT
from counterbench.errors import UserError
from counterbench.stats.agreement import krippendorff_alpha_nominal, pair_agreement


def test_krippendorff_alpha_on_hand_computed_examples():
    # by hand: units (a,a) (a,b) (b,b). Coincidences o_aa = 2, o_ab = o_ba = 1, o_bb = 2; n_a = n_b = 3, n = 6.
    # alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 * n_a * n_b) = 1 - 5 * 2 / 18 = 4/9
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "b"], ["b", "b"]]) == pytest.approx(4 / 9, abs=1e-15)
    # a unit of three values weighs each of its 6 ordered pairs 1/2; a lone value is not pairable:
    # units (a,a,b) (b,b) (c): o_aa = 1, o_ab = o_ba = 1, o_bb = 2; n_a = 2, n_b = 3, n = 5
    # alpha = 1 - 4 * 2 / (2 * 2 * 3) = 1/3
    assert krippendorff_alpha_nominal({"u1": ["a", "a", "b"], "u2": ["b", "b"], "u3": ["c"]}) == \
        pytest.approx(1 / 3, abs=1e-15)
    # Krippendorff's own nominal example (Computing Krippendorff's Alpha-Reliability, 2011): 4 coders, 12 units
    n = None
    coders = [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
              [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]]
    assert krippendorff_alpha_nominal(list(zip(*coders, strict=True))) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha_nominal([["x", "x"], ["y", "y"]]) == 1.0
    assert np.isnan(krippendorff_alpha_nominal([["x", "x"], ["x", "x"]]))  # one category: undefined
    assert np.isnan(krippendorff_alpha_nominal([["x"], ["y"]]))  # nothing pairable
    assert pair_agreement([["a", "a", "b"], ["b", "b"]]) == (4, 0.5)


def _fill(sheet: pd.DataFrame, key: pd.DataFrame, annotator: str, rng: np.random.Generator,
          p_right: float) -> pd.DataFrame:
    truth = key.set_index(["item_id", "step"])
    out = sheet.copy()
    out["annotator"] = annotator
    out["realistic"] = np.where(rng.random(len(out)) < 0.9, "yes", "no")
    for attribute in ("gender", "ethnicity"):
        right = truth.loc[list(zip(out["item_id"], out["step"], strict=True)), attribute].to_numpy()
        out[attribute] = np.where(rng.random(len(out)) < p_right, right, CANNOT)
    return out


def test_export_then_import_gives_recoverability_and_agreement(tmp_path, cli):
    proc = cli("hiring", "annotations", "export", "--out", str(tmp_path / "sheet"), "--seed", "4")
    assert proc.returncode == 0, proc.stderr
    sheet = pd.read_csv(tmp_path / "sheet" / "annotation_sheet.csv", dtype=str, keep_default_na=False)
    key = pd.read_csv(tmp_path / "sheet" / "annotation_key.csv", dtype={"step": int})
    assert sheet["item_id"].nunique() == 40 and len(sheet) == 200  # 40 baskets × 5 steps
    # the sheet does not say which group an item is; step 0 shows no Additional Information, step 4 all four
    assert not {"ethnicity_truth", "variation", "shown"} & set(sheet.columns)
    step0 = sheet[sheet["step"].eq("0")]["resume"]
    assert not step0.str.contains("Additional Information").any()
    assert sheet[sheet["step"].eq("4")]["resume"].str.contains("Languages:").all()
    assert key[key["step"].eq(3)]["shown"].map(lambda s: "languages" not in s).all()
    rng = np.random.default_rng(1)
    sheet = sheet.assign(step=sheet["step"].astype(int))
    a = _fill(sheet, key, "ann-a", rng, 0.9)
    b = _fill(sheet, key, "ann-b", rng, 0.7)
    b = b[b["item_id"].isin(sorted(set(b["item_id"]))[:10])]  # the second annotator judged 10 items
    for name, frame in (("a.csv", a), ("b.csv", b)):
        frame.to_csv(tmp_path / name, index=False)
    proc = cli("hiring", "annotations", "import", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--key",
               str(tmp_path / "sheet" / "annotation_key.csv"), "--out", str(tmp_path / "res"))
    assert proc.returncode == 0, proc.stderr
    agreement = pd.read_csv(tmp_path / "res" / "annotation_agreement.csv").set_index(["attribute", "step"])
    recover = pd.read_csv(tmp_path / "res" / "annotation_recoverability.csv").set_index(["attribute", "step"])
    both = pd.concat([a, b])
    for attribute in ("gender", "ethnicity"):
        for step in range(5):
            part = both[both["step"].eq(step)]
            units = part[part["item_id"].isin(b["item_id"])].groupby("item_id")[attribute].agg(list)
            assert agreement.loc[(attribute, step), "krippendorff_alpha"] == \
                pytest.approx(krippendorff_alpha_nominal(units.tolist()), abs=1e-12)
            agree = [u[0] == u[1] for u in units]
            assert agreement.loc[(attribute, step), "pairs"] == 10
            assert agreement.loc[(attribute, step), "pair_agreement"] == pytest.approx(np.mean(agree), abs=1e-12)
            truth = key.set_index(["item_id", "step"]).loc[list(zip(part["item_id"], part["step"], strict=True)),
                                                           attribute].to_numpy()
            assert recover.loc[(attribute, step), "accuracy"] == pytest.approx((truth == part[attribute]).mean())
            assert recover.loc[(attribute, step), "n"] == len(part)
    realism = pd.read_csv(tmp_path / "res" / "annotation_realism.csv").iloc[0]
    assert realism["realistic_share"] == pytest.approx(both["realistic"].eq("yes").mean())


def test_bad_annotation_files_are_refused_with_one_line(tmp_path):
    sheet, key = annotation_sheet(load_baskets(), load_resumes()[:3], progressive=False, seed=0)
    assert len(sheet) == 40 and set(sheet["step"]) == {4}
    key.to_csv(tmp_path / "key.csv", index=False)
    good = sheet.assign(annotator="x", gender="Male", ethnicity="cannot determine")
    for change, message in (({"gender": "Robot"}, "gender 'Robot' is not one of"),
                            ({"annotator": ""}, "no annotator name"),
                            ({"item_id": "H999"}, "item H999 step 4 is not in the key"),
                            ({"realistic": "maybe"}, "realistic must be yes or no")):
        bad = good.copy()
        for column, value in change.items():
            bad.loc[bad.index[2], column] = value
        bad.to_csv(tmp_path / "bad.csv", index=False)
        with pytest.raises(UserError, match=message):
            read_annotations([tmp_path / "bad.csv"], tmp_path / "key.csv")
    good.to_csv(tmp_path / "good.csv", index=False)
    with pytest.raises(UserError, match="judged item H001 step 4 twice"):
        read_annotations([tmp_path / "good.csv", tmp_path / "good.csv"], tmp_path / "key.csv")
    judged = read_annotations([tmp_path / "good.csv"], tmp_path / "key.csv")
    assert judged["ethnicity_answer"].eq(CANNOT).all()  # answers match the options case-insensitively
    tables = annotation_tables(judged)
    assert tables["annotation_agreement"]["pairs"].eq(0).all()  # one annotator: no pairs, alpha undefined
