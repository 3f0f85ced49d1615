"""A run's frame: what its engines share, the config each request is sent with, and how it stops.

:class:`RunSession` holds what every engine shares — the lanes (:mod:`counterbench.run.lane`), the
generation config, the store writer, the parser, the redactor, the progress display, the
``--max-cost`` budget, the row :class:`~counterbench.run.recorder.Recorder` — and the run's
frame (:meth:`RunSession._session`): the stop event, the Ctrl-C/SIGTERM handlers, the writer attached
to the event loop and the progress ticker. The in-process engine
(:class:`~counterbench.run.engine.Engine`) and the Ray engine
(:class:`~counterbench.run.ray_exec.RayEngine`) build on it.

Stopping: ``stop()`` (first Ctrl-C/SIGTERM, ``--max-cost`` reached, a fatal backend, a store that
can no longer be written) lets in-flight requests finish but starts no new ones and wakes every
waiting retry, cooldown and rate-limit wait at once; a second Ctrl-C cancels in-flight requests.
Whatever happens, every answer received is committed (or kept for the recovery file) before
returning.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator

from counterbench.models.base import GenerationConfig
from counterbench.run.budget import Budget
from counterbench.run.lane import EngineSettings, Lane
from counterbench.run.parsing import ResponseParser
from counterbench.run.plan import PromptItem
from counterbench.run.progress import RunDisplay
from counterbench.run.recorder import Recorder
from counterbench.run.redact import Redactor
from counterbench.run.writer import BatchWriter


class RunSession:
    """What a run shares, and its frame; subclasses give it a ``run()`` (see the module docstring)."""

    def __init__(
        self,
        lanes: list[Lane],
        *,
        config: GenerationConfig,
        settings: EngineSettings,
        writer: BatchWriter,
        parser: ResponseParser,
        redactor: Redactor,
        display: RunDisplay,
        run_id: int,
    ) -> None:
        self.lanes = lanes
        self.config = config
        self.settings = settings
        self.writer = writer
        self.parser = parser
        self.redactor = redactor
        self.display = display
        self.run_id = run_id
        self.stop_reason: str | None = None
        self.budget = Budget(settings.max_cost)
        self._stop_event: asyncio.Event | None = None
        self._workers: list[asyncio.Task[None]] = []
        #: requests waiting to be retried (they hold no worker and no slot while they wait)
        self._retries: set[asyncio.Task[None]] = set()
        self._signals = 0
        self.recorder = Recorder(writer, parser, redactor, self.budget, run_id)
        #: the run's config with each prompt-requested token limit (see ``GenerationConfig.prompt_max_tokens``)
        self._prompt_configs: dict[int, GenerationConfig] = {}

    # -- what a request is sent with ------------------------------------------------------------

    def _config_for(self, lane: Lane, item: PromptItem) -> GenerationConfig:
        """The config ``item`` is sent with: --retry-max-tokens, else the prompt's own limit, else the run's."""
        work = lane.work
        if work.bigger_tokens is not None and item.key() in work.bigger_tokens:
            # --retry-max-tokens wins over a prompt's own limit
            return (work.bigger_config or self.config).for_repeat(item.repeat)
        if item.config is not None:  # a later repeat (--repeats): its own config
            return item.config.for_prompt(item.max_tokens)
        if item.max_tokens is not None and self.config.prompt_max_tokens:
            return self._prompt_configs.get(item.max_tokens) or self._prompt_config(item.max_tokens)
        return self.config

    def _prompt_config(self, max_tokens: int) -> GenerationConfig:
        config = self._prompt_configs[max_tokens] = self.config.for_prompt(max_tokens)
        return config

    # -- control --------------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        if self.stop_reason is None or reason == "failed":
            self.stop_reason = reason
        if self._stop_event is not None:
            self._stop_event.set()
        for lane in self.lanes:
            if lane.limit is not None:
                lane.limit.close()

    @property
    def stopping(self) -> bool:
        return self.stop_reason is not None

    def _on_signal(self) -> None:
        self._signals += 1
        if self._signals == 1:
            self.stop("interrupted")
            self.display.message(
                "Stopping: letting in-flight requests finish and saving (press Ctrl-C again to abandon them)…"
            )
        else:
            for task in [*self._workers, *self._retries]:
                task.cancel()

    # -- the frame ------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[None]:
        """A run's frame: the stop event, the Ctrl-C/SIGTERM handlers, the writer on this event loop and
        the progress ticker; all undone on leaving (the caller then flushes the writer)."""
        self._stop_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        installed = self._install_signal_handlers(loop)
        self.writer.attach(loop)
        ticker = asyncio.create_task(self._tick()) if self.display.mode != "off" else None
        try:
            yield
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            for sig in installed:
                loop.remove_signal_handler(sig)
            self.writer.attach(None)

    def _install_signal_handlers(self, loop: asyncio.AbstractEventLoop) -> list[signal.Signals]:
        """Ctrl-C and SIGTERM stop the run (when the settings ask for it); the signals handled, to remove later."""
        installed: list[signal.Signals] = []
        if self.settings.handle_signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, self._on_signal)
                    installed.append(sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        return installed

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.stop("failed")  # a bug or a store failure: stop the others, then re-raise

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.3)
            self.display.refresh()
