"""Report section of the per-class recoverability and the confusion matrix (paper App. K.1, Fig. 18)."""

from __future__ import annotations

import pandas as pd
from markupsafe import Markup

from counterbench.builtin.hiring.sections_common import open_section
from counterbench.report import tables as t
from counterbench.report.charts import Cell, heatmap_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, show_table

#: at most this many confusion matrices are drawn (one per model × attribute)
MAX_MATRICES = 8


def _matrix_condition(frame: pd.DataFrame) -> str:
    """The condition the confusion matrices show: all markers when asked, else the first one asked."""
    conditions = list(dict.fromkeys(frame["condition"].astype(str)))
    return "all" if "all" in conditions else conditions[0]


def _confusion_panels(frame: pd.DataFrame) -> list[Markup]:
    condition = _matrix_condition(frame)
    part = frame[frame["condition"].astype(str).eq(condition)]
    panels = []
    for (model, attribute), cell in part.groupby(["model", "attribute"], sort=False):
        truths = list(dict.fromkeys(cell["truth"].astype(str)))
        answers = list(dict.fromkeys(cell["predicted"].astype(str)))
        lookup = {(str(r["truth"]), str(r["predicted"])): r for r in cell.to_dict("records")}
        cells = [[Cell(100 * t.as_float(lookup[(tr, an)]["share"]),
                       f"{100 * t.as_float(lookup[(tr, an)]['share']):.0f}",
                       f"true {tr} · answered {an}: {lookup[(tr, an)]['count']} resume(s)") for an in answers]
                 for tr in truths]
        panels.append(heatmap_panel(f"{model} · {attribute} (markers: {condition}), % of each true class",
                                    truths, answers, cells, vmax=100.0, cell_width=78))
    return panels[:MAX_MATRICES]


def _trend_panels(classes: pd.DataFrame, ablation: pd.DataFrame | None) -> list[Markup]:
    """Recall of each true class along the ablation steps (the paper's class-level trends)."""
    if ablation is None:
        return []
    order = ablation.drop_duplicates("condition").sort_values("step")["condition"].astype(str).tolist()
    part = classes[classes["condition"].astype(str).isin(order)]
    panels = []
    for model, cell in part.groupby("model", sort=False):
        rows = list(dict.fromkeys(zip(cell["attribute"].astype(str), cell["truth"].astype(str), strict=True)))
        lookup = {(str(r["attribute"]), str(r["truth"]), str(r["condition"])): t.as_float(r["recall"])
                  for r in cell.to_dict("records")}
        cells = [[Cell(100 * lookup.get((a, c, k), float("nan")),
                       f"{100 * lookup.get((a, c, k), float('nan')):.0f}") for k in order] for a, c in rows]
        heads = [a if i == 0 or rows[i - 1][0] != a else "" for i, (a, _) in enumerate(rows)]
        panels.append(heatmap_panel(f"{model}: % of each class recovered as markers are removed",
                                    [c for _, c in rows], order, cells, vmax=100.0, cell_width=96, row_groups=heads))
    return panels[:MAX_MATRICES]


def recovery_classes_section(ctx: ReportContext) -> Section:
    s, classes = open_section(ctx, "hiring_recovery_classes")
    confusion = ctx.nonempty("hiring_confusion")
    if confusion is not None:
        panels = _confusion_panels(confusion)
        if panels:
            s.figures.append(Figure(panels, caption="Rows: the class the markers stand for; columns: the answer. "
                                                    "Unparsed: no label could be read."))
    if classes is not None:
        trends = _trend_panels(classes, ctx.nonempty("hiring_ablation"))
        if trends:
            s.figures.append(Figure(trends, caption="Recall (%) per true class at each step of the marker ablation."))
        show_table(s, ctx, "hiring_recovery_classes", [
            t.text("model", "Model"), t.text("attribute", "Attribute"), t.text("condition", "Markers"),
            t.text("truth", "True class"), t.count("n", "Resumes"), t.share("recall", "Recall"),
            t.share("precision", "Precision"), t.num("f1", "F1", 3), t.share("cannot_share", "Cannot determine"),
        ])
    if confusion is not None:
        show_table(s, ctx, "hiring_confusion", [
            t.text("model", "Model"), t.text("attribute", "Attribute"), t.text("condition", "Markers"),
            t.text("truth", "True class"), t.text("predicted", "Answer"), t.count("count", "Resumes"),
            t.share("share", "Share of the class"),
        ])
    return s
