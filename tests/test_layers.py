"""The layer order of the package, measured from its imports.

Layers, top to bottom (``docs/extending.md``): cli/commands → pipeline, the package's API, the Inspect
task, the test servers → builtin (the three built-in studies, plug-ins) → report, viewer, gate →
analyses, the kinds' table families (``families``) → studies, prompts → run and the typed run options
(``options``) → models → outcomes → stats, parse → the ground (errors, the one registry type, shared column
lists, version). An import may only go down a layer or stay in its own.

The core (everything below ``builtin``) imports no built-in study and names none: the built-in studies
register themselves through entry points like a third-party package, and the core takes languages,
axes, groups, pairs, labels and wording from the study object it is given. The CLI's verbs
(``commands``, ``cli``) and the Inspect tasks name none either; a study's own verbs live with it
(``builtin/STUDY/verbs.py``, in the commands layer).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "src" / "counterbench"

#: room (a top-level module or sub-package of counterbench) -> layer; higher imports lower
LAYERS: dict[str, int] = {
    "errors": 0, "fileperms": 0, "version": 0, "columns": 0, "registry": 0, "table_files": 0,
    "yaml_files": 0, "json_limits": 0, "cpus": 0,
    "stats": 1, "parse": 1,
    "outcomes": 2,
    "models": 3,
    "run": 4, "options": 4,
    "studies": 5, "prompts": 5,
    "analyses": 6, "families": 6,
    "report": 7, "viewer": 7, "gate": 7,
    "builtin": 8,
    "pipeline": 9, "sequential": 9, "__init__": 9, "inspect_ext": 9, "testing": 9,
    "commands": 10, "cli": 10,
}
#: (importing file, imported module) -> why this import goes up a layer (at most 3)
UPWARD_EXCEPTIONS: dict[tuple[str, str], str] = {}
#: (room, room) of one layer that must not import each other, and why
SAME_LAYER_FORBIDDEN: dict[tuple[str, str], str] = {
    ("report", "viewer"): "the report is a static file; the viewer reads the report's link format "
                          "(report/links.py), so the viewer depends on the report, never the reverse",
}
CORE = [room for room, layer in LAYERS.items() if layer < LAYERS["builtin"]]
#: rooms above the built-in studies that name none either: the CLI's verbs and the Inspect tasks take
#: every study from the registries (a study's own verbs live with it, ``builtin/STUDY/verbs.py``)
NAME_NO_STUDY = [*CORE, "commands", "cli", "inspect_ext"]
STUDY_WORDS = re.compile(r"rupeebias|hinglish|(?<![.\w])stem\b|hiring|caste", re.IGNORECASE)
TEXT_SUFFIXES = (".py", ".yaml", ".yml", ".html", ".css", ".js", ".j2")


#: a study's own verbs (``builtin/STUDY/verbs.py``, entry-point group ``counterbench.verbs``) are command-line
#: code: they sit in the commands layer though they live with their study
VERB_MODULE = re.compile(r"^builtin/[a-z_]+/verbs\.py$")


def _room(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    if VERB_MODULE.match(relative.as_posix()):
        return "commands"
    return relative.parts[0].removesuffix(".py")


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


@functools.cache  # five tests read it; the sources do not change during a run (callers must not mutate it)
def imports() -> dict[str, list[tuple[int, str]]]:
    """Module -> (line, counterbench module it imports), lazy imports included, ``TYPE_CHECKING`` ones not."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    out: dict[str, list[tuple[int, str]]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_lines(tree)
        found: list[tuple[int, str]] = []
        for node in ast.walk(tree):
            if getattr(node, "lineno", 0) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
                targets = subs or [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found += [(node.lineno, t) for t in targets if t in modules and t != name]
        out[name] = found
    return out


def _path(module: str) -> Path:
    base = PACKAGE.parent.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def test_every_room_has_a_layer() -> None:
    rooms = {_room(p) for p in PACKAGE.rglob("*.py")}
    assert rooms <= set(LAYERS), f"rooms without a layer: {sorted(rooms - set(LAYERS))}"


def test_imports_go_down() -> None:
    upward = []
    for module, found in imports().items():
        src = _room(_path(module))
        for line, target in found:
            dst = _room(_path(target))
            if LAYERS[dst] > LAYERS[src] and (module, target) not in UPWARD_EXCEPTIONS:
                upward.append(f"{module}:{line} imports {target} ({src} {LAYERS[src]} -> {dst} {LAYERS[dst]})")
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)
    assert len(UPWARD_EXCEPTIONS) <= 3


def test_forbidden_same_layer_arrows() -> None:
    arrows = []
    for module, found in imports().items():
        src = _room(_path(module))
        arrows += [f"{module}:{line} imports {target}" for line, target in found
                   if (src, _room(_path(target))) in SAME_LAYER_FORBIDDEN]
    assert not arrows, "forbidden imports:\n" + "\n".join(arrows)


#: the modules that open a store; the analyses take frames (the pipeline reads the store for them)
STORE_READERS = ("counterbench.run.store", "counterbench.run.results", "counterbench.run.results_reader",
                 "counterbench.run.store_schema")
STORE_FUNCTIONS = ("load_study_results", "study_models", "load_model_results", "model_results_reader",
                   "count_answers", "ResultsReader")


