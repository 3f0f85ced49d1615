"""A small Chrome DevTools Protocol client (aiohttp websockets) to drive headless Chromium in tests.

It starts ``chromium --headless --remote-debugging-port=0``, opens one page, and offers what a
person does: load a URL, click, choose an option, read the page. It records every network request,
every JavaScript dialog (an ``alert`` would show up here) and every console message, so a test can
prove that untrusted text never ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.report.chromium import CHROMIUM, FLAGS


@dataclass
class Recorded:
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    loads: int = 0


class Page:
    """One browser tab reached through a flattened CDP session."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, session: str, recorded: Recorded,
                 pending: dict[int, asyncio.Future[Any]], counter: list[int]) -> None:
        self.ws, self.session, self.recorded = ws, session, recorded
        self._pending, self._counter = pending, counter
        self._load = asyncio.Event()
        self._tasks: set[asyncio.Future[Any]] = set()

    async def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        self._counter[0] += 1
        ident = self._counter[0]
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        await self.ws.send_str(json.dumps({"id": ident, "method": method, "params": params or {},
                                           "sessionId": self.session}))
        return await asyncio.wait_for(future, timeout)

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.loadEventFired":
            self.recorded.loads += 1
            self._load.set()
        elif method == "Network.requestWillBeSent":
            self.recorded.requests.append(params["request"]["url"])
        elif method == "Page.javascriptDialogOpening":
            self.recorded.dialogs.append(params.get("message", ""))
            self._tasks.add(asyncio.ensure_future(self.send("Page.handleJavaScriptDialog", {"accept": True})))
        elif method == "Runtime.consoleAPICalled":
            self.recorded.console.append(" ".join(str(a.get("value", "")) for a in params.get("args", [])))
        elif method == "Log.entryAdded":
            self.recorded.console.append(params["entry"].get("text", ""))

    async def goto(self, url: str) -> None:
        self._load.clear()
        await self.send("Page.navigate", {"url": url})
        await asyncio.wait_for(self._load.wait(), 30)

    async def evaluate(self, expression: str) -> Any:
        reply = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in reply:
            raise RuntimeError(f"page script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def navigating(self, expression: str) -> None:
        """Run ``expression`` (a click or a form submit) and wait for the next page to load."""
        self._load.clear()
        await self.evaluate(expression)
        await asyncio.wait_for(self._load.wait(), 30)

    async def url(self) -> str:
        return str(await self.evaluate("location.href"))


class Browser:
    """``async with Browser(workdir) as page:`` — a headless Chromium with one open page."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.recorded = Recorded()
        self._proc: subprocess.Popen[str] | None = None
        self._http: aiohttp.ClientSession | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Page:
        if CHROMIUM is None:
            raise RuntimeError("chromium is not installed")
        self._proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             f"--user-data-dir={self.workdir / 'cdp-profile'}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ws_url = await asyncio.to_thread(self._devtools_url)
        self._http = aiohttp.ClientSession()
        ws = await self._http.ws_connect(ws_url, max_msg_size=0)
        pending: dict[int, asyncio.Future[Any]] = {}
        counter = [0]
        pages: dict[str, Page] = {}

        async def read() -> None:
            async for message in ws:
                data = json.loads(message.data)
                if "id" in data and data["id"] in pending:
                    future = pending.pop(data["id"])
                    if "error" in data:
                        future.set_exception(RuntimeError(str(data["error"])))
                    else:
                        future.set_result(data.get("result", {}))
                elif "method" in data and data.get("sessionId") in pages:
                    pages[data["sessionId"]].on_event(data["method"], data.get("params", {}))

        self._reader = asyncio.create_task(read())

        async def browser_call(method: str, params: dict[str, Any]) -> Any:
            counter[0] += 1
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            pending[counter[0]] = future
            await ws.send_str(json.dumps({"id": counter[0], "method": method, "params": params}))
            return await asyncio.wait_for(future, 30)

        target = await browser_call("Target.createTarget", {"url": "about:blank"})
        attached = await browser_call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        page = Page(ws, attached["sessionId"], self.recorded, pending, counter)
        pages[page.session] = page
        for domain in ("Page.enable", "Network.enable", "Runtime.enable", "Log.enable"):
            await page.send(domain)
        return page

    def _devtools_url(self) -> str:
        assert self._proc is not None and self._proc.stderr is not None
        for line in self._proc.stderr:
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                threading.Thread(target=self._proc.stderr.read, daemon=True).start()  # keep the pipe drained
                return found.group(1)
        raise RuntimeError("chromium exited before opening its DevTools port")

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._http is not None:
            await self._http.close()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
