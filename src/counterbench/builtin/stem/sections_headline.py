"""STEM report sections for the paper's remaining headline numbers: gaps inside a subgroup (e.g. medium of
instruction within IIT), the top and bottom tenth of profiles, SHAP on the progressive experiment,
single-attribute MAB/MDB and the average κ_w per model pair.

Labels enter the page escaped (the autoescaping table templates; charts through
:class:`counterbench.report.svg.Svg`)."""

from __future__ import annotations

import pandas as pd
from markupsafe import Markup

from counterbench.builtin.stem.sections import CELL_COLS, _section, _truthy, table_section
from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, bar_domain, hbar_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, series_color, show_table

#: most panels one chart of a section draws (the table lists every row)
MAX_PANELS = 8


def within_gap_section(ctx: ReportContext) -> Section:
    return table_section(ctx, "stem_within_gaps", "Gaps inside a subgroup (e.g. within IIT)",
        "Among the profiles that share one level of another attribute — e.g. college tier IIT — "
        "the mean outcome at an attribute's first level minus its last: English − Hindi/Regional "
        "medium, High − Low income, General − ST caste, Able-bodied − Disabled. The paper's "
        "column names the number it reports for each.",
        [*CELL_COLS, t.text("experiment", "Experiment"), t.text("within", "Within"), t.text("comparison", "Levels"),
        t.num("mean_a", "Mean a"), t.num("mean_b", "Mean b"), t.num("gap", "Gap", signed=True),
        t.pvalue("p", "p (Welch over answers, paper's)"), t.text("test", "Test (profiles)"),
        t.count("n_units", "Profiles / pairs"), t.pvalue("q_value", "q"),
        t.mark("Mark (BH within model)", n="n_units", unit="profiles"), t.text("paper", "Paper")],
        "Marks: each profile's answers are averaged over its problems and the profile is the unit — "
        "in the main experiment a studentized permutation test of the two levels' profiles (at least "
        "3 a side), at a designed experiment's last step an exact swap test of matched profiles "
        "(alike in every other stated attribute, at least 6 pairs) — Benjamini–Hochberg within each "
        "model over the rows of this table. In the main experiment only about a quarter of the "
        "profiles are at one college tier, so these gaps rest on few profiles.")


def decile_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_deciles", "stem_deciles", "Who is in the top and bottom tenth",
                              "Profiles ranked by their mean outcome over the problems (main experiment): each "
                              "attribute level's share of the top and the bottom tenth, against its share of all "
                              "profiles (the paper: \"100% of the top decile are English-medium\").")
    if frame is None:
        return section
    tests = frame.drop_duplicates([c for c in ("model", "task", "context", "dataset", "role", "end", "attribute")])
    section.notes.append(f"{int(_truthy(tests, 'significant').sum())} of {int(_truthy(tests, 'testable').sum())} "
                         "tested attribute × tenth make-ups are marked (a mark belongs to the attribute: its levels' "
                         "rows share it). Mark: with nothing planted every profile is exchangeable, so a tenth is a "
                         "random draw of profiles; p is the share of 9,999 random tenths whose χ² against the level "
                         "shares of all profiles is at least the observed, Benjamini–Hochberg within each model; a "
                         "tenth of fewer than 5 profiles is not tested. An effect on one attribute also shifts the "
                         "tenth's make-up on attributes associated with it in the sample, so read a marked level "
                         "next to the pairwise and bias tables.")
    show_table(section, ctx, "stem_deciles", [
        *CELL_COLS, t.text("end", "Tenth"), t.text("attribute", "Attribute"), t.text("level", "Level"),
        t.count("in_end", "Profiles there"), t.count("n_end", "Of"), t.share("share_end", "Share there"),
        t.share("share_all", "Share of all"), t.pvalue("q_value", "q"),
        t.mark("Mark (BH within model)", n="n_profiles", unit="profiles")],
        caption="The levels most over- or under-represented (every marked row, then the largest departures)",
        prepare=_largest_departures, max_rows=60)
    return section


def _largest_departures(frame: pd.DataFrame) -> pd.DataFrame:
    shift = (pd.to_numeric(frame["share_end"]) - pd.to_numeric(frame["share_all"])).abs()
    order = frame.assign(_marked=_truthy(frame, "significant"), _shift=shift)
    order = order.sort_values(["_marked", "_shift"], ascending=[False, False], kind="mergesort")
    return order.drop(columns=["_marked", "_shift"])


