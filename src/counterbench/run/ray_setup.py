"""What ``--ray`` needs before any work is dealt: its options, Ray itself, and a connection.

Imports nothing from Ray at import time (Ray is an optional extra: ``pip install 'counterbench[ray]'``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from counterbench.errors import UserError

RAY_HINT = "install Ray with: pip install 'counterbench[ray]'"
#: ``ray start`` turns token authentication on by default in recent Ray versions (2.60 here); a
#: process connecting to such a cluster by its address must say so, or it is refused unexplained
AUTH_HINT = ("; if the cluster uses token authentication (`ray start`'s default in recent Ray), set "
             "RAY_AUTH_MODE=token and give its token in ~/.ray/auth_token or RAY_AUTH_TOKEN")
#: a local instance's settings: Ray runs its workers at nice 15 by default (to keep its own daemons
#: responsive), which on a machine shared with other work left the embedded-model workers 0.4x the
#: CPU of an in-process run; the workers are the run's whole point, so they get nice 0 here
LOCAL_SYSTEM_CONFIG: dict[str, Any] = {"worker_niceness": 0}
#: seconds to wait for a Ray address to accept a TCP connection before the run is refused
RAY_CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RayOptions:
    """How a run uses Ray (``run_prompts(..., ray=RayOptions(...))``; ``ray=True`` = all defaults).

    ``address``: a running cluster (``auto``, ``HOST:PORT``, ``ray://HOST:10001``); ``None`` connects
    to the instance this process already uses, else starts a local one. ``actors``: workers per model
    (default: the cluster's CPUs shared between the models, at most 8 per model). ``threads``:
    llama.cpp threads of each embedded-model actor (its CPU reservation). ``batch``: request groups
    per Ray task (default: twice an actor's share of ``--concurrency``, 8..256; 2 for the embedded
    model). ``rate_window_s``: the window of the rpm limit's guarantee (a provider counts per minute:
    60). ``stats``: a dict that the run fills with what Ray did (workers, batches, worker CPU seconds, restarts seen).
    """

    address: str | None = None
    actors: int | None = None
    threads: int = 1
    batch: int | None = None
    rate_window_s: float = 60.0
    max_restarts: int = 3
    stats: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.actors is not None and self.actors < 1:
            raise UserError(f"--ray-actors must be at least 1, got {self.actors}")
        if self.threads < 1:
            raise UserError(f"--ray-threads must be at least 1, got {self.threads}")
        if self.batch is not None and self.batch < 1:
            raise UserError(f"the Ray batch size must be at least 1, got {self.batch}")
        if not self.rate_window_s > 0:
            raise UserError("the rate-limit window must be positive")


def ray_options(value: Any) -> RayOptions | None:
    """``ray=`` of the Python API: ``None``/``False`` (off), ``True``, an address, or :class:`RayOptions`."""
    if value is None or value is False:
        return None
    if value is True:
        return RayOptions()
    if isinstance(value, RayOptions):
        return value
    if isinstance(value, str):
        text = value.strip()
        return RayOptions(address=None if text in ("", "local") else text)
    raise UserError(f"ray= must be True, an address or RayOptions, got {value!r}")


def require_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        raise UserError(f"--ray needs Ray; {RAY_HINT}")


def probe_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Refuse a ``HOST:PORT`` (or ``ray://HOST:PORT``) address where nothing accepts a connection."""
    text = address.strip()
    bare = text.removeprefix("ray://")
    if bare == "auto" or ":" not in bare:
        return
    host, _, port_text = bare.rpartition(":")
    host = host.strip("[]")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UserError(f"--ray {address}: the port must be a number from 1 to 65535 (HOST:PORT)")
    try:
        with socket.create_connection((host, int(port_text)), timeout=timeout):
            pass
    except OSError as err:
        reason = "timed out" if isinstance(err, TimeoutError) else (err.strerror or str(err) or type(err).__name__)
        raise UserError(f"cannot connect to the Ray cluster at {address}: nothing answers at {host}:{port_text} "
                        f"({reason}); start one with `ray start --head` or check the address") from None


class RayConnection:
    """Connect to the cluster (or start a local instance) and disconnect only what this run started."""

    def __init__(self, options: RayOptions) -> None:
        self.options = options
        self.started = False

    def __enter__(self) -> RayConnection:
        require_ray()
        import ray

        if ray.is_initialized():
            return self
        address = self.options.address
        kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
        if address is None:
            kwargs["include_dashboard"] = False
            kwargs["_system_config"] = dict(LOCAL_SYSTEM_CONFIG)
        if address is not None:
            probe_address(address)  # Ray itself retries an address nobody answers at forever
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as err:
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            reason = str(err).splitlines()[0] if str(err) else repr(err)
            hint = AUTH_HINT if address is not None and os.environ.get("RAY_AUTH_MODE") is None else ""
            raise UserError(f"cannot connect to {where}: {reason}{hint}") from None
        self.started = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started:
            import ray

            with contextlib.suppress(Exception):
                ray.shutdown()
