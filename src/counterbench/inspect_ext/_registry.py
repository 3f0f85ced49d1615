"""What the ``inspect_ai`` entry point of counterbench registers (tasks and the parse scorer)."""

from counterbench.inspect_ext.tasks import counterbench_parse, rupeebias, study

__all__ = ["counterbench_parse", "rupeebias", "study"]