def progressive_shap_panels(frame: pd.DataFrame) -> list[Markup]:
    """One bar chart per model × context × experiment: mean |SHAP| per stated attribute at each step."""
    panels: list[Markup] = []
    shown = frame[frame["mean_abs_shap"].notna()]
    order = shown.groupby("model")["mean_abs_shap"].max().sort_values(ascending=False).index
    for model in order:
        for (context, experiment), part in shown[shown["model"].eq(model)].groupby(["context", "experiment"],
                                                                                   sort=True):
            rows = []
            for r in part.sort_values(["step", "mean_abs_shap"], ascending=[True, False]).to_dict("records"):
                mark = "*" if t.fmt_flag(r.get("significant")) == "✓" else ""
                rows.append(BarRow(f"step {r['step']}: {r['attribute']}", [BarValue(
                    "mean |SHAP|", t.as_float(r["mean_abs_shap"]), series_color(int(r["step"]) - 1), mark=mark)]))
            if rows and len(panels) < MAX_PANELS:
                panels.append(hbar_panel(f"{model} · {context} · {experiment}", rows, domain=bar_domain(rows),
                                         width=620, x_label="mean |SHAP| (grade levels)", value_format="{:.2f}"))
    return panels


def progressive_shap_section(ctx: ReportContext) -> Section:
    return table_section(ctx, "stem_progressive_shap",
        "SHAP on the progressive experiment",
        "At every step, an exact linear SHAP attribution of each profile's mean grade level to "
        "the attributes stated so far: how much each attribute moves a profile away from the "
        "step's average (the models with the largest attributions first).",
        [t.text("model", "Model"), t.text("context", "Context"), t.text("experiment", "Experiment"),
        t.count("step", "Step"), t.text("attribute", "Attribute"), t.count("n_profiles", "Profiles"),
        t.num("mean_abs_shap", "Mean |SHAP|", 3), t.pvalue("p_value", "p (null over profiles)"),
        t.pvalue("q_value", "q"), t.mark("Mark (BH within model)", n="n_profiles", unit="profiles"),
        t.text("reason", "Why not attributed")],
        "Mark: with nothing planted a step's profiles are exchangeable; p is the share of 999 "
        "shufflings of the profile means whose mean |SHAP| for the attribute is at least the "
        "observed. A step with fewer profiles than parameters plus two (step 1: three profiles) is "
        "not attributed.",
        figures=lambda frame: [Figure(progressive_shap_panels(frame), caption="Mean |SHAP| per stated attribute and "
        "step; * marked (BH within model).")])


def single_bias_section(ctx: ReportContext) -> Section:
    return table_section(ctx, "stem_single_bias", "Single-attribute MAB and MDB",
        "The single-attribute replication's levels (each stated alone) summarised as in the bias "
        "table: MAB, the mean distance of the levels' mean z from their average, and MDB, the "
        "highest minus the lowest level (z and raw units).",
        [*CELL_COLS, t.text("attribute", "Attribute"), t.count("n_levels", "Levels"), t.num("mab_z", "MAB (z)", 3),
        t.num("mdb_z", "MDB (z)", 3), t.num("mab", "MAB (raw)", 3), t.num("mdb", "MDB (raw)", 3),
        t.text("extreme_level", "Extreme level"), t.pvalue("p_wordings", "p (wordings differ)")],
        "Descriptive, no mark: each level is a single prompt wording, so a level cannot be told "
        "apart from its wording. p (wordings differ) shuffles the levels within each problem: a small "
        "value says the wordings' answers differ beyond their noise, not that the attribute matters.")


def kappa_average_section(ctx: ReportContext) -> Section:
    return table_section(ctx, "stem_kappa_average", "Average agreement per model pair",
        "The linear-weighted κ of each model pair averaged over contexts, roles and datasets "
        "(the paper's Table 9 footer).",
        [t.text("model_1", "Model 1"), t.text("model_2", "Model 2"), t.count("n_cells", "Cells"), t.count("n", "N"),
        t.num("mean_kappa_linear", "Mean κ linear", 3), t.num("min_kappa_linear", "Min", 3),
        t.num("max_kappa_linear", "Max", 3), t.num("mean_kappa", "Mean κ", 3),
        t.num("null_mean", "Mean under the null", 3), t.pvalue("q_value", "q"),
        t.mark("Mark (BH over pairs)", n="n", unit="answers")],
        "Mark: agreement beyond chance. The null shuffles the second model's profiles within each "
        "cell (a profile's answers to the subjects stay together), 999 times; p is the share of "
        "shufflings whose mean κ linear is at least the observed; Benjamini–Hochberg over the pairs.")
