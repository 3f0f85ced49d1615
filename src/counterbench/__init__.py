"""counterbench: audit LLMs for demographic bias with controlled counterfactual prompts."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from counterbench.errors import UserError
from counterbench.prompts import PromptFilters, build_prompts, prompts

try:
    __version__ = version("counterbench")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["PromptFilters", "UserError", "__version__", "build_prompts", "prompts"]
