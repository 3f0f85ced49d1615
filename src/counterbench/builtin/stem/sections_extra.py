"""STEM report sections beyond the paper's tables: explanations cut at the token limit, the headline
extreme-profile gap, the interaction grids.

Labels enter the page escaped (the autoescaping table templates)."""

from __future__ import annotations

import pandas as pd

from counterbench.builtin.stem.sections import CELL_COLS, _section, table_section
from counterbench.report import tables as t
from counterbench.report.context import ReportContext
from counterbench.report.document import Section, show_table


def truncation_lines(shares: pd.DataFrame, sensitivity: pd.DataFrame | None, mode: str) -> list[str]:
    """The section's sensitivity lines: the overall share, its range over levels, the largest gap both ways."""
    lines = []
    for (model, context, dataset), part in shares.groupby(["model", "context", "dataset"], sort=True):
        total = part[part["attribute"].eq("(all)")]
        levels = part[part["attribute"].ne("(all)")]
        if total.empty:
            continue
        line = (f"{model} · {context} · {dataset}: {int(total['n_truncated'].iloc[0]):,} of "
                f"{int(total['n'].iloc[0]):,} explanations ({t.fmt_share(total['share'].iloc[0])}) hit the token "
                "limit")
        if not levels.empty:
            ordered = levels.sort_values("share", kind="mergesort")
            lo, hi = ordered.iloc[0], ordered.iloc[-1]
            line += (f"; by attribute level from {t.fmt_share(lo['share'])} ({lo['attribute']}: {lo['level']}) to "
                     f"{t.fmt_share(hi['share'])} ({hi['attribute']}: {hi['level']})")
        if sensitivity is not None:
            gaps = sensitivity[sensitivity["model"].astype(str).eq(str(model))
                               & sensitivity["context"].astype(str).eq(str(context))
                               & sensitivity["dataset"].astype(str).eq(str(dataset))]
            if not gaps.empty:
                top = gaps.iloc[0]
                line += (f". Largest gap ({top['attribute']}): {t.fmt_num(top['mdb_scored'])} grade levels with them "
                         f"scored, {t.fmt_num(top['mdb_dropped'])} with them dropped")
                moved = gaps.iloc[int(gaps["change"].abs().to_numpy().argmax())]
                if moved["attribute"] != top["attribute"]:
                    line += (f"; the gap truncation moves most ({moved['attribute']}): "
                             f"{t.fmt_num(moved['mdb_scored'])} → {t.fmt_num(moved['mdb_dropped'])}")
        lines.append(line + ".")
    rule = ("scored on the text received, as the paper does (the study option --truncated score)" if mode == "score"
            else "left out of every other table (the study option --truncated drop; the paper scores them)")
    lines.append(f"In this analysis the cut explanations are {rule}; --truncated chooses. "
                 "These figures are descriptive: a large change means the result depends on how the token limit "
                 "is handled — rerun with a larger limit (--retry-errors --retry-max-tokens N) to settle it.")
    return lines


def truncation_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_truncation", "stem_truncation", "Explanations cut at the token limit",
                              "Explanations that run past the token limit arrive cut off. If one group of students "
                              "gets longer explanations, its explanations are cut more often: this section shows "
                              "the share per attribute level and each attribute's gap (MDB, grade levels) with the "
                              "cut explanations scored and with them dropped.")
    if frame is None:
        return section
    mode = str(ctx.data.summary.get("truncated_explanations", "score"))
    section.notes.extend(truncation_lines(frame, ctx.nonempty("stem_truncation_sensitivity"), mode))
    show_table(section, ctx, "stem_truncation", [
        t.text("model", "Model"), t.text("context", "Context"), t.text("dataset", "Dataset"),
        t.text("attribute", "Attribute"), t.text("level", "Level"), t.count("n", "Answers"),
        t.count("n_truncated", "Cut at the limit"), t.share("share", "Share")])
    show_table(section, ctx, "stem_truncation_sensitivity", [
        *CELL_COLS, t.text("attribute", "Attribute"), t.num("mdb_scored", "Gap, cut scored", 3),
        t.num("mdb_dropped", "Gap, cut dropped", 3), t.num("change", "Change", 3, signed=True),
        t.num("mdb_z_scored", "Gap (z), scored", 3), t.num("mdb_z_dropped", "Gap (z), dropped", 3)])
    return section


def extreme_gap_section(ctx: ReportContext) -> Section:
    return table_section(ctx, "stem_extreme_gap",
        "Full intersectionality: the most privileged vs the most marginalised profile",
        "At the last step of the progressive experiment every combination of the stated "
        "attributes is one profile. The two ends are fixed in advance — every attribute at its "
        "first (privileged) level, and every attribute at its last — and their gap in grade "
        "levels is the paper's headline number.",
        [t.text("model", "Model"), t.text("context", "Context"), t.text("experiment", "Experiment"),
        t.text("privileged", "Privileged end"), t.num("mean_privileged", "MGL"),
        t.text("marginalised", "Marginalised end"), t.num("mean_marginalised", "MGL"),
        t.num("gap", "Gap", signed=True), t.pvalue("p", "p (Welch, paper's)"), t.count("n_pairs", "Pairs (null)"),
        t.pvalue("p_rank", "p (rank among pairs)"), t.num("gap_model", "Gap (additive model)", signed=True),
        t.pvalue("p_model", "p (model)"), t.pvalue("p_value", "p (both)"), t.pvalue("q_value", "q"),
        t.mark("Mark (BH within model)", n="n_pairs", unit="pairs of profiles"),
        t.num("spread", "Max − min profile (descriptive)")],
        "Mark: two tests of the null that the attributes change nothing (every profile exchangeable), "
        "combined. The rank: the designated pair's gap ranks anywhere among the gaps of all pairs of "
        "profiles at that step, p the share of pairs with a gap at least as large — it sees an effect "
        "concentrated at the two ends, but not one that covers many profiles (then many pairs differ as "
        "much). The additive model: each profile's mean (each problem's mean taken out) regressed by least "
        "squares on the attributes' levels; the gap it predicts for the two ends and its t-test see an "
        "effect that covers many profiles. p (both) = min(1, p model / 0.8, p rank / 0.2), a weighted "
        "Bonferroni combination, Benjamini–Hochberg within each model. The max − min spread picks its two "
        "profiles after seeing the answers and is descriptive only: by chance alone it is several grade "
        "levels.")


def interaction_grid_section(ctx: ReportContext) -> Section:
    section, frame = _section(ctx, "stem_interaction_grids", "stem_interaction_cells", "Interaction grids",
                              "Mean grade level (MGL) of every cell of each interaction table at the progressive "
                              "experiment's last step (the paper's Tables 12–14): rows one attribute's levels, "
                              "columns the other's, each cell averaged over its profiles and problems.")
    if frame is None:
        return section
    for (model, experiment, table), part in frame.groupby(["model", "experiment", "table"], sort=False):
        rows = list(dict.fromkeys(part["row_level"].astype(str)))
        cols = list(dict.fromkeys(part["col_level"].astype(str)))
        view = t.pivot_view(part.assign(row_level=part["row_level"].astype(str),
                                        col_level=part["col_level"].astype(str)),
                            index="row_level", columns="col_level", index_order=rows, column_order=cols,
                            cell=lambda r: t.fmt_num(r["mean"]), index_label=str(table).split(" × ")[0],
                            caption=f"{model} · {experiment} · {table} (MGL)", source="stem_interaction_cells.csv")
        section.tables.append(view)
    section.notes.append("The gaps and their marks are in the progressive section's interaction table.")
    return section
