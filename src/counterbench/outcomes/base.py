"""The values an outcome kind deals in: a spec (the kind + its parameters), a constraint, a comparison.

The kind's protocol itself is :mod:`counterbench.outcomes.kinds`. An *outcome kind* owns everything about
one kind of answer (see ``docs/studies.md``): the instruction a prompt ends with, the structured-output
constraint (:class:`Constraint`, the same three attributes as
:class:`counterbench.outcomes.answer_formats.AnswerFormat`: ``regex``, ``gbnf``, ``json_schema()``), the
parser, how the simulated model answers, the quantity the analysis compares (``measure``) and how two
groups' measures compare, in what unit and words (``comparison``: :class:`Comparison`).

A use case's outcome travels through the prompt table, the store and the run engine as one string, the
prompt's ``answer_type`` (e.g. ``rate``, ``score:1:10``, ``label:yes|no``): :func:`counterbench.outcomes.encode`
and :func:`counterbench.outcomes.spec_from_answer_type` convert between the two.
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

SEPARATOR = "|"


@dataclass(frozen=True)
class OutcomeSpec:
    """A use case's outcome: the kind's name and its parameters (hashable, comparable)."""

    kind: str
    labels: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    positive: str | None = None
    metrics: tuple[str, ...] = ()
    unit: str | None = None
    #: the legacy amount answer type (``inr_annual``, ``percent``, ``inr``, ``number``) for ``amount``
    answer_type: str | None = None
    extra: tuple[tuple[str, Any], ...] = field(default=())


def encode_generic(spec: OutcomeSpec) -> str:
    """The kind's name, then ``:`` and its parameters as compact JSON (only those that differ from
    :class:`OutcomeSpec`'s defaults; the bare name when none does) — so any kind's parameters survive the
    prompt table, the store and every verb; :func:`decode_generic` reads it back."""
    params: dict[str, Any] = {}
    for item in fields(spec):
        value = getattr(spec, item.name)
        if item.name == "kind" or value == _default(item):
            continue
        params[item.name] = dict(value) if item.name == "extra" else list(value) if isinstance(value, tuple) else value
    if not params:
        return spec.kind
    return f"{spec.kind}:" + json.dumps(params, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def decode_generic(text: str) -> OutcomeSpec:
    """The spec :func:`encode_generic` wrote as ``text``."""
    kind, _, body = text.partition(":")
    params: dict[str, Any] = json.loads(body) if body else {}
    known = {item.name for item in fields(OutcomeSpec)} - {"kind"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"answer type {text!r}: unknown parameters {unknown}")
    for name in ("labels", "metrics"):
        if name in params:
            params[name] = tuple(str(v) for v in params[name])
    if "extra" in params:
        params["extra"] = tuple((str(k), _frozen(v)) for k, v in params["extra"].items())
    return OutcomeSpec(kind, **params)


def is_generic_encoding(text: str) -> bool:
    """True when ``text`` is an :func:`encode_generic` string with parameters (``NAME:{...}``)."""
    return text.partition(":")[2].startswith("{")


def _default(item: Any) -> Any:
    return item.default_factory() if item.default is MISSING else item.default


def _frozen(value: Any) -> Any:
    """JSON lists back as tuples (an :class:`OutcomeSpec` stays hashable)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def number_text(value: float | None) -> str:
    """A parameter in an answer type: ``1`` for 1.0, ``2.5`` for 2.5, empty for ``None``."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass(frozen=True)
class Constraint:
    """A structured-output constraint: an anchored regex, the same as a llama.cpp grammar, and a schema."""

    name: str
    regex: str
    gbnf: str

    def json_schema(self) -> dict[str, Any]:
        """An OpenAI-style ``response_format`` whose one string field ``answer`` matches :attr:`regex`."""
        return response_format(self.name, {"answer": {"type": "string", "pattern": self.regex}})


def response_format(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-style strict ``response_format`` named ``counterbench_<name>``: an object of ``properties``,
    every one required, in their order."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": f"counterbench_{re.sub(r'[^A-Za-z0-9_]', '_', name)}",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }


def choices_constraint(name: str, labels: tuple[str, ...]) -> Constraint:
    """``### <one of labels>``. The labels are listed sorted, so the constraint never depends on the order
    in which a prompt table's answer type happens to list them."""
    labels = tuple(sorted(labels))
    regex = "^### (" + "|".join(re.escape(label) for label in labels) + ")$"
    gbnf = 'root ::= "### " (' + " | ".join(json.dumps(label, ensure_ascii=False) for label in labels) + ")\n"
    return Constraint(name, regex, gbnf)


#: a constrained rationale holds at least this many characters (shorter: the constraint has no rationale)
RATIONALE_MIN_CHARS = 10
#: and at most this many (about 2-3 sentences)
RATIONALE_MAX_CHARS = 600
#: characters per token assumed when fitting the rationale into the token limit (English runs ~4)
_CHARS_PER_TOKEN = 3
#: tokens kept for the line break and the final answer line
_FINAL_LINE_TOKENS = 16


def rationale_chars(max_tokens: int) -> int:
    """The longest rationale a constrained answer may hold so that its final line still fits in ``max_tokens``."""
    return max(0, min(RATIONALE_MAX_CHARS, _CHARS_PER_TOKEN * (max_tokens - _FINAL_LINE_TOKENS)))


