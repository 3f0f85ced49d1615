"""The answer formats a backend can be asked to enforce (``GenerationConfig.structured``).

A request's ``answer_type`` names the expected answer. Each type has one single-line format, the
one the studies' system prompts ask for, expressed three ways so that every backend can enforce it
with what its server supports:

* ``regex`` — for servers with regex-guided decoding (vLLM ``structured_outputs``);
* ``gbnf`` — a llama.cpp grammar (the embedded model);
* ``json_schema`` — an OpenAI ``response_format`` schema whose one string field, ``answer``, must
  match the regex (OpenAI, OpenRouter, Ollama and other OpenAI-compatible servers). The backend
  unwraps ``answer`` so the stored text is the same single line as with the other two.

Digit counts are bounded: at most 9 digits for amounts (under ₹100 crore) and 3 for percentages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from counterbench.outcomes.base import response_format


@dataclass(frozen=True)
class AnswerFormat:
    """One answer format: ``### <digits><suffix>``."""

    answer_type: str
    suffix: str
    max_digits: int

    @property
    def regex(self) -> str:
        """Anchored regex the whole answer must match."""
        return rf"^### (0|[1-9][0-9]{{0,{self.max_digits - 1}}}){_regex_escape(self.suffix)}$"

    @property
    def gbnf(self) -> str:
        """A llama.cpp GBNF grammar for the same language as :attr:`regex`."""
        suffix = f' "{self.suffix}"' if self.suffix else ""
        return f'root ::= "### " number{suffix}\nnumber ::= "0" | [1-9] [0-9]{{0,{self.max_digits - 1}}}\n'

    def json_schema(self) -> dict[str, Any]:
        """An OpenAI-style ``response_format`` of type ``json_schema``."""
        return response_format(self.answer_type, {"answer": {"type": "string", "pattern": self.regex}})


def _regex_escape(text: str) -> str:
    return "".join("\\" + ch if ch in ".^$*+?()[]{}|\\" else ch for ch in text)


_FORMATS: dict[str, AnswerFormat] = {
    "inr_annual": AnswerFormat("inr_annual", " INR", 9),
    "inr": AnswerFormat("inr", " INR", 9),
    "percent": AnswerFormat("percent", " %", 3),
    "number": AnswerFormat("number", "", 9),
}


def answer_format(answer_type: str | None) -> AnswerFormat | None:
    """The format for ``answer_type``, or ``None`` for free text / unknown types (not constrained)."""
    if answer_type is None:
        return None
    return _FORMATS.get(answer_type)


def known_answer_types() -> list[str]:
    return sorted(_FORMATS)
