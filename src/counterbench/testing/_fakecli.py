"""The fake servers' command line: ``python -m counterbench.testing.fake_openai --port 0 ...`` serves
until SIGTERM/SIGINT, ``--max-seconds`` or the parent's exit, printing ``READY <base url>`` first."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import time
from contextlib import suppress

from counterbench.testing._fakecore import DEFAULT_RANDOM_FAULTS, FAULT_KINDS, FakeServerBase, FaultConfig


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = a free port (printed on the READY line)")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--faults", default=",".join(DEFAULT_RANDOM_FAULTS), help="comma-separated kinds")
    parser.add_argument("--force", default=None, help="inject this fault into every request")
    parser.add_argument("--retry-after", default="0.05")
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api-key", default=None, help="require this key (401 otherwise)")
    parser.add_argument("--reject-fields", default="", help="comma-separated request fields refused as invalid")
    parser.add_argument("--reject-response-formats", default="",
                        help="comma-separated response_format types refused as invalid (e.g. json_schema)")
    parser.add_argument("--reject-status", type=int, default=500, help="the status of such a refusal")
    parser.add_argument("--sample-labels", action="store_true",
                        help="draw label and choice answers from their probabilities (default: the most probable)")
    parser.add_argument("--bare-answers", action="store_true", help="answer label and choice prompts without ###")
    parser.add_argument("--label-variants", type=float, default=0.0,
                        help="with logprobs: the share of each answer's probability on other spellings (Yes, yes)")
    parser.add_argument("--label-mass", type=float, default=1.0,
                        help="with logprobs: the share of the probability the allowed answers hold (1e-8: forced)")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="stop after this long")


def config_from_args(args: argparse.Namespace) -> FaultConfig:
    kinds = tuple(k for k in args.faults.split(",") if k)
    unknown = set(kinds) - set(FAULT_KINDS)
    if unknown:
        raise SystemExit(f"unknown fault kinds: {', '.join(sorted(unknown))} (known: {', '.join(FAULT_KINDS)})")
    return FaultConfig(
        latency_ms=args.latency_ms,
        fault_rate=args.fault_rate,
        fault_kinds=kinds,
        force=args.force,
        retry_after=args.retry_after or None,
        hang_s=args.hang_s,
        seed=args.seed,
        api_key=args.api_key,
        reject_fields=tuple(f for f in args.reject_fields.split(",") if f),
        reject_status=args.reject_status,
        reject_response_formats=tuple(f for f in args.reject_response_formats.split(",") if f),
        sample_labels=args.sample_labels,
        bare_answers=args.bare_answers,
        label_variants=args.label_variants,
        label_mass=args.label_mass,
    )


def serve_from_command_line(server_class: type[FakeServerBase], description: str | None,
                            argv: list[str] | None = None) -> None:
    """A fake server's ``main``: read the command line (:func:`add_cli_arguments`), serve until done."""
    parser = argparse.ArgumentParser(description=description)
    add_cli_arguments(parser)
    args = parser.parse_args(argv)
    server = server_class(config_from_args(args), host=args.host, port=args.port)
    asyncio.run(serve_until_done(server, args.max_seconds))


async def serve_until_done(server: FakeServerBase, max_seconds: float) -> None:
    """Serve until SIGTERM/SIGINT, ``max_seconds``, or the parent process exits; print READY first."""
    parent = os.getppid()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await server.start()
    print(f"READY {server.base_url}", flush=True)
    deadline = time.monotonic() + max_seconds
    try:
        while not stop.is_set() and time.monotonic() < deadline and os.getppid() == parent:
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=0.5)
    finally:
        await server.stop()
        print(f"STOPPED {server.counters.as_dict()}", flush=True)