@dataclass(frozen=True)
class RationaleConstraint:
    """A short free-text rationale on one line, then the final answer line of ``answer`` (another constraint).

    The rationale is :data:`RATIONALE_MIN_CHARS` to ``max_chars`` characters without ``#`` or a line break,
    so the final line stays the last ``###`` line the parsers read. As a JSON schema it is the object
    ``{"rationale": ..., "answer": ...}`` (rationale first, so a model writes it before its answer); the
    backends turn a reply of that shape back into ``<rationale>\n<answer line>``
    (:func:`counterbench.models.structured.unwrap_object`), so the stored text is what a free-text answer
    would look like.
    """

    answer: Any
    max_chars: int

    @property
    def name(self) -> str:
        return f"{getattr(self.answer, 'name', getattr(self.answer, 'answer_type', 'answer'))}_rationale"

    @property
    def _free(self) -> str:
        return f"{{{RATIONALE_MIN_CHARS},{self.max_chars}}}"

    @property
    def regex(self) -> str:
        final = self.answer.regex
        return rf"^[^#\n]{self._free}\n" + (final[1:] if final.startswith("^") else final)

    @property
    def gbnf(self) -> str:
        final = re.sub(r"^root(\s*::=)", r"cb-final\1", self.answer.gbnf, count=1, flags=re.MULTILINE)
        return f'root ::= cb-rationale "\\n" cb-final\ncb-rationale ::= [^#\\n]{self._free}\n' + final

    def json_schema(self) -> dict[str, Any]:
        try:
            answer = self.answer.json_schema()["json_schema"]["schema"]["properties"]["answer"]
        except (KeyError, TypeError):
            answer = {"type": "string", "pattern": self.answer.regex}
        return response_format(self.name, {"rationale": {"type": "string", "pattern": rf"^[^#\n]{self._free}$"},
                                           "answer": answer})


def with_rationale(answer: Any, max_tokens: int) -> Any:
    """``answer`` preceded by a bounded one-line rationale sized to ``max_tokens`` (``answer`` itself if none fits)."""
    chars = rationale_chars(max_tokens)
    return RationaleConstraint(answer, chars) if chars >= RATIONALE_MIN_CHARS else answer


#: how a gap is formed from two means: ``difference`` (comparison − reference, in the kind's unit),
#: ``pair_mean`` (100 × (comparison − reference) / the pair's mean, the paper's Δ%: every stated amount gap) or
#: ``ratio`` (100 × (comparison / reference − 1), % of the reference: a labelled table column only)
GAP_FORMS = ("difference", "pair_mean", "ratio")


@dataclass(frozen=True)
class Comparison:
    """How two groups' answers compare: the gap's form, its unit and the words a finding uses.

    ``form`` is one of :data:`GAP_FORMS`. The pair-mean form is the amount tables' Δ%, (a − b)/((a + b)/2) × 100
    (:mod:`counterbench.stats.gaps`), read "a vs b" — the generic tables state comparison vs reference, the
    canonical pair gap reference vs comparison, so one pair reads the same size either way
    (:mod:`counterbench.analyses.gap_forms`). ``unit`` follows a
    number (``%``, `` points``, `` pp``), ``unit_words`` names it in a table, ``sentence`` is the finding's
    template with ``{model}``, ``{comparison}``, ``{reference}``, ``{size}`` (the gap's absolute size with
    its unit) and ``{direction}`` (``directions[0]`` when the comparison is above the reference, else
    ``directions[1]``); :meth:`means` gives the two means in words.
    """

    form: str
    unit: str
    unit_words: str
    sentence: str = "{model}: {comparison} gets {size} {direction} than {reference}"
    directions: tuple[str, str] = ("more", "less")
    #: what follows one mean in ``{means}`` (`` INR``, ``%``)
    mean_unit: str = ""
    #: decimals of a gap in words
    digits: int = 2

    def gap(self, comparison: Any, reference: Any) -> Any:
        """The gap of ``comparison`` against ``reference`` (numbers or arrays) in :attr:`unit`."""
        if self.form == "ratio":
            return 100.0 * (comparison - reference) / reference
        if self.form == "pair_mean":
            return 200.0 * (comparison - reference) / (comparison + reference)
        return comparison - reference

    def format(self, value: float, signed: bool = True) -> str:
        """``value`` with its unit (``−9.8%``, ``+6.53 points``)."""
        text = f"{value:+.{self.digits}f}" if signed else f"{abs(value):.{self.digits}f}"
        return text.replace("-", "−") + self.unit

    def words(self, model: str, comparison: str, reference: str, gap: float) -> str:
        """The finding's sentence for one gap (without the means and the interval)."""
        return self.sentence.format(model=model, comparison=comparison, reference=reference,
                                    size=self.format(gap, signed=False),
                                    direction=self.directions[0] if gap > 0 else self.directions[1])

    def means(self, comparison_mean: float, reference_mean: float) -> str:
        """The two means in words (``884,356 INR against 983,910 INR on average``)."""
        return f"{_mean(comparison_mean)}{self.mean_unit} against {_mean(reference_mean)}{self.mean_unit} on average"


def _mean(value: float) -> str:
    """A mean in words: thousands separated from 100 on, three significant digits below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def sentence_text(text: str) -> str:
    """``text`` safe inside a :attr:`Comparison.sentence` template (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def comparison_of(kind: Any, spec: OutcomeSpec) -> Comparison:
    """The kind's :class:`Comparison` for ``spec``; a kind that declares none compares by difference in its
    ``difference_unit``."""
    declared = getattr(kind, "comparison", None)
    if callable(declared):
        found: Comparison = declared(spec)
        return found
    unit = str(getattr(kind, "difference_unit", ""))
    return Comparison("difference", f" {unit}" if unit else "", unit, directions=("higher", "lower"))
