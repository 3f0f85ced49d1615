"""counterbench: audit LLMs for demographic bias with controlled counterfactual prompts.

The pipeline, one function per step (each also a CLI verb)::

    import counterbench
    study = "examples/loan_rate.yaml"                                     # a study file, or a registered name
    table = counterbench.prompts(study)                                   # prompts
    counterbench.run_prompts(table, ["sim:biased"], store="cb.db")        # run
    results = counterbench.load_results("cb.db")                          # the stored answers
    analysis = counterbench.analyze("cb.db", study)                       # analyze -> .tables, .summary
    counterbench.write_report(analysis, "report.html")                    # report
    counterbench.audit(study, ["sim:biased"])                             # all of it, like `counterbench audit`

Heavy parts are imported on first use, so ``import counterbench`` stays cheap.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from counterbench.errors import UserError
from counterbench.version import __version__

if TYPE_CHECKING:
    from counterbench.options import GenerationOptions, RunOptions
    from counterbench.parse import parse_answer
    from counterbench.pipeline import analyze, audit, run_prompts
    from counterbench.prompts import PromptFilters, build_prompts, prompts
    from counterbench.report.api import write_report
    from counterbench.run.results import load_results

_LAZY = {
    "PromptFilters": "counterbench.prompts",
    "build_prompts": "counterbench.prompts",
    "prompts": "counterbench.prompts",
    "analyze": "counterbench.pipeline",
    "parse_answer": "counterbench.parse",
    "write_report": "counterbench.report.api",
    "load_results": "counterbench.run.results",
    "run_prompts": "counterbench.pipeline",
    "audit": "counterbench.pipeline",
    "RunOptions": "counterbench.options",
    "GenerationOptions": "counterbench.options",
}

__all__ = [
    "GenerationOptions",
    "PromptFilters",
    "RunOptions",
    "UserError",
    "__version__",
    "analyze",
    "audit",
    "build_prompts",
    "load_results",
    "parse_answer",
    "prompts",
    "run_prompts",
    "write_report",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'counterbench' has no attribute {name!r}")


class _Package(types.ModuleType):
    """The package module, whose ``prompts`` stays the function ``prompts()``.

    Importing the submodule :mod:`counterbench.prompts` sets the package attribute ``prompts`` to
    that module; this keeps the attribute free, so :func:`__getattr__` gives the function.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "prompts" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
