"""What a run did (:class:`RunSummary`, what :func:`counterbench.run.runner.run_prompts` returns) and its few
human lines (:func:`format_summary`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunSummary:
    """What a run did. ``status``: ``completed``, ``interrupted``, ``max_cost`` or ``failed``."""

    store: Path
    run_id: int
    status: str
    models: dict[str, dict[str, Any]]
    totals: dict[str, Any]
    elapsed_s: float
    resume_command: str | None = None
    unsaved_file: Path | None = None
    notes: list[str] = field(default_factory=list)
    #: fingerprint of the generation config the answers are stored under
    config_fp: str = ""
    #: with --max-cost: USD that attempts of unknown bill (timeouts, dropped connections) may have cost
    #: at worst, counted against the budget next to ``totals["cost_usd"]``
    cost_unsure_usd: float = 0.0
    #: with ``--repeats K``: the fingerprints of repeats 1 … K−1 (repeat 0's is ``config_fp``)
    repeat_config_fps: tuple[str, ...] = ()

    @property
    def config_fps(self) -> tuple[str, ...]:
        """Every generation config this run's answers are stored under (one per repeat)."""
        return (self.config_fp, *self.repeat_config_fps)

    @property
    def complete(self) -> bool:
        return self.status == "completed"


def format_summary(summary: RunSummary) -> str:
    """A few human lines about a finished (or stopped) run."""
    lines = []
    for model, c in summary.models.items():
        sim = " [simulated]" if c.get("simulated") else ""
        lines.append(
            f"{model}{sim}: {c['done']:,} answered now ({c['sent']:,} requests, {c['cached']:,} from cache), "
            f"{c['already_done']:,} already stored · ok {c['ok']:,} · refused {c['refused']:,} · "
            f"unparseable {c['unparseable']:,} · unfinished {c.get('unfinished', 0):,} · errors {c['errors']:,} · "
            f"retries {c['retries']:,} · "
            f"${c['cost_usd']:.4f}" + (" at batch price" if c.get("batch") else "")
        )
        if c.get("batch_jobs_open"):
            lines.append(f"  {c['batch_jobs_open']} batch job(s) still open at the provider: rerun to collect them")
        reasons = c.get("finish_reasons") or {}
        odd = {k: v for k, v in reasons.items() if k not in ("stop", "end_turn", "eos")}
        if odd:
            lines.append("  finish reasons: " + ", ".join(f"{k} {v:,}" for k, v in sorted(odd.items())))
    lines.extend(f"warning: {note}" for note in summary.notes)
    lines.append(f"store: {summary.store} (run {summary.run_id}, {summary.elapsed_s:.1f} s)")
    earlier = sum(int(c.get("stored_errors", 0)) for c in summary.models.values())
    if summary.totals.get("errors") or earlier:
        failed = int(summary.totals.get("errors", 0)) + earlier
        lines.append(f"{failed:,} request(s) failed or did not finish (truncated, filtered, empty); rerun with "
                     "--retry-errors to send only those again")
    return "\n".join(lines)