def test_the_analyses_take_frames_and_never_open_a_store() -> None:
    opened = []
    for module, found in imports().items():
        if not module.startswith("counterbench.analyses"):
            continue
        opened += [f"{module}:{line} imports {target}" for line, target in found if target in STORE_READERS]
        text = _path(module).read_text(encoding="utf-8")
        opened += [f"{module} uses {name}" for name in (*STORE_FUNCTIONS, "sqlite3", "open_store")
                   if re.search(rf"\b{name}\b", text)]
    assert not opened, "analyses that read a store:\n" + "\n".join(opened)


#: what the report may not import: it reads analysis results only (the pipeline reads the store for it)
REPORT_FORBIDDEN = ("counterbench.run.study_results", "counterbench.run.store")


def report_store_reads(found_by_module: dict[str, list[tuple[int, str]]]) -> list[str]:
    """The imports of a store reader by a ``report`` module."""
    return [f"{module}:{line} imports {target}" for module, found in found_by_module.items()
            if module == "counterbench.report" or module.startswith("counterbench.report.")
            for line, target in found if target in REPORT_FORBIDDEN]


def test_the_report_reads_analysis_results_only() -> None:
    reads = report_store_reads(imports())
    assert not reads, "report modules that read the store:\n" + "\n".join(reads)
    # the check can fail: a report module importing the store reader is caught, another room's is not
    assert report_store_reads({"counterbench.report.api": [(3, "counterbench.run.study_results")],
                               "counterbench.pipeline": [(4, "counterbench.run.study_results")]}) == [
        "counterbench.report.api:3 imports counterbench.run.study_results"]


def test_no_import_circle() -> None:
    graph = {m: {t for _, t in found} for m, found in imports().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_the_core_the_verbs_and_the_inspect_tasks_name_no_builtin_study() -> None:
    hits = []
    for room in NAME_NO_STUDY:
        target = PACKAGE / room if (PACKAGE / room).is_dir() else PACKAGE / f"{room}.py"
        paths = sorted(target.rglob("*")) if target.is_dir() else [target]
        for path in paths:
            if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if STUDY_WORDS.search(line) or "counterbench.builtin" in line:
                    hits.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not hits, "the core names a built-in study:\n" + "\n".join(hits)


def builtin_answer_words() -> set[str]:
    """What the built-in studies' simulated answers hold (``simulated_answers``): their use cases' names, the
    design columns their answers read and their refusal and malformed texts."""
    from counterbench.models.sim_answers import study_answers
    from counterbench.studies.registry import STUDIES, load_study

    words: set[str] = set()
    for name in STUDIES.names():
        if not STUDIES.entries()[name].source.startswith("entry point counterbench.builtin"):
            continue
        answers = study_answers(name)
        if answers is None:
            continue
        words |= {*load_study(name).outcomes, *answers.use_cases, answers.refusal_text, answers.malformed_text}
        words |= {column for spec in answers.use_cases.values() for column in spec.anchor_columns}
    return words - {""}


def names_in(path: Path, words: set[str]) -> list[str]:
    """The lines of ``path`` that hold one of ``words`` (as a whole word)."""
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(w)}(?!\w)" for w in sorted(words)))
    return [f"{path.relative_to(PACKAGE) if path.is_relative_to(PACKAGE) else path.name}:{n}: {line.strip()}"
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if pattern.search(line)]


def test_the_simulated_model_names_no_use_case_of_a_builtin_study() -> None:
    """``sim:fair`` and the simulated model's code (``models/``) hold no built-in study's use case, figures'
    column or refusal text: a study gives them through its ``simulated_answers`` hook."""
    words = builtin_answer_words()
    assert {"salary_estimation", "service_pricing_client", "offered_ctc_lpa"} <= words
    hits = [hit for path in sorted((PACKAGE / "models").rglob("*"))
            if path.is_file() and path.suffix in TEXT_SUFFIXES for hit in names_in(path, words)]
    assert not hits, "the simulated model names a built-in study's use case or text:\n" + "\n".join(hits)


def test_the_answer_check_can_fail(tmp_path: Path) -> None:
    old_fair = tmp_path / "fair.yaml"
    old_fair.write_text("noise_sd: 0.03\nuse_cases:\n  salary_estimation:\n    unit: INR\n"
                        "refusal_text: I cannot provide salary advice based on identity.\n", encoding="utf-8")
    assert len(names_in(old_fair, builtin_answer_words())) == 2


def test_the_checks_can_fail() -> None:
    """The word and layer checks catch what they are for (so a pass means something)."""
    assert STUDY_WORDS.search("from counterbench.builtin.rupeebias import x")
    assert STUDY_WORDS.search("the Hinglish prompts") and STUDY_WORDS.search("STEM study")
    assert not STUDY_WORDS.search("names = {f.stem for f in files}")
    assert LAYERS["analyses"] > LAYERS["stats"] and LAYERS["builtin"] > max(LAYERS[r] for r in CORE)
    assert _room(PACKAGE / "builtin" / "hiring" / "verbs.py") == "commands"
    assert _room(PACKAGE / "builtin" / "hiring" / "study.py") == "builtin"


def test_no_module_over_400_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, f"modules over 400 lines (split them): {long}"


def long_functions(folder: Path, limit: int) -> dict[str, int]:
    """``module:function`` -> its lines, for every function of ``folder`` longer than ``limit`` lines."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found[f"{path.relative_to(PACKAGE)}:{node.name}"] = lines
    return found


def test_no_function_over_120_lines_in_the_run_engine() -> None:
    long = long_functions(PACKAGE / "run", 120)
    assert not long, f"functions over 120 lines in run/ (make them a few named steps): {long}"
    assert long_functions(PACKAGE / "run", 30)  # the check can fail
