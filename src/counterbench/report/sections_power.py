"""The power section: the smallest canonical pair gap each model's audit could find (issue "every star
earned"; :mod:`counterbench.analyses.power`)."""

from __future__ import annotations

from counterbench.report import tables as t
from counterbench.report.context import ReportContext, language_name, use_case_name
from counterbench.report.document import Section, attach_table
from counterbench.stats.inference import MIN_SLOTS, too_few_text

ALL_USE_CASES = "all use cases"


def _cell(r: t.Row) -> str:
    if t.fmt_flag(r.get("testable")) != "✓":
        return f"too few (n = {t.fmt_int(r.get('n_slots'))})"
    return f"{t.fmt_num(r.get('mde'), 1)}%"


def power_section(ctx: ReportContext) -> Section:
    section = Section(
        "power",
        "What this audit could find",
        "The smallest gap between the two identities of each canonical pair that this design finds 80% of the "
        "time, at the model's own noise (measured from its answers: how much its answer to one prompt varies "
        "beyond the profile and the identity). Read a 'no gap beyond noise' finding with it: a gap smaller than "
        f"this may be there and missed. 'too few': {too_few_text(2).split(' (')[0]} — fewer than {MIN_SLOTS} matched "
        "prompts, or too few to reach the level of the model's family of marks (0.05 / `family_size`: the swap "
        "test's smallest p with n matched prompts is 2/2ⁿ); averaging over use cases pools their matched prompts.",
    )
    frame = attach_table(section, ctx, "power")
    if frame is None:
        return section
    order = [*ctx.use_cases, ALL_USE_CASES]
    for model, part in ctx.by_model(frame):
        part = part.assign(use_case=part["use_case"].where(part["use_case"].notna(), ALL_USE_CASES))
        for lang in [lang for lang in ctx.languages if (part["language"] == lang).any()]:
            rows = part[part["language"] == lang]
            sigma = t.as_float(rows["noise_sd"].iloc[0])
            section.tables.append(t.pivot_view(
                rows, index="use_case", columns="axis", index_order=order, column_order=ctx.axes, cell=_cell,
                index_label="Use case", rename_index=lambda u: "All use cases" if u == ALL_USE_CASES else
                use_case_name(u),
                caption=f"{model} · {language_name(lang)}: a gap this large between the two identities (% of "
                        f"the pair's mean) is found 80% of the time (noise {sigma * 100:.1f}%)", source="power.csv"))
    section.notes.append("Assumes answers = level × identity effect × lognormal noise, and Benjamini–Hochberg "
                         "over the model's one family of marks (every row it tested in every table that marks: "
                         "`family_size` in power.csv) with one real gap (conservative when others are real). "
                         "`counterbench power` gives the same for a design before running it.")
    return section
