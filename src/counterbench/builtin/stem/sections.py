"""The STEM study's report sections, one per table (the study's report hook).

Every label (a characteristic string, a model name) enters the page escaped: tables through the
autoescaping templates, charts through :class:`counterbench.report.svg.Svg`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
from markupsafe import Markup

from counterbench.builtin.stem.analysis import MIN_PROFILES
from counterbench.builtin.stem.progressive_chart import progressive_panels
from counterbench.builtin.stem.shap_chart import beeswarm_panel
from counterbench.report import tables as t
from counterbench.report.charts import BarRow, BarValue, bar_domain, hbar_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, series_color, show_table
from counterbench.report.svg import SERIES_COLORS

CELL_COLS = [t.text("model", "Model"), t.text("task", "Task"), t.text("context", "Context"),
             t.text("dataset", "Dataset"), t.text("role", "Role")]


def _section(ctx: ReportContext, key: str, name: str, title: str, blurb: str) -> tuple[Section, pd.DataFrame | None]:
    section = Section(key, title, blurb, group="STEM explanations")
    frame = ctx.nonempty(name)
    if frame is None:
        reason = ctx.unsupported.get(name, "no data for this table")
        section.unsupported = reason[:1].upper() + reason[1:].rstrip(".") + "."
    return section, frame


def table_section(ctx: ReportContext, name: str, title: str, blurb: str, columns: Sequence[t.Col], note: str = "",
                  *, key: str | None = None,
                  figures: Callable[[pd.DataFrame], Sequence[Figure]] | None = None) -> Section:
    """A section of one table ``name`` (its key too, unless ``key``): the blurb, the ``figures`` drawn from the
    table, its ``columns`` and the ``note``; the reason instead when the table is empty."""
    section, frame = _section(ctx, key or name, name, title, blurb)
    if frame is None:
        return section
    if figures is not None:
        section.figures.extend(figures(frame))
    show_table(section, ctx, name, columns)
    if note:
        section.notes.append(note)
    return section


def descriptive_section(ctx: ReportContext) -> Section:
    return table_section(ctx, "stem_descriptive", "Chosen level and grade level",
        "MCV is the mean level (1 = most elementary, 5 = most advanced) of the explanation the "
        "model chose; MGL the mean readability grade of the explanations it wrote (mean of "
        "Flesch–Kincaid, Gunning Fog and Coleman–Liau). One row per model × task × context × "
        "dataset × role, main experiment.",
        [*CELL_COLS, t.text("metric", "Metric"), t.count("N", "N"), t.num("mean", "Mean"), t.num("std", "SD"),
        t.num("min", "Min"), t.num("median", "Median"), t.num("max", "Max"), t.num("iqr", "IQR"),
        t.text("scored_by", "Scored by")])


BIAS_BLURB = {
    False: "The outcome is z-scored within each cell; each level of an attribute gets its mean z. MAB is the mean "
           "distance of the levels from their unweighted average, MDB the spread between the highest and lowest "
           "level (also in raw units: levels or grades). The extreme level is the one farthest from the average, "
           "with its signed deviation.",
    True: "The outcome is z-scored within each cell and subject (the paper's §3.5); each level of an attribute gets "
          "its mean z. MAB is the mean |z| of the levels (the paper's Eq. 3), MDB the spread between the highest and "
          "lowest level (Eq. 4; also in raw units: levels or grades). The extreme level is the level with the "
          "largest |z|, with its signed z (the paper's Table 4).",
}
BIAS_CONVENTION = {
    False: "Convention: counterbench's (the default). Give --convention paper (after the study's name) for the "
           "paper's (z within subject, MAB as Eq. 3, Table 4's extreme group); the STEM documentation sets them "
           "side by side.",
    True: "Convention: the paper's (--convention paper); the default is counterbench's (z within the "
          "cell, MAB around the unweighted mean of the levels); the STEM documentation sets them side by side.",
}




def bias_section(ctx: ReportContext) -> Section:
    paper = str(ctx.data.summary.get("stem_convention", "counterbench")) == "paper"
    section, frame = _section(ctx, "stem_bias", "stem_bias", "Bias by attribute (MAB, MDB)", BIAS_BLURB[paper])
    section.notes.append(BIAS_CONVENTION[paper])
    if frame is None:
        return section
    panels = []
    with_null = "mab_null" in frame.columns
    ranked = frame.assign(_mab=pd.to_numeric(frame["mab_z"], errors="coerce")).sort_values("_mab", ascending=False)
    for (model, task), part in ranked.groupby(["model", "task"], sort=False):  # the most biased model's first
        rows = []
        for r in part.head(12).to_dict("records"):
            role = f" {r['role']}" if task == "ranking" else ""
            mark = "*" if with_null and t.fmt_flag(r.get("significant")) == "✓" else ""
            bars = [BarValue("MAB (z)", t.as_float(r["mab_z"]), SERIES_COLORS[0], mark=mark)]
            if with_null:
                bars.append(BarValue(NO_BIAS, t.as_float(r["mab_null"]), NO_BIAS_COLOR))
            rows.append(BarRow(f"{r['attribute']}: {r['context']}{role}", bars))
        panels.append(hbar_panel(f"Largest MAB (z units): {model} · {task}", rows, domain=bar_domain(rows),
                                 width=640, x_label="MAB (z)", value_format="{:.2f}"))
    legend = [("MAB (z)", SERIES_COLORS[0]), (NO_BIAS, NO_BIAS_COLOR)] if with_null else []
    section.figures.append(Figure(panels[:8], legend=legend, caption="The 12 largest attribute biases of each model "
                                  "and task, the largest first (at most 8 panels; the table has every cell)"
                                  + ("; * marked (BH within model)." if with_null else ".")))
    few = _few_answers_note(ctx.nonempty("stem_group_scores"))
    if few:
        section.notes.insert(0, few)
    shown = show_table(section, ctx, "stem_bias", [
        *CELL_COLS, t.text("attribute", "Attribute"), t.num("mab_z", "MAB (z)", 3),
        t.num("mab_null", "MAB with no bias (z)", 3), t.num("mdb_z", "MDB (z)", 3),
        t.num("mdb_null", "MDB with no bias (z)", 3),
        t.num("mab", "MAB (raw)", 3), t.num("mdb", "MDB (raw)", 3), t.text("extreme_level", "Extreme level"),
        t.num("extreme_dev_z", "Its deviation (z)", 3, signed=True), t.pvalue("p_value", "p (levels shuffled)"),
        t.pvalue("q_value", "q"), t.mark("Mark (BH within model)", n="n_profiles", unit="profiles")])
    if shown is not None and "mab_null" in frame.columns:
        section.notes.append(BIAS_NULL)
    return section


BIAS_NULL = ("MAB (MDB) with no bias: the mean MAB (MDB) of the same answers with the attribute's levels shuffled "
             "over whole profiles (999 times) — what noise alone gives on this design. Marks (on MAB): p is the "
             "share of shuffles with an MAB at least the observed; Benjamini–Hochberg within each model over its "
             "attributes, tasks, contexts and roles; a row whose profiles allow fewer than 40 arrangements is not "
             "tested.")


NO_BIAS = "MAB with no bias (levels shuffled)"
NO_BIAS_COLOR = "#b8bfca"

#: a level mean over fewer answers than this is called mostly noise in the bias section's warning
FEW_ANSWERS = 10


def _few_answers_note(levels: pd.DataFrame | None) -> str:
    """A warning when some attribute levels rest on few answers (MAB and MDB grow with the levels' noise),
    else ''."""
    if levels is None or "n" not in levels.columns:
        return ""
    n = pd.to_numeric(levels["n"], errors="coerce")
    few = int((n < FEW_ANSWERS).sum())
    if not few:
        return ""
    return (f"Warning: {few} of {len(n)} attribute levels rest on fewer than {FEW_ANSWERS} answers (the fewest: "
            f"{int(n.min())}). MAB and MDB grow with the noise of small levels — a model with no bias gets large "
            "values here too (compare the column MAB with no bias), and the tests have little power. On a design "
            "this small they are a smoke test, not a finding; the paper's design has 100 profiles per context.")


PAIRWISE_FAMILY = ("Marks: profile level (each profile's mean over its problems is one unit), a studentized "
                   "permutation test of the two levels' profiles, Benjamini–Hochberg within each model over all its "
                   "pairs of levels of every attribute, task, context and role; a comparison with fewer than "
                   "{min} profiles on a side is not tested. The paper's response-level q counts every answer as "
                   "independent — a profile's answers share its wording, so it marks differences that are not there "
                   "(see the STEM documentation's calibration) — and is shown for comparison only.")


def pairwise_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_pairwise", "stem_pairwise", "Pairwise comparisons (Welch, Cohen's d, FDR)",
                              "Every pair of levels of every attribute within each cell. Response level treats each "
                              "answer as independent (as the paper); profile level first averages each profile's "
                              "answers over problems, so a profile counts once (no pseudo-replication). "
                              "d = a minus b over the pooled-average SD.")
    if frame is None:
        return section
    n = len(frame)
    prof = _truthy(frame, "significant_profile")
    tested = _truthy(frame, "testable_profile") if "testable_profile" in frame.columns else pd.Series(True, frame.index)
    resp = _truthy(frame, "significant_response")
    section.notes.append(f"{int(prof.sum())} of {int(tested.sum())} tested comparisons are marked at the profile "
                         f"level ({n - int(tested.sum())} of {n} have too few profiles to test); the paper's "
                         f"response-level rule would mark {int(resp.sum())} of {n}.")
    section.notes.append(PAIRWISE_FAMILY.format(min=MIN_PROFILES))
    # the profile-level numbers behind the mark first, then the paper's response-level ones; the Mark
    # column (pinned) stays in view at the right edge while the table scrolls sideways
    cols = [*CELL_COLS, t.text("attribute", "Attribute"),
            t.Col("a vs b", ("level_a", "level_b"),
                  lambda r: f"{t.fmt_text(r['level_a'])} vs {t.fmt_text(r['level_b'])}", numeric=False),
            t.num("mean_a_response", "Mean a"), t.num("mean_b_response", "Mean b"),
            t.num("d_profile", "d (prof.)", signed=True),
            t.Col("Profiles a / b", ("n_a_profile", "n_b_profile"),
                  lambda r: f"{t.fmt_int(r['n_a_profile'])} / {t.fmt_int(r['n_b_profile'])}"),
            t.pvalue("p_fdr_profile", "q (prof.)"),
            t.num("t_response", "t (resp.)"), t.num("d_response", "d (resp.)", signed=True),
            t.pvalue("p_fdr_response", "q (resp., paper's)"),
            t.mark("Mark (prof., BH within model)", significant="significant_profile", testable="testable_profile",
                   n="n_min_profile", unit="profiles")]
    show_table(section, ctx, "stem_pairwise", cols, caption="Comparisons marked at the profile level or significant "
               "by the paper's response-level rule", max_rows=200,
               prepare=_marked_pairs)
    return section


def _marked_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    shown = frame[_truthy(frame, "significant_profile") | _truthy(frame, "significant_response")]
    return shown.assign(n_min_profile=shown[["n_a_profile", "n_b_profile"]].min(axis=1))


def _truthy(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[column].map(lambda v: t.fmt_flag(v) == "✓")


def shap_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_shap", "stem_shap", "SHAP attribution",
                              "Exact SHAP values of a linear model of the outcome on one-hot profile attributes: how "
                              "much each attribute moves a response away from the average. Mean |SHAP| ranks the "
                              "attributes; in the strip charts each dot is one response (colour: the attribute's "
                              "level).")
    if str(ctx.data.summary.get("stem_shap_method", "linear")) == "tree":
        section.blurb = ("TreeSHAP values of a gradient-boosted tree model of the outcome on one-hot profile "
                         "attributes (the study option --shap tree): how much each attribute moves a response "
                         "away from the average, interactions included. Mean |SHAP| ranks the attributes; in the "
                         "strip charts each dot is one response (colour: the attribute's level).")
    refused = show_table(section, ctx, "stem_shap_refused", [
        *CELL_COLS, t.count("n_profiles", "Profiles"), t.count("parameters", "Parameters"),
        t.count("rank", "Design rank"), t.text("reason", "Why no attribution")],
        caption="Cells refused: their SHAP values would not be unique (or there is nothing to attribute)")
    if refused is not None:
        section.notes.append(f"{len(refused)} cell(s) have no SHAP attribution and no chart: a linear model on the "
                             "one-hot attributes is identified only when the design's rank equals its parameters "
                             "(one per level beyond the first, plus the intercept) with profiles to spare; otherwise "
                             "two exact fits of the same answers give different attributions.")
        if frame is None:
            section.unsupported = None  # the refusal table says why, cell by cell
    if frame is None:
        return section
    points = ctx.nonempty("stem_shap_points")
    if points is not None:
        cells = ["model", "task", "context", "role"]
        strongest = points.assign(_abs=points["shap"].abs()).groupby([*cells, "attribute"])["_abs"].mean() \
            .groupby(level=cells).max().sort_values(ascending=False, kind="stable")
        by_cell = dict(iter(points.groupby(cells, sort=False)))
        panels = [beeswarm_panel(by_cell[cell], " · ".join(map(str, cell))) for cell in list(strongest.index)[:8]]
        shown = f"the {len(panels)} of {len(strongest)} cells" if len(strongest) > len(panels) else "every cell"
        section.figures.append(Figure(panels, caption=f"SHAP values per response (a seeded sample per cell): {shown} "
                                      "with the largest mean |SHAP| of an attribute first; the legend under each strip "
                                      "names the levels' colours."))
    show_table(section, ctx, "stem_shap", [*CELL_COLS, t.text("attribute", "Attribute"),
                                           t.num("mean_abs", "Mean |SHAP|", 3)],
               prepare=lambda f: f[f["kind"].eq("attribute")])
    return section


def kappa_section(ctx: ReportContext) -> Section:
    section = _section(ctx, "stem_kappa", "stem_kappa", "Agreement between models (Cohen's κ)",
                              "How often two models pick the same level for the same prompt, beyond chance: κ and "
                              "linear-weighted κ (near misses count partly), with observed and chance agreement.")[0]
    show_table(section, ctx, "stem_kappa", [
        t.text("context", "Context"), t.text("role", "Role"), t.text("model_1", "Model 1"),
        t.text("model_2", "Model 2"), t.count("n", "N"), t.num("kappa", "κ", 3), t.num("kappa_linear", "κ linear", 3),
        t.text("interpretation", "Reading"), t.num("observed", "Observed", 3), t.num("expected", "Chance", 3)])
    return section


def progressive_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_progressive", "stem_progressive", "Progressive intersectional experiment",
                              "Attributes are stated one more at a time (gender, income, caste or race, college "
                              "tier, disability); every combination of the stated ones is asked. The ablation "
                              "fixes college tier at IIT / Ivy League. Interaction tables at the last step compare "
                              "the column attribute's first and last level within each row level (Welch), and the "
                              "most privileged cell with the most marginalised one.")
    if frame is None:
        return section
    section.figures.append(Figure(progressive_panels(frame), caption="Grade level of the explanations per step: box "
                                  "25th–75th percentile with the median, whiskers 10th–90th, dot the mean (the "
                                  "paper's Figures 5–10)."))
    show_table(section, ctx, "stem_progressive", [
        t.text("model", "Model"), t.text("context", "Context"), t.text("experiment", "Experiment"),
        t.count("step", "Step"), t.count("n", "N"), t.num("mean", "MGL"), t.num("sd", "SD"), t.num("var", "Variance"),
        t.num("q25", "25%"), t.num("median", "Median"), t.num("q75", "75%"), t.count("n_profiles", "Profiles"),
        t.num("sd_profiles", "SD of profile means")])
    gaps = show_table(section, ctx, "stem_interaction_gaps", [
        t.text("model", "Model"), t.text("experiment", "Experiment"), t.text("table", "Table"),
        t.text("kind", "Comparison"), t.text("row_level", "Row"), t.text("comparison", "Cells"),
        t.count("n_a", "n a"), t.count("n_b", "n b"), t.num("gap", "Gap", signed=True), t.num("t", "t"),
        t.num("d", "d", signed=True), t.pvalue("p_fdr", "q (Welch, paper's)"), t.count("n_slots", "Matched profiles"),
        t.pvalue("q_value", "q (matched)"),
        t.mark("Mark (BH within model)", unit="matched profiles")])
    if gaps is not None:
        section.notes.append("Marks: an exact swap test over matched profiles — profiles that state the same levels "
                             "of every other attribute, each averaged over its problems — Benjamini–Hochberg within "
                             "each model over its interaction gaps; fewer than 6 matched profiles cannot reach "
                             "p ≤ 0.05 and are not tested. The paper's Welch q counts every answer as independent and "
                             "is shown for comparison only.")
    return section


def single_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_single_attribute", "stem_single_attribute", "Single-attribute replication",
                              "Each attribute stated alone (the others omitted), as single-attribute audits do: the "
                              "mean z of each level with a 95% interval; the baseline states no attribute.")
    if frame is None:
        return section
    panels: list[Markup] = []
    for (model, task, context, role), part in frame.groupby(["model", "task", "context", "role"], sort=True):
        if not part["mean_z"].abs().gt(1e-12).any():
            continue  # a constant model: nothing to plot (the table still lists it)
        rows = [BarRow(f"{r['attribute']}: {r['level']}", [BarValue(
            str(model), t.as_float(r["mean_z"]), series_color(0), t.as_float(r["ci_low"]), t.as_float(r["ci_high"]))])
            for r in part.to_dict("records")]
        if len(panels) < 8:
            panels.append(hbar_panel(f"{model} · {task} · {context} · {role}", rows, domain=bar_domain(rows),
                                     width=560, x_label="mean z", value_format="{:+.2f}"))
    section.figures.append(Figure(panels, caption="Forest plot: mean z per level, 95% t-intervals."))
    show_table(section, ctx, "stem_single_attribute", [
        *CELL_COLS, t.text("attribute", "Attribute"), t.text("level", "Level"), t.count("n", "N"),
        t.num("mean_z", "Mean z", signed=True), t.ci(), t.num("mean", "Mean (raw)")])
    section.notes.append("Each level is one prompt wording answered over the problems: an interval is about that "
                         "wording (its answers over problems are the units), not about every way of stating the "
                         "level; no mark is drawn from it.")
    return section


def extremes_section(ctx: ReportContext) -> Section:
    return table_section(ctx, "stem_extremes", "Top and bottom profiles",
        "The profiles with the highest and lowest mean z in each cell (main experiment).",
        [*CELL_COLS, t.text("end", "End"), t.count("rank", "Rank"), t.text("characteristic", "Profile"),
        t.num("score", "Score"), t.num("z", "Mean z", signed=True)])


def position_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_positions", "stem_positions", "Position bias in the ranking task",
                              "Options are shown in a random order per item, so a model without position preference "
                              "picks each letter 20% of the time. χ² tests against uniform, and letter × attribute "
                              "tests of whether the preference depends on who the student is (BH over each family).")
    if frame is None:
        return section
    few = "answers"
    show_table(section, ctx, "stem_positions", [
        t.text("model", "Model"), t.text("context", "Context"), t.text("role", "Role"), t.count("n", "N"),
        *[t.num(f"share_{x}", f"% {x}", 1) for x in "ABCDE"], t.num("chi2", "χ²"), t.pvalue("p_fdr", "q"),
        t.mark("Mark (BH within model)", n="n", unit=few)])
    show_table(section, ctx, "stem_position_interactions", [
        t.text("model", "Model"), t.text("context", "Context"), t.text("role", "Role"),
        t.text("attribute", "Attribute"), t.num("chi2", "χ²"), t.count("dof", "df"), t.pvalue("p_fdr", "q"),
        t.mark("Mark (BH within model)", n="n", unit=few)])
    section.notes.append("Marks: Benjamini–Hochberg within each model over the rows of each table (the unit is the "
                         "item: each shows its options in its own random order); a χ² test with an expected count "
                         "below 5 in some cell is not tested.")
    return section


def stem_sections(ctx: ReportContext) -> list[Section]:
    """Every STEM section, in the paper's order, then the position-bias table."""
    return [descriptive_section(ctx), bias_section(ctx), pairwise_section(ctx), shap_section(ctx), kappa_section(ctx),
            progressive_section(ctx), single_section(ctx), extremes_section(ctx), position_section(ctx)]
