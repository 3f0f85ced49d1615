"""Does ``--rpm`` hold cluster-wide at the real scale (60-second windows)? Prints JSON.

The test suite checks the arrivals at the server over 3-second windows (a stricter guarantee that
implies the 60-second one) and the limiter's logic at 60 s on a simulated clock; this checks the
real thing once, in real time: ``--requests`` prompts (default 800, so that the run lasts more than
a minute and the limit binds) through ``--ray`` with ``--actors`` workers and ``--rpm`` against the
fake OpenAI server, which notes when every request arrives. Reported: the largest number of
arrivals in any 60-second window (must be ≤ rpm: ``holds``, which is also ``within_goal``) and the
run's time. With fewer requests than ``--rpm`` the limit never binds and the check is trivially met.

Usage: ``python benchmarks/ray_rpm.py [--rpm 600] [--requests 800] [--actors 2] [--out FILE]``
(about 80 s at the defaults, little CPU).
"""

from __future__ import annotations

import argparse
import bisect
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_json import finish, load_average

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=float, default=600)
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import ray
    from benchmarks.run_throughput import make_prompts

    from counterbench.run import run_prompts
    from counterbench.run.ray_exec import RayOptions
    from counterbench.testing.fake_openai import FakeOpenAIServer, FaultConfig, run_in_thread

    class TimedServer(FakeOpenAIServer):
        def __init__(self) -> None:
            super().__init__(FaultConfig())
            self.arrivals: list[float] = []

        async def chat(self, request: Any) -> Any:
            self.arrivals.append(time.monotonic())
            return await super().chat(request)

    report: dict[str, Any] = {"benchmark": "ray_rpm", "rpm": args.rpm, "requests": args.requests,
                              "actors": args.actors, "load_average_before": before}
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        with run_in_thread(TimedServer()) as server, tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            summary = run_prompts(make_prompts(args.requests, "rpm"),
                                  [f"openai-compatible:{server.base_url}:fake-model"],
                                  store=Path(tmp) / "rpm.db", handle_signals=False, concurrency=args.concurrency,
                                  rpm=args.rpm, ray=RayOptions(actors=args.actors))
            report["wall_s"] = time.perf_counter() - started
            arrivals = sorted(server.server.arrivals)  # type: ignore[attr-defined]
    finally:
        ray.shutdown()
    assert summary.complete
    window = [bisect.bisect_left(arrivals, t + 60.0) - i for i, t in enumerate(arrivals)]
    report.update({
        "arrivals": len(arrivals),
        "span_s": arrivals[-1] - arrivals[0],
        "max_arrivals_in_any_60_s_window": max(window),
        "holds": max(window) <= args.rpm,
    })
    goal = (f"--rpm holds cluster-wide in real time: no 60-second window holds more than {args.rpm:g} request "
            f"arrivals at the server (max_arrivals_in_any_60_s_window <= rpm, the key holds)")
    finish(report, before, goal=goal, within_goal=report["holds"], out=args.out)


if __name__ == "__main__":
    main()
