"""``counterbench models --probe MODEL``: what structured output an endpoint supports, before a long run.

One tiny request per structured mode of the model's family (:data:`~counterbench.models.structured.FAMILY_MODES`),
each asking for ``### <NUMBER> INR``, plus the server's model list. A mode is reported as

* ``works`` — the server took the constraint and the answer is in the format with the right value (200);
* ``wrong`` — in the format, but not 200: the server honours the mode, the model's answer is not to be trusted
  (a small model answering ``### 100000000 INR`` to "2 notes of 100 rupees");
* ``cut`` — the answer stopped at the token budget (``finish_reason=length``), so the format cannot be
  judged (the budget, :data:`PROBE_MAX_TOKENS`, fits a JSON-wrapped answer with room to spare);
* ``ignored`` — the server answered, but not in the format: it probably dropped the field it does
  not know (llama-cpp-python's server ignores ``structured_outputs``, for example);
* ``refused`` — the server rejected the constraint (and answered the same prompt without it);
* ``error`` — the request failed for another reason (the detail says which).

``none`` is the free-text baseline: ``works`` when the model followed the format unaided.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from counterbench.errors import UserError
from counterbench.models.base import BackendError, ChatRequest, GenerationConfig
from counterbench.models.registry import create_backend, parse_model_string
from counterbench.models.structured import FAMILY_MODES
from counterbench.outcomes.answer_formats import answer_format

PROBE_SYSTEM = (
    "Answer with exactly one line in this format: ### <NUMBER> INR\n"
    "Example: ### 500 INR\nNo other text."
)
PROBE_USER = "How many rupees are 2 notes of 100 rupees?"
PROBE_ANSWER_TYPE = "inr"
PROBE_EXPECTED = 200
#: room for ``{"answer": "### 200 INR"}`` (about 12 tokens) with a server's whitespace around it; a 32-token
#: cap cut llama-server's JSON answer (``finish_reason=length``) and read as the mode being ignored
PROBE_MAX_TOKENS = 128


@dataclass(frozen=True)
class ModeResult:
    """One structured mode tried on the endpoint."""

    mode: str
    status: str
    detail: str
    seconds: float


@dataclass
class ProbeReport:
    model: str
    family: str
    default_mode: str
    server_models: list[str] | None = None
    models_detail: str = ""
    modes: list[ModeResult] = field(default_factory=list)

    def supported(self) -> list[str]:
        """The structured modes the server honours: the answer came back in the format (right value or not)."""
        return [m.mode for m in self.modes if m.status in ("works", "wrong") and m.mode != "none"]

    def lines(self) -> list[str]:
        """The report as the CLI prints it."""
        out = [f"{self.model}: family {self.family}, default structured mode {self.default_mode}"]
        if self.server_models is not None:
            out.append("server models: " + (", ".join(self.server_models) or "(none listed)"))
        else:
            out.append(f"server models: unknown ({self.models_detail})")
        width = max((len(m.mode) for m in self.modes), default=4)
        for m in self.modes:
            label = "free-text" if m.mode == "none" else m.mode
            out.append(f"  {label:<{max(width, 9)}}  {m.status:<8} {m.seconds:5.1f} s  {m.detail}")
        usable = self.supported()
        out.append("structured modes the server honours: " + (", ".join(usable) if usable else "none"))
        wrong = [("free-text" if m.mode == "none" else m.mode) for m in self.modes if m.status == "wrong"]
        if wrong:
            out.append(f"wrong value ({PROBE_EXPECTED} was asked for) in: " + ", ".join(wrong)
                       + " -- the format holds, the model's answers may not")
        return out


async def aprobe(
    model: str,
    *,
    env: Mapping[str, str] | None = None,
    dotenv_path: Path | None = None,
    timeout_s: float = 60.0,
) -> ProbeReport:
    """Try every structured mode of ``model``'s family once; see the module docstring."""
    spec = parse_model_string(model)
    if spec.kind == "sim":
        raise UserError(f"{model} is simulated: there is no server to probe")
    default, modes = FAMILY_MODES[spec.kind]
    backend = create_backend(model, dotenv_path=dotenv_path, timeout_s=timeout_s, env=env)
    report = ProbeReport(model=backend.name, family=spec.kind, default_mode=default)
    pattern = re.compile(answer_format(PROBE_ANSWER_TYPE).regex)  # type: ignore[union-attr]
    try:
        lister = getattr(backend, "list_models", None)
        if callable(lister):
            try:
                report.server_models = await lister()
            except BackendError as exc:
                report.models_detail = str(exc)
        else:
            report.models_detail = "this backend has no model list"
        ordered = [m for m in modes if m != "none"] + ["none"]
        for mode in ordered:
            report.modes.append(await _try_mode(backend, mode, pattern))
    finally:
        await backend.aclose()
    return report


def probe(model: str, **options: object) -> ProbeReport:
    """Synchronous :func:`aprobe`."""
    return asyncio.run(aprobe(model, **options))  # type: ignore[arg-type]


async def _try_mode(backend: object, mode: str, pattern: re.Pattern[str]) -> ModeResult:
    config = GenerationConfig(
        max_tokens=PROBE_MAX_TOKENS, structured=mode != "none", structured_mode=mode, structured_fallback="stop"
    )
    request = ChatRequest("probe", PROBE_SYSTEM, PROBE_USER, config=config, answer_type=PROBE_ANSWER_TYPE)
    started = time.perf_counter()
    try:
        result = await backend.complete(request)  # type: ignore[attr-defined]
    except BackendError as exc:
        status = "refused" if exc.fatal else "error"
        message = str(exc).replace(f"{getattr(backend, 'name', '')}: ", "", 1)
        return ModeResult(mode, status, _one_line(message), time.perf_counter() - started)
    seconds = time.perf_counter() - started
    text = (result.text or "").strip()
    shown = repr(text[:60] + ("..." if len(text) > 60 else ""))
    if result.finish_reason == "length":
        return ModeResult(mode, "cut", f"stopped at {PROBE_MAX_TOKENS} tokens (finish_reason=length): {shown}",
                          seconds)
    match = pattern.fullmatch(text)
    if match and int(match.group(1)) == PROBE_EXPECTED:
        return ModeResult(mode, "works", shown, seconds)
    if match:
        return ModeResult(mode, "wrong", f"in the format, but {PROBE_EXPECTED} was asked for: {shown}", seconds)
    status = "no" if mode == "none" else "ignored"
    return ModeResult(mode, status, f"answer not in the format: {shown}", seconds)


_REFUSED = re.compile(r"structured-output constraint \((.*)\); (stopping|sending)", re.DOTALL)


def _one_line(text: str, limit: int = 160) -> str:
    """The server's own words: the refusal's cause without the run advice around it."""
    text = " ".join(text.split())
    refused = _REFUSED.search(text)
    if refused:
        text = refused.group(1)
    return text if len(text) <= limit else text[: limit - 3] + "..."
