"""The paper's remaining analyses (App. K.1, K.2, Figs. 3, 5, 13, Table 14, App. F, App. L), each recomputed
here independently from the raw answers."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix as sk_confusion
from sklearn.metrics import f1_score

from counterbench.builtin.hiring import synthetic as syn
from counterbench.builtin.hiring.analysis import analyze_hiring
from counterbench.builtin.hiring.plan import build_prompts, full_plan, plan_from_mapping
from counterbench.builtin.hiring.recoverability import CANNOT

pytestmark = pytest.mark.slow  # scheduled first (tests/conftest.py)

ETHNICITIES = ["Chinese", "Malay", "Indian", "Caucasian"]
GENDERS = ["Male", "Female"]


def _final_line(text: str) -> str:
    """The answer on the last ``###`` line (the test's own reading, not the study's parser)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip().startswith("###")]
    return re.sub(r"^###\s*", "", lines[-1]).strip() if lines else ""


@pytest.fixture(scope="module")
def recover_results() -> pd.DataFrame:
    plan = plan_from_mapping({"jobs": 1, "settings": ["recover"], "recover_jobs": 4, "rationale": [False]},
                             base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    return pd.concat([syn.answer_texts(design, "sim:a", syn.Planted(), hostile_rate=0.1),
                      syn.answer_texts(design, "sim:b", syn.Planted(p_ethnicity_languages=0.6), seed=3)],
                     ignore_index=True)


def test_per_class_recoverability_and_confusion_matrix_from_the_raw_answers(recover_results):
    tables, _ = analyze_hiring(recover_results, bootstrap=50)
    classes, confusion = tables["hiring_recovery_classes"], tables["hiring_confusion"]
    macro = tables["hiring_recoverability"].set_index(["model", "attribute", "condition"])["macro_f1"]
    checked = 0
    for (model, attribute, condition), part in recover_results.groupby(["model", "attribute", "condition"]):
        labels = GENDERS if attribute == "gender" else ETHNICITIES
        answer = part["response"].map(_final_line)
        answer = answer.where(answer.isin([*labels, CANNOT]), "Unparsed")
        truth = part["truth"].astype(str)
        mine = classes[(classes["model"] == model) & (classes["attribute"] == attribute)
                       & (classes["condition"] == condition)].set_index("truth")
        f1 = f1_score(truth, answer, labels=labels, average=None, zero_division=0)
        assert mine.loc[labels, "f1"].to_numpy() == pytest.approx(f1, abs=1e-12)
        assert mine["f1"].mean() == pytest.approx(macro[(model, attribute, condition)], abs=1e-12)
        for cls in labels:
            rows = truth.eq(cls)
            assert mine.loc[cls, "n"] == rows.sum()
            assert mine.loc[cls, "recall"] == pytest.approx((answer[rows] == cls).mean(), abs=1e-12)
            assert mine.loc[cls, "cannot_share"] == pytest.approx((answer[rows] == CANNOT).mean(), abs=1e-12)
            named = answer.eq(cls)
            if named.any():
                assert mine.loc[cls, "precision"] == pytest.approx((truth[named] == cls).mean(), abs=1e-12)
        columns = [*labels, CANNOT, "Unparsed"]
        matrix = sk_confusion(truth, answer, labels=columns)[: len(labels)]
        cell = confusion[(confusion["model"] == model) & (confusion["attribute"] == attribute)
                         & (confusion["condition"] == condition)]
        got = cell.pivot(index="truth", columns="predicted", values="count").loc[labels, columns].to_numpy()
        assert (got == matrix).all()
        shares = cell.groupby("truth")["share"].sum()
        assert shares.to_numpy() == pytest.approx(np.ones(len(labels)))
        checked += 1
    assert checked == 2 * 2 * 8  # two models × two attributes × 8 marker conditions
    hostile = confusion[confusion["model"].eq("sim:a") & confusion["predicted"].eq("Unparsed")]["count"].sum()
    assert hostile > 0  # hostile answers are counted, as Unparsed, not read as a label


def _report(tables, unsupported, tmp_path, models=("sim:a", "sim:b")) -> str:
    import counterbench
    from counterbench.report.api import write_report

    summary = {"study": "hiring", "title": "Hiring markers", "unsupported": unsupported,
               "models": {m: {"simulated": True} for m in models}}
    files = write_report(counterbench.report.context.ReportInput(tables, summary), tmp_path / "r.html")
    return files.html.read_text(encoding="utf-8")


def test_the_report_shows_the_confusion_matrices_and_class_trends(recover_results, tmp_path):
    tables, unsupported = analyze_hiring(recover_results, bootstrap=50)
    html = _report(tables, unsupported, tmp_path)
    assert "Which groups can the model recognise?" in html
    assert "sim:a · ethnicity (markers: all), % of each true class" in html
    assert "sim:b: % of each class recovered as markers are removed" in html
    assert "Share of the class" in html and "Precision" in html


def _repeated_scores() -> pd.DataFrame:
    """Score & Shortlist on 3 jobs, repeated: T = 0 three times with the same answers, T = 1 four times with
    different ones (another seed per repeat), one repeat with an unparseable answer."""
    plan = plan_from_mapping({"jobs": 3, "settings": ["score"], "rationale": [False], "recover_jobs": 0},
                             base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    parts = []
    for temperature, seeds, same in ((0.0, (7, 3, 5), True), (1.0, (4, 2, 9, 8), False)):
        for seed in seeds:
            answers = syn.answer_texts(design, "sim:a", syn.Planted(noise_sd=3.0 if same else 6.0),
                                       seed=0 if same else seed)
            parts.append(answers.assign(temperature=temperature, seed=seed, config_fp=f"cfg-{temperature}-{seed}"))
    results = pd.concat(parts, ignore_index=True)
    results.loc[results.index[5], "response"] = "### ninety"
    return results


def test_temperature_repeat_stability_from_the_raw_answers():
    results = _repeated_scores()
    tables, _ = analyze_hiring(results, bootstrap=50)
    table = tables["hiring_stability"].set_index(["temperature", "repeats"])
    results = results.assign(number=pd.to_numeric(results["response"].map(_final_line), errors="coerce"))
    neutral = results[results["group"].eq("neutral")]
    for temperature, seeds in ((0.0, (3, 5, 7)), (1.0, (2, 4, 8, 9))):  # repeats in seed order
        for n in range(1, len(seeds) + 1):
            kept = neutral[neutral["temperature"].eq(temperature) & neutral["seed"].isin(seeds[:n])]
            row = table.loc[(temperature, n)]
            assert row["mean_score"] == pytest.approx(kept["number"].mean(), abs=1e-12)
            last = kept[kept["seed"].eq(seeds[n - 1])]["number"]
            assert row["repeat_mean"] == pytest.approx(last.mean(), abs=1e-12)
            per_resume = kept.groupby("prompt_id")["number"].var(ddof=1).dropna()
            if n == 1:
                assert np.isnan(row["avg_variance"])
            else:
                assert row["avg_variance"] == pytest.approx(per_resume.mean(), abs=1e-12)
            assert row["resume_set"] == "neutral" and row["resumes"] == 3
    assert table.loc[(0.0, 3), "avg_variance"] == 0.0  # identical repeats: no variance
    assert table.loc[(1.0, 4), "avg_variance"] > 10.0


def test_stability_needs_repeats_and_is_reported(tmp_path):
    results = _repeated_scores()
    single = results[results["config_fp"].eq("cfg-0.0-7")]
    tables, unsupported = analyze_hiring(single, bootstrap=50)
    assert tables["hiring_stability"].empty and "--generation-seed" in unsupported["hiring_stability"]
    tables, unsupported = analyze_hiring(results, bootstrap=50)
    html = _report(tables, unsupported, tmp_path, models=("sim:a",))
    assert "Are the scores stable across repeats and temperatures?" in html
    assert "Average across-resume variance (all repeats)" in html and "T = 0.5" not in html and "T = 1" in html


@pytest.fixture(scope="module")
def three_models() -> pd.DataFrame:
    plan = plan_from_mapping({"jobs": 6, "variations": [1, 2], "settings": ["compare", "score"],
                              "language_only": False, "recover_jobs": 0}, base=full_plan())
    design = build_prompts(plan).drop(columns=["system", "user"])
    plants = {"sim:chinese": syn.Planted(compare_effects={"Chinese Male": 0.3}, score_effects={"Chinese": 6.0}),
              "sim:fair": syn.Planted(),
              "sim:malay": syn.Planted(compare_effects={"Malay": 0.2}, score_effects={"Malay Female": 4.0})}
    return pd.concat([syn.answer_texts(design, m, p, seed=i) for i, (m, p) in enumerate(plants.items())],
                     ignore_index=True)


def _mine(results: pd.DataFrame):
    """Group win rates, mean scores and TSRs recomputed from the raw answers."""
    answer = results["response"].map(_final_line)
    comp = results[results["use_case"].str.startswith("compare")].assign(verdict=answer)
    comp = comp[comp["verdict"].isin(["A", "B", "Tie"])]
    comp = comp.assign(points=np.where(comp["verdict"].eq("Tie"), 0.5, (comp["verdict"] == comp["position"]) * 1.0),
                       rationale=comp["use_case"].str.endswith("_rationale"))
    per = comp.groupby(["model", "rationale", "gender_dominance", "job_id", "group", "variation"])["points"].mean()
    wr = per.groupby(["model", "rationale", "group"]).mean()
    sc = results[results["use_case"].str.startswith("score")].assign(
        score=pd.to_numeric(answer, errors="coerce"), rationale=lambda f: f["use_case"].str.endswith("_rationale"))
    sc = sc[sc["score"].between(1, 100)]
    means = sc[sc["group"] != "neutral"].groupby(["model", "rationale", "group"])["score"].mean()
    top = sc["score"] == sc.groupby(["model", "rationale", "job_id"])["score"].transform("max")
    tops = sc.assign(top=top).groupby(["model", "rationale", "job_id", "group"])["top"].any()
    tsr = 100 * tops.groupby(["model", "rationale", "group"]).mean()
    return per, wr, means, tsr[tsr.index.get_level_values("group") != "neutral"]


def test_across_model_summaries_from_the_raw_answers(three_models):
    tables, _ = analyze_hiring(three_models, bootstrap=50)
    per, wr, means, tsr = _mine(three_models)
    conditions = {}
    for (model, rationale), part in wr.groupby(["model", "rationale"]):
        conditions[(model, "compare", rationale)] = (part.max() - part.min(), abs(part.mean() - 0.5) / 0.5)
    for (model, rationale), part in tsr.groupby(["model", "rationale"]):
        conditions[(model, "score", rationale)] = ((part.max() - part.min()) / 100, abs(part.mean() - 100) / 100)
    ranking = tables["hiring_model_ranking"].set_index("model")
    mean_disparity = {m: np.mean([v[0] for k, v in conditions.items() if k[0] == m]) for m in ranking.index}
    for model in ranking.index:
        assert ranking.loc[model, "mean_disparity"] == pytest.approx(mean_disparity[model], abs=1e-12)
        devs = [v[1] for k, v in conditions.items() if k[0] == model]
        assert ranking.loc[model, "mean_deviation"] == pytest.approx(np.mean(devs), abs=1e-12)
        assert ranking.loc[model, "n_conditions"] == 4
    assert ranking.index.tolist() == sorted(mean_disparity, key=mean_disparity.get)
    assert ranking["rank"].tolist() == [1, 2, 3] and ranking.index[0] == "sim:fair"
    means_table = tables["hiring_across_models"].set_index(["setting", "rationale"])
    for (setting, rationale), row in means_table.iterrows():
        values = [v for k, v in conditions.items() if k[1] == setting and k[2] == rationale]
        assert row["mean_disparity"] == pytest.approx(np.mean([v[0] for v in values]), abs=1e-12)
        assert row["max_deviation"] == pytest.approx(max(v[1] for v in values), abs=1e-12)
        assert row["n_models"] == 3
    first = tables["hiring_rank_first"].set_index(["setting", "rationale", "gender_dominance", "group"])
    def firsts(values: pd.Series, levels: list[int]) -> list[str]:  # every group tied at a model's top counts
        return [g for _, part in values.groupby(level="model") for g, v in part.droplevel(levels).items()
                if v == part.max()]

    for setting, values in (("compare", wr), ("score", means)):
        for rationale in (False, True):
            tops = firsts(values[values.index.get_level_values("rationale") == rationale], [0, 1])
            for group in set(values.index.get_level_values("group")):
                assert first.loc[(setting, rationale, "all", group), "n_first"] == tops.count(group)
    assert first.loc[("compare", False, "all", "Chinese Male"), "n_first"] >= 1
    by_job = per.groupby(["model", "rationale", "gender_dominance", "group"]).mean()
    for (rationale, dominance), part in by_job.groupby(["rationale", "gender_dominance"]):
        tops = firsts(part, [0, 1, 2])
        assert first.loc[("compare", rationale, dominance, "Chinese Male"), "n_first"] == tops.count("Chinese Male")
        assert first.loc[("compare", rationale, dominance, "Chinese Male"), "n_models"] == 3
    # Table 14: per model the mean of the gender groups of each ethnicity, then the mean over models
    ethnicity = by_job.reset_index().assign(ethnicity=lambda f: f["group"].str.split(" ").str[0])
    eth = ethnicity.groupby(["model", "rationale", "gender_dominance", "ethnicity"])["points"].mean()
    over = eth.groupby(["rationale", "gender_dominance", "ethnicity"]).mean()
    fit = tables["hiring_job_fit_models"].set_index(["rationale", "gender_dominance", "ethnicity"])
    assert fit["win_rate"].sort_index().to_numpy() == pytest.approx(over.sort_index().to_numpy(), abs=1e-12)
    spread = over.groupby(["rationale", "gender_dominance"]).agg(lambda s: s.max() - s.min())
    assert fit["range"].groupby(["rationale", "gender_dominance"]).first().sort_index().to_numpy() == \
        pytest.approx(spread.sort_index().to_numpy(), abs=1e-12)


def test_across_model_section_in_the_report_and_one_model_is_not_enough(three_models, tmp_path):
    one, why = analyze_hiring(three_models[three_models["model"].eq("sim:fair")], bootstrap=50)
    assert one["hiring_model_ranking"].empty and "at least two models" in why["hiring_rank_first"]
    tables, unsupported = analyze_hiring(three_models, bootstrap=50)
    html = _report(tables, unsupported, tmp_path, models=("sim:chinese", "sim:fair", "sim:malay"))
    assert "Across models: disparity, deviation and group ranking" in html
    assert "Models ranked by mean disparity (lower is better)" in html
    assert "Job fit averaged over models (Table 14 of the paper)" in html
    assert "sim:malay · with rationale: disparity" in html  # the scatter's points carry their model


def test_prompt_variants_from_the_cli_options_and_their_table(tmp_path, cli):
    import counterbench
    from counterbench.errors import UserError

    table = counterbench.prompts("hiring", preset="quick", variant=["standard", "no-full-range"])
    variant = table[table["variant"].eq("no-full-range")]
    standard = table[table["variant"].eq("standard") & table["use_case"].eq("score")]
    assert set(variant["use_case"]) == {"score"} and len(variant) == len(standard) == 27  # only what it edits
    assert standard["user"].str.contains("Use the full range of the scale.").all()
    assert not variant["user"].str.contains("full range").any()
    assert (variant["user"].to_numpy() == standard["user"].str.replace(" Use the full range of the scale.", "")
            .to_numpy()).all()
    assert table["prompt_id"].is_unique and variant["prompt_id"].str.endswith("~no-full-range").all()
    with pytest.raises(UserError, match=r"unknown variant 'shouting'"):
        counterbench.prompts("hiring", preset="quick", variant=["shouting"])
    # through the CLI, into a store, and back out as a table of the report
    out = tmp_path / "out"
    proc = cli("audit", "hiring", "--model", "sim:hiring-biased", "--model", "sim:hiring-fair", "--preset", "quick",
               "--use-case", "score", "--use-case", "compare", "--variant", "standard", "--variant", "no-full-range",
               "--variant", "neutral-role", "--store", str(tmp_path / "v.db"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out / "analysis" / "hiring_prompt_variants.csv")
    assert set(got["variant"]) == {"standard", "no-full-range", "neutral-role"}
    assert set(got.loc[got["variant"].eq("no-full-range"), "setting"]) == {"score"}
    assert set(got.loc[got["variant"].eq("neutral-role"), "setting"]) == {"compare", "score"}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Do the disparities persist under other prompt wordings?" in html
    # the main tables hold the standard prompts only: at most 3 scores per group (3 jobs, one variation), not 6
    scores = pd.read_csv(out / "analysis" / "hiring_scores.csv")
    assert scores["n"].max() == 3 and scores.groupby("model")["n"].sum().between(20, 27).all()


def test_prompt_variant_table_recomputed_from_the_raw_answers(three_models):
    import counterbench

    base = three_models
    design = counterbench.prompts("hiring", variant=["no-full-range"], profile=sorted(set(base["job_id"])),
                                  question_variant=[0, 1, 2], use_case=["score", "score_rationale"])
    design = design.drop(columns=["system", "user"])
    shifted = [syn.answer_texts(design, m, syn.Planted(score_effects={"Indian": 5.0}), seed=11)
               for m in ("sim:chinese", "sim:fair", "sim:malay")]
    results = pd.concat([base.assign(variant="standard"), *shifted], ignore_index=True)
    tables, _ = analyze_hiring(results, bootstrap=50)
    got = tables["hiring_prompt_variants"].set_index(["model", "setting", "rationale", "variant"])
    _, _, _, tsr_standard = _mine(base)
    _, _, _, tsr_variant = _mine(pd.concat(shifted, ignore_index=True))
    for (model, rationale), part in tsr_variant.groupby(["model", "rationale"]):
        disparity = (part.max() - part.min()) / 100
        row = got.loc[(model, "score", rationale, "no-full-range")]
        assert row["disparity"] == pytest.approx(disparity, abs=1e-12)
        reference = tsr_standard.loc[(model, rationale)]
        assert row["disparity_change"] == pytest.approx(disparity - (reference.max() - reference.min()) / 100,
                                                        abs=1e-12)
        assert row["deviation"] == pytest.approx(abs(part.mean() - 100) / 100, abs=1e-12)
    assert ("sim:fair", "compare", False, "no-full-range") not in got.index  # the variant edits scoring only
    # the main tables are the standard prompts' (as without the variant)
    alone, _ = analyze_hiring(base.assign(variant="standard"), bootstrap=50)
    pd.testing.assert_frame_equal(tables["hiring_top_score_rates"], alone["hiring_top_score_rates"])


def test_average_rank_table_and_chart_say_score_ranks_use_the_mean_score(three_models, tmp_path):
    tables, unsupported = analyze_hiring(three_models, bootstrap=50)
    _, wr, means, _ = _mine(three_models)
    ranks = tables["hiring_group_ranks"].set_index(["setting", "rationale", "group"])["average_rank"]
    for setting, values in (("compare", wr), ("score", means)):
        wide = values.unstack("group")
        per_model = wide.rank(axis=1, ascending=False, method="average")
        for rationale in (False, True):
            mine = per_model[per_model.index.get_level_values("rationale") == rationale].mean()
            for group, value in mine.items():
                assert ranks[(setting, rationale, group)] == pytest.approx(value, abs=1e-12)
    html = _report(tables, unsupported, tmp_path, models=("sim:chinese", "sim:fair", "sim:malay"))
    assert "Average rank across models (1 = best)" in html
    assert "Score &amp; Shortlist (mean score)" in html and "by mean score in Score &amp; Shortlist" in html
    assert "Setting (ranked by)" in html
