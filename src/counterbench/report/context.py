"""What a report is made from: analysis tables + summary (+ a sample of raw responses), and the
orderings and labels every section shares (models by leaderboard rank, axes and use cases in study
order, model kinds for the banners).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from counterbench.analyses.flags import truthy
from counterbench.errors import UserError
from counterbench.studies.hooks import hook
from counterbench.studies.registry import default_study

#: the study's names for languages and use cases while a report is being built (see :func:`study_names`)
_NAMES: ContextVar[Mapping[str, Mapping[str, str]] | None] = ContextVar("counterbench_report_names", default=None)

DEMO_MODEL = "local"
DEMO_MODEL_NAME = "SmolLM2-135M-Instruct"


def _names() -> Mapping[str, Mapping[str, str]]:
    names = _NAMES.get()
    return names if names is not None else _default_names()


@functools.cache
def _default_names() -> Mapping[str, Mapping[str, str]]:
    """Outside :func:`study_names` (a section built on its own): the default study's names."""
    return names_from_summary({"study": _default_name()})


def language_name(code: str) -> str:
    """The study's name for a language code (the code itself when the study names none)."""
    return _names().get("languages", {}).get(code, code)


def study_language_order() -> list[str]:
    """The study's language codes in study order (the report's colours follow it)."""
    return list(_names().get("languages", {}))


def use_case_name(code: str) -> str:
    """The study's label for a use case (default: the name, capitalised)."""
    return _names().get("use_cases", {}).get(code, code.replace("_", " ").capitalize())


def names_from_summary(summary: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Language and use-case names from an analysis summary; for an older summary without them, from the
    registered study of that name."""
    languages = summary.get("language_names")
    use_cases = summary.get("use_case_names")
    if not isinstance(languages, Mapping) or not isinstance(use_cases, Mapping):
        study = _registered(str(summary.get("study") or _default_name()))
        if study is not None:
            languages = languages if isinstance(languages, Mapping) else dict(study.languages)
            use_cases = use_cases if isinstance(use_cases, Mapping) else dict(hook(study, "use_case_labels"))
    return {"languages": {str(k): str(v) for k, v in (languages or {}).items()},
            "use_cases": {str(k): str(v) for k, v in (use_cases or {}).items()}}


def _default_name() -> str:
    try:
        return default_study()
    except UserError:
        return ""


def _registered(name: str) -> Any:
    try:
        from counterbench.studies.registry import load_study, registered_studies

        return load_study(name) if name in registered_studies() else None
    except UserError:
        return None


@contextmanager
def study_names(summary: Mapping[str, Any]) -> Iterator[None]:
    """Use the summary's study names in :func:`language_name` and :func:`use_case_name` inside the block."""
    token = _NAMES.set(names_from_summary(summary))
    try:
        yield
    finally:
        _NAMES.reset(token)


@dataclass
class ReportInput:
    """Everything a report shows. ``tables`` may lack entries or hold empty frames."""

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any]
    samples: pd.DataFrame | None = None
    title: str | None = None
    source: str = ""
    #: model -> its generation settings in words (from the results table, when the report has it)
    model_settings: dict[str, str] = field(default_factory=dict)
    #: the study object analysed, used as given (a report read back from a folder looks it up by name)
    study: Any = None


def from_analysis(result: Any, *, samples: pd.DataFrame | None = None, title: str | None = None,
                  source: str = "") -> ReportInput:
    """Wrap an ``AnalysisResult`` (anything with ``tables`` and ``summary``)."""
    return ReportInput(dict(result.tables), dict(result.summary), samples, title, source,
                       study=getattr(result, "study", None))


def _read_table(directory: Path, name: str) -> pd.DataFrame | None:
    parquet, csv = directory / f"{name}.parquet", directory / f"{name}.csv"
    try:
        if parquet.is_file():
            return pd.read_parquet(parquet)
        if csv.is_file():
            try:
                return pd.read_csv(csv)
            except pd.errors.EmptyDataError:
                return pd.DataFrame()
    except (OSError, ValueError) as err:
        raise UserError(f"cannot read {name} table in {directory}: {err}") from None
    return None


