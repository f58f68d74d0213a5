"""A headless Chromium (Debian's `chromium`) driven through the DevTools protocol, for the web
console's tests: navigate, run script in the page, wait for what the page shows, click and type
as a user does, accept confirm() dialogs, take screenshots, and collect the page's errors
(exceptions, console errors, Content-Security-Policy violations). Nothing downloads a browser."""

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.request
import zlib

import websocket  # Debian's python3-websocket

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class BrowserError(AssertionError):
    pass


class Browser:
    def __init__(self, width=1280, height=860):
        self.width, self.height = width, height
        if not os.path.exists(CHROMIUM):
            raise BrowserError("chromium is not installed: scripts/install-deps.sh test installs it")
        self.profile = tempfile.mkdtemp(prefix="gpurent-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = self._devtools_port()
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(p for p in pages if p["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []
        self.errors = []  # what went wrong in the page: exceptions, console errors, CSP
        self.dialogs = []  # the messages of the dialogs accepted
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def _devtools_port(self):
        deadline = time.monotonic() + 30
        seen = ""
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            seen += line
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if found:
                return int(found.group(1))
        raise BrowserError("chromium did not start:\n" + seen)

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)

    # --- The protocol ----------------------------------------------------------------------

    def send(self, method, params=None, timeout=30):
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self._receive(deadline)
            if message.get("id") == mine:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
        raise BrowserError(f"{method}: no answer in {timeout} s")

    def _receive(self, deadline):
        self.ws.settimeout(max(0.1, deadline - time.monotonic()))
        message = json.loads(self.ws.recv())
        if "method" in message:
            self._event(message["method"], message.get("params", {}))
        return message

    def _event(self, method, params):
        self.events.append((method, params))
        if method == "Page.javascriptDialogOpening":
            self.dialogs.append(params.get("message", ""))
            # Answered at once (the page is blocked until then), as a user who clicks OK.
            self.next_id += 1
            self.ws.send(json.dumps({"id": self.next_id, "method": "Page.handleJavaScriptDialog",
                                     "params": {"accept": True}}))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details["text"])
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            # An API answer of 4xx is the page's to handle (not signed in yet, a refused field);
            # a file of the page that fails to load is an error.
            if not (entry.get("source") == "network" and "/v1/" in entry.get("url", "")):
                self.errors.append(entry["text"])
        elif method == "Runtime.consoleAPICalled" and params["type"] == "error":
            self.errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                        for a in params["args"]))

    def pump(self, seconds):
        """Takes in the page's events for a while (dialogs are answered as they open)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self._receive(deadline)
            except websocket.WebSocketTimeoutException:
                return

    # --- What a test does ------------------------------------------------------------------

    def goto(self, url, timeout=30):
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self._wait_load(url, timeout)

    def reload(self, ignore_cache=False, timeout=30):
        """Loads the page again, as the browser's reload button does (revalidating what it has
        cached), or as a forced reload does with ignore_cache."""
        self.events.clear()
        self.send("Page.reload", {"ignoreCache": ignore_cache})
        self._wait_load("the page", timeout)

    def _wait_load(self, url, timeout):
        deadline = time.monotonic() + timeout
        while not any(m == "Page.loadEventFired" for m, _ in self.events):
            if time.monotonic() > deadline:
                raise BrowserError(f"{url} did not load in {timeout} s")
            try:
                self._receive(deadline)
            except websocket.WebSocketTimeoutException:
                pass

    def eval(self, expression):
        """The value of a script expression in the page (a promise is awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, timeout=30, what=None):
        """Waits until the expression is truthy in the page; returns its value."""
        deadline = time.monotonic() + timeout
        # An element found counts as true (the protocol hands a DOM node back as {}).
        probe = f"(() => {{ const v = ({expression}); return v instanceof Node ? true : v; }})()"
        while True:
            value = self.eval(probe)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {what or expression}")
            self.pump(0.1)

    def wait_text(self, selector, text, timeout=30):
        return self.wait(f"(document.querySelector({json.dumps(selector)})?.textContent || '')"
                         f".includes({json.dumps(text)})", timeout,
                         f"{selector} to show {text!r}")

    def text(self, selector):
        return self.eval(f"document.querySelector({json.dumps(selector)})?.textContent ?? null")

    def click(self, selector):
        self.wait(f"document.querySelector({json.dumps(selector)})", what=selector)
        self.eval(f"document.querySelector({json.dumps(selector)}).click()")
        self.pump(0.05)

    def type(self, selector, text):
        """Sets an input's value as typing does (its input event fires)."""
        self.wait(f"document.querySelector({json.dumps(selector)})", what=selector)
        self.eval(f"""(() => {{
          const el = document.querySelector({json.dumps(selector)});
          el.focus(); el.value = {json.dumps(text)};
          el.dispatchEvent(new Event('input', {{bubbles: true}}));
          el.dispatchEvent(new Event('change', {{bubbles: true}}));
        }})()""")

    def press(self, selector, key):
        """A key pressed in the element (its keydown event)."""
        self.eval(f"document.querySelector({json.dumps(selector)}).dispatchEvent("
                  f"new KeyboardEvent('keydown', {{key: {json.dumps(key)}, bubbles: true}}))")
        self.pump(0.05)

    def select(self, selector, value):
        self.type(selector, value)

    def allow_downloads(self, directory):
        """Downloads the page starts go to `directory`."""
        self.send("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": directory})

    def screenshot(self, path):
        """Saves a PNG of the page and checks it is not blank; returns the path."""
        png = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        with open(path, "wb") as f:
            f.write(png)
        # Checked at a quarter of the size: decoding a PNG in Python is slow.
        small = base64.b64decode(self.send("Page.captureScreenshot", {
            "format": "png",
            "clip": {"x": 0, "y": 0, "width": self.width, "height": self.height, "scale": 0.25},
        })["data"])
        colours = distinct_colours(small)
        if colours < 8:
            raise BrowserError(f"{path} looks blank: {colours} colours")
        return path


def distinct_colours(png, limit=64):
    """How many distinct colours a PNG (8-bit RGB or RGBA, as Chromium writes) has, up to
    `limit`: a blank page has one or two."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            data += chunk
        pos += 12 + length
    width, height, depth, colour_type = header[:4]
    assert depth == 8 and colour_type in (2, 6), f"unexpected PNG format {depth}/{colour_type}"
    bpp = 4 if colour_type == 6 else 3
    raw = zlib.decompress(data)
    stride = width * bpp
    previous = bytearray(stride)
    seen = set()
    for y in range(height):
        line_start = y * (stride + 1)
        kind = raw[line_start]
        line = bytearray(raw[line_start + 1:line_start + 1 + stride])
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up = previous[x]
            corner = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + predictor) & 0xFF
        if y % 8 == 0:  # a sample of the rows is enough to tell a page from a blank one
            for x in range(0, stride, bpp * 4):
                seen.add(bytes(line[x:x + 3]))
            if len(seen) >= limit:
                return len(seen)
        previous = line
    return len(seen)
