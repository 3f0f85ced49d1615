"""Column lists every layer shares, declared once: the prompt table's base columns and its variants."""

from __future__ import annotations

__all__ = ["BASE_COLUMNS", "DEFAULT_MAX_TOKENS", "IDENTITY_COLUMNS", "PARSED_COLUMNS", "REQUESTED_MAX_TOKENS",
           "STUDY_VALUES", "USAGE_COLUMNS", "VARIANTS"]

#: the columns every prompt table has, whatever the study (a design adds its own after them)
BASE_COLUMNS: tuple[str, ...] = (
    "prompt_id",
    "study",
    "use_case",
    "language",
    "axis",
    "identifier",
    "profile_id",
    "question_variant",
    "variant",
    "answer_type",
    "system",
    "user",
)
VARIANTS: tuple[str, ...] = ("standard", "fairness")
#: the prompt-table columns that say who a prompt is about (what a study varies)
IDENTITY_COLUMNS: tuple[str, ...] = ("identifier", "group")
#: key of a filtered prompt table's ``attrs``: column -> every value the whole study has, as text
#: (``prompts.study_values``; a filter or ``--sample-slots`` may leave some out of the run, and a simulated
#: model's rule naming one of them is no typo)
STUDY_VALUES = "study_values"
#: the prompt-table column holding a prompt's own token limit (used unless a run gives one)
REQUESTED_MAX_TOKENS = "requested_max_tokens"
#: what parsing a response gives (stored with the response, and in every results table)
PARSED_COLUMNS: tuple[str, ...] = (
    "value", "unit", "release_value", "release_unit", "is_range", "out_of_range", "parse_reason", "parse_profile",
)
#: what a request cost
USAGE_COLUMNS: tuple[str, ...] = ("input_tokens", "output_tokens", "cost_usd", "latency_ms")
#: the output-token limit of a prompt that requests none, when a run gives none (the one default)
DEFAULT_MAX_TOKENS = 64
