"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe` (no websocket library):
Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4.

    with Browser(chromium_path, profile_dir) as browser:
        page = browser.open(url)                    # waits for the load event
        page.evaluate("document.title")
        page.screenshot(path)
        browser.console                             # every console message and uncaught exception
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import subprocess
from pathlib import Path


class Browser:
    def __init__(self, chromium: str, profile: Path, size: tuple[int, int] = (1400, 1000)):
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        def as_fds_3_and_4():
            # In the child before exec: move both ends above 4 first (either may be 3 or 4), then
            # onto 3 and 4; os.dup2 makes them inheritable, and every other fd Python opened is
            # close-on-exec, hence close_fds=False below.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}", "about:blank"],
            preexec_fn=as_fds_3_and_4, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next_id = 0
        self.console: list[str] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        os.close(self._write)
        os.close(self._read)

    def _message(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        params = message.get("params", {})
        if message.get("method") == "Runtime.consoleAPICalled":
            self.console.append(f"{params['type']}: " + " ".join(str(a.get("value", a.get("description")))
                                                                 for a in params["args"]))
        elif message.get("method") == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.console.append("exception: " + details.get("exception", {}).get("description", details["text"]))
        return message

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self._write, json.dumps(command).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def wait_for(self, event: str) -> dict:
        while True:
            message = self._message()
            if message.get("method") == event:
                return message["params"]

    def open(self, url: str) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired")
        return Page(self, session)


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def evaluate(self, expression: str):
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                   session=self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.browser.send("Page.captureScreenshot", {"format": "png"}, session=self.session)["data"]
        path.write_bytes(base64.b64decode(data))