def load_analysis_dir(directory: Path | str) -> ReportInput:
    """Read what ``counterbench analyze`` wrote to ``directory`` (Parquet preferred, else CSV)."""
    path = Path(directory)
    summary_file = path / "summary.json"
    if not path.is_dir():
        raise UserError(f"analysis folder {path} does not exist; write it with `counterbench analyze ... --out {path}`")
    if not summary_file.is_file():
        raise UserError(f"{path} has no summary.json; is it the --out folder of `counterbench analyze`?")
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UserError(f"cannot read {summary_file}: {err}") from None
    if not isinstance(summary, dict):
        raise UserError(f"{summary_file} is not a JSON object")
    names = sorted({f.with_suffix("").name for f in path.iterdir() if f.suffix in (".parquet", ".csv") and f.is_file()})
    tables = {name: t for name in names if (t := _read_table(path, name)) is not None}
    return ReportInput(tables, summary, source=str(path))


def _ordered(values: Iterable[Any], preferred: Iterable[Any]) -> list[Any]:
    seen: list[Any] = []
    for v in values:
        if isinstance(v, float) and math.isnan(v):
            continue
        if v not in seen:
            seen.append(v)
    first = [p for p in preferred if p in seen]
    return first + [v for v in seen if v not in first]


def simulated_from_summary(summary: Mapping[str, Any]) -> set[str]:
    """Model names the summary flags as simulated (accepts a dict, a list, or per-model records)."""
    out: set[str] = set()
    flags = summary.get("simulated")
    if isinstance(flags, Mapping):
        out |= {str(m) for m, v in flags.items() if truthy(v)}
    elif isinstance(flags, list):
        out |= {str(m) for m in flags}
    models = summary.get("models")
    if isinstance(models, Mapping):
        out |= {str(m) for m, v in models.items() if isinstance(v, Mapping) and truthy(v.get("simulated"))}
    elif isinstance(models, list):
        out |= {str(m.get("model") or m.get("name")) for m in models
                if isinstance(m, Mapping) and truthy(m.get("simulated"))}
    return out


def _summary_models(summary: Mapping[str, Any]) -> list[str]:
    models = summary.get("models")
    if isinstance(models, Mapping):
        return [str(m) for m in models]
    if isinstance(models, list):
        return [str(m.get("model") or m.get("name")) if isinstance(m, Mapping) else str(m) for m in models]
    return []


