"""Test and benchmark support shipped with counterbench: fake model servers on 127.0.0.1.

* :mod:`counterbench.testing.fake_openai` — OpenAI chat completions, with fault injection;
* :mod:`counterbench.testing.fake_anthropic` — Anthropic Messages, with fault injection;
* :mod:`counterbench.testing.fake_batch` — both of them with their providers' batch APIs (files, batches,
  results), with a processing delay and failed and expired items and jobs.

Both run in-process (``async with``), on a background thread (:func:`run_in_thread`) or as their own
process (:class:`ServerProcess`, ``python -m counterbench.testing.fake_openai``).
"""

from counterbench.testing._fakecore import (
    FAULT_KINDS,
    Counters,
    FaultConfig,
    ServerProcess,
    ThreadedServer,
    answer_number,
    answer_text,
    run_in_thread,
)

__all__ = [
    "FAULT_KINDS",
    "Counters",
    "FaultConfig",
    "ServerProcess",
    "ThreadedServer",
    "answer_number",
    "answer_text",
    "run_in_thread",
]
