"""What the ``inspect_ai`` entry point of counterbench registers: the tasks (``counterbench/study`` and one
per registered study, ``counterbench/NAME``), the solver and the parse scorer."""

from counterbench.inspect_ext.tasks import (
    counterbench_parse,
    generate_within_prompt_limits,
    registered_study_tasks,
    study,
)

#: study name -> its Inspect task (registered with Inspect when made)
STUDY_TASKS = registered_study_tasks()
globals().update(STUDY_TASKS)

__all__ = ["STUDY_TASKS", "counterbench_parse", "generate_within_prompt_limits", "study", *STUDY_TASKS]
