"""A local HTTP/1.1 server that answers from a script, for the transports' tests (retries,
keep-alive, framing) where a real server would not misbehave on cue."""
from __future__ import annotations

import http.server
import json
import ssl
import threading
from dataclasses import dataclass, field
from typing import Optional, Union


def problem(status: int, code: str, detail: str = "d") -> bytes:
    return json.dumps({"type": "urn:gpurent:problem:" + code, "title": "T", "status": status,
                       "code": code, "detail": detail}).encode()


@dataclass
class Answer:
    """status and headers; body bytes, or a list of chunks sent with chunked framing.
    drop: close the connection without answering. close_after: answer, then close the
    connection without saying so (as a server ending an idle keep-alive connection does).
    until_close: no Content-Length; the body ends when the connection closes."""

    status: int = 200
    body: Union[bytes, list[bytes]] = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    close_after: bool = False
    until_close: bool = False


class ScriptedServer:
    """Answers requests from `answers` in order (then 200 {}); records every request as
    (method, path, headers, body) and counts the connections accepted. tls: a server-side
    SSLContext to speak https."""

    def __init__(self, answers: list[Union[Answer, tuple]],
                 tls: Optional[ssl.SSLContext] = None):
        self.answers = [a if isinstance(a, Answer) else Answer(a[0], a[2], dict(a[1]))
                        for a in answers]
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.connections = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with outer._lock:
                    outer.connections += 1

            def log_message(self, *args: object) -> None:
                pass

            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with outer._lock:
                    outer.requests.append((self.command, self.path, dict(self.headers), body))
                    answer = outer.answers.pop(0) if outer.answers else Answer()
                if answer.drop:
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                headers = dict(answer.headers)
                default = "application/problem+json" if answer.status >= 400 else "application/json"
                self.send_header("Content-Type", headers.pop("Content-Type", default))
                for k, v in headers.items():
                    self.send_header(k, v)
                if isinstance(answer.body, list):
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for chunk in answer.body:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                elif answer.until_close:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(answer.body)
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                if answer.close_after:
                    self.close_connection = True

            do_GET = do_POST = do_DELETE = do_PUT = handle_any

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def dead_url() -> str:
    """The URL of a port nothing listens on (a server started and closed)."""
    s = ScriptedServer([])
    url = s.url
    s.close()
    return url


def header(request: tuple, name: str) -> Optional[str]:
    return {k.lower(): v for k, v in request[2].items()}.get(name.lower())