@dataclass
class ReportContext:
    """Shared orderings and labels, derived once from a :class:`ReportInput`."""

    data: ReportInput
    models: list[str]
    kinds: dict[str, str]
    languages: list[str]
    axes: list[str]
    use_cases: list[str]
    unsupported: dict[str, str] = field(default_factory=dict)
    #: language code -> name, from the study (falls back to :func:`language_name`)
    language_names: dict[str, str] = field(default_factory=dict)
    #: the kinds of facet the study compares (``axis``, ``group``, ``attribute``)
    facet_kinds: list[str] = field(default_factory=list)
    #: model -> what its model file lacks (``no chat template``), shown beside its kind
    badges: dict[str, list[str]] = field(default_factory=dict)

    def kind_label(self, model: str) -> str:
        """The model's kind in words, with its badges: ``local model file · no chat template``."""
        return " · ".join([KIND_LABELS[self.kinds.get(model, "real")], *self.badges.get(model, [])])

    def language_label(self, code: str) -> str:
        return self.language_names.get(code) or language_name(code)

    def study_languages(self) -> list[str]:
        """Every language the study declares, in study order (the per-language columns follow these),
        then any other language the tables hold."""
        layout = self.data.summary.get("table_layout")
        declared = layout.get("languages") if isinstance(layout, Mapping) else None
        if not isinstance(declared, list) or not declared:
            declared = list(self.language_names) or list(self.languages)
        return _ordered([*map(str, declared), *self.languages], [str(v) for v in declared])

    def answer_words(self) -> str:
        """What a usable answer holds for the study's outcome kinds (``a usable number``, ``one of the
        allowed labels``)."""
        from counterbench.outcomes import usable_answer_words

        kinds = self.data.summary.get("outcome_kinds")
        return usable_answer_words([str(k) for k in kinds.values()] if isinstance(kinds, Mapping) else [])

    def use_case_label(self, code: str) -> str:
        return use_case_name(code)

    def table(self, name: str) -> pd.DataFrame | None:
        return self.data.tables.get(name)

    def nonempty(self, name: str) -> pd.DataFrame | None:
        frame = self.table(name)
        return frame if frame is not None and not frame.empty else None

    def models_of_kind(self, kind: str) -> list[str]:
        return [m for m in self.models if self.kinds.get(m) == kind]

    def model_order(self, frame: pd.DataFrame) -> list[str]:
        return _ordered([*self.models, *frame["model"].astype(str)], self.models)

    def axes_of(self, frame: pd.DataFrame) -> list[str]:
        """The study's axes (:attr:`axes`, in its order) that ``frame``'s ``axis`` column holds."""
        present = set(frame["axis"])
        return [a for a in self.axes if a in present]

    def by_model(self, frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
        """Each model of ``frame`` (in :meth:`model_order`) with its rows."""
        names = frame["model"].astype(str)
        return [(model, frame[names == model]) for model in self.model_order(frame)]


#: a model's kind (:func:`model_kind`) in words
KIND_LABELS = {"simulated": "simulated", "demo": "demo model", "local": "local model file", "real": "real"}


def model_kind(name: str, simulated: bool, spec: str | None = None) -> str:
    """``simulated`` (``sim:...`` or flagged), ``demo`` (the embedded ``local`` model), ``local`` (a GGUF file
    run in-process: ``local:PATH``) or ``real``."""
    if simulated or name.startswith("sim:"):
        return "simulated"
    if name == DEMO_MODEL and spec in (None, DEMO_MODEL):
        return "demo"
    if (spec or name).startswith(f"{DEMO_MODEL}:"):
        return "local"
    return "real"


def model_badges(spec: str) -> list[str]:
    """What a model's file lacks (``no chat template``), read from a ``local:PATH`` GGUF's header; none
    for other models or a file no longer there."""
    from counterbench.models.gguf_meta import model_file_notes

    prefix = f"{DEMO_MODEL}:"
    return model_file_notes(spec[len(prefix):]) if spec.startswith(prefix) else []


def build_context(data: ReportInput) -> ReportContext:
    """Orderings: models by leaderboard rank; languages, axes and use cases in study order."""
    tables = data.tables
    board = tables.get("leaderboard")
    names: list[str] = []
    simulated = simulated_from_summary(data.summary)
    if board is not None and not board.empty and "model" in board.columns:
        ranked = board
        if "overall_mean_delta" in board.columns:  # unranked (flagged) models after the ranked ones
            flagged = board["flag"].fillna("").astype(str).ne("") if "flag" in board.columns else False
            ranked = board.assign(_flagged=flagged).sort_values(["_flagged", "overall_mean_delta"], kind="stable",
                                                                na_position="last")
        names += [str(m) for m in ranked["model"]]
        if "simulated" in board.columns:
            simulated |= {str(m) for m, s in zip(board["model"], board["simulated"], strict=True) if truthy(s)}
    names += _summary_models(data.summary)
    for frame in tables.values():
        if "model" in frame.columns:
            names += [str(m) for m in frame["model"].dropna().unique()]
    models = _ordered(names, [])

    def collect(column: str) -> list[Any]:
        return [v for f in tables.values() if column in f.columns for v in f[column].dropna().unique()]

    study: Any = None

    def preferred(key: str, fallback: tuple[str, ...]) -> list[str]:
        nonlocal study
        listed = data.summary.get(key)
        if isinstance(listed, list) and listed:
            return [str(v) for v in listed]
        study = study or data.study or _registered(str(data.summary.get("study") or _default_name()))
        if study is None:
            return list(fallback)
        orders = {"languages": list(study.languages), "axes": list(study.axes), "use_cases": list(study.outcomes)}
        return orders[key]

    unsupported = data.summary.get("unsupported")
    given = data.summary.get("model_specs")
    specs = {str(k): str(v) for k, v in given.items()} if isinstance(given, Mapping) else {}
    lang_names = data.summary.get("language_names")
    facets = data.summary.get("facets")
    return ReportContext(
        data=data,
        models=models,
        kinds={m: model_kind(m, m in simulated, specs.get(m)) for m in models},
        badges={m: model_badges(specs[m]) for m in models if m in specs and model_badges(specs[m])},
        languages=[str(v) for v in _ordered(collect("language"), preferred("languages", ()))],
        axes=[str(v) for v in _ordered(collect("axis"), preferred("axes", ()))],
        use_cases=[str(v) for v in _ordered(collect("use_case"), preferred("use_cases", ()))],
        unsupported={str(k): str(v) for k, v in unsupported.items()} if isinstance(unsupported, Mapping) else {},
        language_names={str(k): str(v) for k, v in lang_names.items()} if isinstance(lang_names, Mapping) else {},
        facet_kinds=list(dict.fromkeys(str(f.get("kind")) for f in facets if isinstance(f, Mapping)))
        if isinstance(facets, list) else [],
    )
