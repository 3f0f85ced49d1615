"""A study's optional hooks, declared in one place (as datasette's ``hookspecs.py`` declares its plug-in hooks).

Every study has the attributes of :class:`counterbench.studies.base.Study`; these are the ones it *may*
add (this module imports no other of :mod:`counterbench.studies`, so every one of them may read it).
:class:`StudyHooks` states each with its type and what it is for; :func:`hook` is the only way the core
reads one (the hook, or ``None`` when the study has none — for the plain attributes, their default), but for
the simulated model, which sits below this layer and reads ``simulated_answers`` as the attribute declared
here (:mod:`counterbench.models.sim_answers`).
The outcome kind's members are declared the same way in :mod:`counterbench.outcomes.kinds`, and every
registry a package extends by entry point is listed in ``docs/extending.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from counterbench.columns import VARIANTS


class StudyHooks(Protocol):
    """The optional hooks of a study object (``docs/extending.md``)."""

    #: the prompt variants the study can expand (default: ``standard`` and ``fairness``)
    variants: tuple[str, ...]
    #: use case -> the name tables and the report use for it (default: the use case's own name)
    use_case_labels: Mapping[str, str]
    #: another name of a use case (e.g. the one a published release uses) -> the study's own name; answers
    #: stored under the other name are analysed and linked under the study's (default: none)
    use_case_aliases: Mapping[str, str]
    #: use case -> which direction of its measure is favourable to the person asked about: ``higher`` (a salary,
    #: an approval) or ``lower`` (a rent, a deposit, an interest rate); findings then name who a gap is
    #: unfavourable to, and impact ratios select on the favourable side (default: none declared — findings
    #: state the direction only, impact ratios select the higher side)
    favourable: Mapping[str, str]
    #: the study's own command-line options (``counterbench audit STUDY --NAME VALUE``), a
    #: :class:`counterbench.studies.options.StudyOptions`; default: none
    study_options: Any
    #: what a simulated model (``sim:fair``, ``sim:biased``, a simulation file) answers for its use cases: a
    #: mapping, or the path of a YAML file, with ``use_cases`` (use case -> answer spec: unit, default, range,
    #: profiles, anchor, round_to, decimals, label_from) and optionally ``refusal_text`` and
    #: ``malformed_text`` (:mod:`counterbench.models.sim_answers`); default: none — the preset's defaults
    simulated_answers: Any
    #: tables of its own (``counterbench.analyses.table_registry.TableSpec`` s), built after the generic tables
    #: on the same inputs (they see them in ``TableInputs.tables``), for this study only; default: none
    study_tables: tuple[Any, ...]

    def prompt_counts(self) -> Any:
        """Its standard prompt table's size, counted from its design without writing a prompt: a
        :class:`counterbench.studies.counts.PromptCounts` equal to that of ``expand()``, raising what ``expand()``
        raises. Without it: the counts of the table ``expand()`` builds."""
        ...

    def analyze_tables(self, results: pd.DataFrame, *, bootstrap: int, seed: int,
                       ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
        """Its own tables and summary (``tables`` descriptions, ``unsupported`` reasons): they replace the
        generic outcome tables for its answers. Without it: the generic tables."""
        ...

    def report_sections(self, ctx: Any) -> list[Any]:
        """The report sections drawn from its tables (``counterbench.report.sections.Section``, given the
        ``counterbench.report.context.ReportContext``). Without it: none of its own."""
        ...

    def from_study_file(self, data: Mapping[str, Any], path: Path) -> Any:
        """The study (a :class:`counterbench.studies.base.Study`) a study file declares with ``study: NAME`` and
        its own keys. Without it such a file is refused."""
        ...


#: each hook's value when a study has none
DEFAULTS: dict[str, Any] = {
    "variants": VARIANTS,
    "use_case_labels": {},
    "use_case_aliases": {},
    "favourable": {},
    "study_options": None,
    "simulated_answers": None,
    "study_tables": (),
    "prompt_counts": None,
    "analyze_tables": None,
    "report_sections": None,
    "from_study_file": None,
}
#: the hooks' names, in the order :class:`StudyHooks` declares them
HOOKS = tuple(DEFAULTS)


def hook(study: object, name: str) -> Any:
    """``study``'s hook ``name`` (one of :data:`HOOKS`), or its default when the study has none."""
    if name not in DEFAULTS:
        raise AttributeError(f"{name!r} is not a study hook (one of: {', '.join(HOOKS)})")
    own = getattr(study, name, None)
    return DEFAULTS[name] if own is None else own
