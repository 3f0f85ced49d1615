"""What the ``inspect_ai`` entry point of counterbench registers (tasks, the solver and the parse scorer)."""

from counterbench.inspect_ext.tasks import counterbench_parse, generate_within_prompt_limits, rupeebias, study

__all__ = ["counterbench_parse", "generate_within_prompt_limits", "rupeebias", "study"]
