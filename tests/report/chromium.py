"""Open a report in headless Chromium: the DOM after load, console messages, and a screenshot.

Console errors are caught twice: Chromium's own log of console messages (``--enable-logging=stderr``,
lines with ``:CONSOLE``; CSP violations land there too), and a tiny probe script inserted as the
first element of ``<head>`` — before the report's Content-Security-Policy, so the policy does not
block it — that writes uncaught errors and failed resource loads into an attribute of ``<html>``,
which ``--dump-dom`` then shows.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0", "--hide-scrollbars", "--mute-audio",
)
PROBE = (
    "<script>window.addEventListener('error',function(e){var t=e.target,h=document.documentElement;"
    "var m=e.message||('resource failed: '+((t&&(t.src||t.href))||'?'));"
    "h.setAttribute('data-probe-errors',(h.getAttribute('data-probe-errors')||'')+'|'+m)},true);"
    "document.documentElement.setAttribute('data-probe','ready');</script>"
)


@dataclass
class PageLoad:
    dom: str
    console: list[str]


def root_tag(dom: str) -> str:
    """The opening ``<html ...>`` tag of a dumped DOM (where the probe and the payload write)."""
    match = re.search(r"<html\b[^>]*>", dom)
    return match.group(0) if match else ""


def with_probe(html: str) -> str:
    """``html`` with the error probe as the first element of ``<head>``."""
    head = html.index("<head>") + len("<head>")
    return html[:head] + PROBE + html[head:]


def _run(args: list[str], profile: Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    if CHROMIUM is None:
        raise RuntimeError("chromium is not installed")
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.search(r":CONSOLE(\(\d+\))?[:\]]", line)]


def load(page: Path, workdir: Path) -> PageLoad:
    """The DOM after load (``--dump-dom``) and every console message."""
    done = _run(["--dump-dom", page.resolve().as_uri()], workdir / "profile-dom")
    return PageLoad(done.stdout, console_lines(done.stderr))


def screenshot(page: Path, png: Path, workdir: Path, size: tuple[int, int] = (1280, 4000)) -> list[str]:
    """Write a PNG of the page's top ``size``; returns the console messages."""
    done = _run([f"--screenshot={png}", f"--window-size={size[0]},{size[1]}", page.resolve().as_uri()],
                workdir / "profile-shot")
    return console_lines(done.stderr)
