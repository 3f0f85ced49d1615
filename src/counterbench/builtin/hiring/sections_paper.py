"""Report sections of the paper's remaining analyses: prompt variants (App. F), temperature / repeat stability
(App. K.2)."""

from __future__ import annotations

from counterbench.builtin.hiring.sections_common import model_heads, open_section, variant_label, with_variant
from counterbench.report import tables as t
from counterbench.report.charts import Cell, heatmap_panel
from counterbench.report.context import ReportContext
from counterbench.report.document import Figure, Section, show_table


def stability_section(ctx: ReportContext) -> Section:
    s, frame = open_section(ctx, "hiring_stability")
    if frame is None:
        return s
    last = frame.sort_values("repeats").groupby(["model", "rationale", "temperature"], sort=False).tail(1)
    keys = list(dict.fromkeys(zip(last["model"], last["rationale"], strict=True)))
    temps = sorted(dict.fromkeys(last["temperature"].astype(float)))
    lookup = {(r["model"], r["rationale"], float(r["temperature"])): r for r in last.to_dict("records")}
    cells = []
    for key in keys:
        row = []
        for temp in temps:
            r = lookup.get((*key, temp))
            value = t.as_float(r["avg_variance"]) if r is not None else float("nan")
            row.append(Cell(value, t.fmt_num(value, 2), f"T = {temp:g}: average variance {t.fmt_num(value, 3)} over "
                            f"{r['repeats'] if r is not None else 0} repeat(s)"))
        cells.append(row)
    if keys and len(keys) <= 40:
        labels = [variant_label(r) for _, r in keys]  # the model heads its rows, so no label is cut
        heads = model_heads(keys)
        s.figures.append(Figure([heatmap_panel("Average across-resume variance (all repeats)", labels,
                                               [f"T = {x:g}" for x in temps], cells, cell_width=74,
                                               row_groups=heads)]))
    show_table(s, ctx, "hiring_stability", [
        t.text("model", "Model"), t.text("variant", "Prompt"), t.num("temperature", "Temperature", 2),
        t.count("repeats", "Repeats"), t.text("resume_set", "Resumes"), t.count("resumes", "n"),
        t.num("mean_score", "Mean score (repeats 1..n)", 2), t.num("repeat_mean", "Mean of repeat n", 2),
        t.num("avg_variance", "Average variance", 3),
    ], prepare=with_variant)
    return s


def variants_section(ctx: ReportContext) -> Section:
    from counterbench.builtin.hiring.prompt_variants import variant_descriptions

    s, frame = open_section(ctx, "hiring_prompt_variants")
    if frame is None:
        return s
    show_table(s, ctx, "hiring_prompt_variants", [
        t.text("model", "Model"), t.text("setting", "Setting"), t.text("variant", "Prompt"),
        t.text("wording", "Wording"), t.num("disparity", "Disparity", 3),
        t.num("disparity_change", "Change from standard", 3, signed=True), t.num("deviation", "Deviation", 3),
        t.num("deviation_change", "Change from standard", 3, signed=True),
    ], prepare=lambda f: f.assign(wording=f["variant"], variant=f["rationale"].map(variant_label)))
    study = ctx.data.summary.get("hiring")
    own = study.get("variants") if isinstance(study, dict) else None
    known = own if isinstance(own, dict) else variant_descriptions()  # the study's own file, else built-in
    for name in dict.fromkeys(frame["variant"].astype(str)):
        if name in known:
            s.notes.append(f"{name}: {known[name]}.")
    return s


def paper_sections(ctx: ReportContext) -> list[Section]:
    """The sections of :mod:`.paper_analyses` placed after the controls (report order)."""
    from counterbench.builtin.hiring.sections_models import models_section

    return [models_section(ctx), variants_section(ctx), stability_section(ctx)]
