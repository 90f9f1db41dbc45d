"""Open a page in headless Chromium (Debian's `chromium` package) and ask it, through the DevTools
protocol over a pipe (--remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4; no
port, no extra package), whether every image and video element loaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

# waits for each video to have its first frame (or to fail), then reports every img and video
MEDIA_CHECK = """
(async () => {
  const videos = [...document.querySelectorAll('video')];
  await Promise.all(videos.map(v => v.readyState >= 2 || v.error ? null : new Promise(done => {
    v.addEventListener('loadeddata', done); v.addEventListener('error', done); setTimeout(done, 20000);
    v.play().catch(() => {});
  })));
  return {
    images: [...document.images].map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight})),
    videos: videos.map(v => ({readyState: v.readyState, error: v.error ? v.error.code : null, width: v.videoWidth,
                              height: v.videoHeight, duration: v.duration})),
  };
})()
"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    def __init__(self, timeout: float = 60.0):
        exe = chromium()
        if exe is None:
            raise RuntimeError("no chromium: `apt-get install chromium` (bash setup.sh --test does)")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()
        # the child's ends move above fd 10 first, so that dup2 onto 3 and 4 cannot hit one of them
        to_browser, from_browser = (self._high(fd) for fd in (to_browser, from_browser))

        def fds():  # the protocol's fixed descriptors in the child
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--autoplay-policy=no-user-gesture-required", f"--user-data-dir={self._profile}", "about:blank"],
            preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buf = b""
        self._id = 0

    @staticmethod
    def _high(fd: int) -> int:
        import fcntl

        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return high

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._next()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def wait_event(self, method: str) -> dict:
        while True:
            msg = self._next()
            if msg.get("method") == method:
                return msg

    def _next(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._in, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def media(self, page: Path) -> dict:
        """{"images": [...], "videos": [...]} of the page once loaded (see MEDIA_CHECK)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=session)
        self.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        self.wait_event("Page.loadEventFired")
        result = self.send("Runtime.evaluate", {"expression": MEDIA_CHECK, "awaitPromise": True, "returnByValue": True},
                           session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the media check failed in the page: {result['exceptionDetails']}")
        return result["result"]["value"]

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._in)
        os.close(self._out)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
