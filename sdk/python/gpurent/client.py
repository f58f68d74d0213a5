"""The synchronous client of the gpurent REST API (docs/api.md), standard library only.

    from gpurent import Client
    c = Client()                       # URL and key as the CLI finds them (gpurent.config)
    inst = c.instances.create(gpu_type="h100-80g", command=["python", "train.py"])
    c.wait_until(inst.id, "running", timeout=300)
    for line in c.instances.stream_logs(inst.id):
        print(line, end="")

A Client keeps one keep-alive connection (http.client) and is not thread-safe: use one per
thread, or AsyncClient (gpurent.aio) for concurrency. What it does is written once in _core and
api (flows); this module only performs their steps with blocking sockets.
"""
from __future__ import annotations

import http.client
import select
import ssl
import time
import urllib.parse
from typing import Any, Callable, Iterator, Optional

from ._core import (DEFAULT_RETRIES, Emit, Flow, FlowDriver, HttpRequest, HttpResponse,
                    NotSent, Sent, TransportError)
from .api import Api, Instances

__all__ = ["Client", "Instances", "DEFAULT_RETRIES"]

# What http.client raises when a connection fails.
_SOCKET_ERRORS = (OSError, http.client.HTTPException)


def _connection(base_url: str, timeout: Optional[float],
                ssl_context: Optional[ssl.SSLContext]) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme == "https":
        return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                           context=ssl_context)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def _idle_connection_closed(conn: http.client.HTTPConnection) -> bool:
    """Whether the server closed (or wrote to) a kept-alive connection while it was idle: an
    idle HTTP/1.1 connection has nothing to read, so anything readable (EOF, most often) means
    it cannot carry the next request."""
    if conn.sock is None:
        return True
    try:
        readable, _, _ = select.select([conn.sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _Stream:
    """An answer whose body is read as it comes, on a connection of its own."""

    def __init__(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse,
                 read_timeout: Optional[float]):
        self._conn = conn
        self._response = response
        self.status = response.status
        self.headers = dict(response.getheaders())
        if conn.sock is not None:
            conn.sock.settimeout(read_timeout)

    def read_chunk(self) -> bytes:
        try:
            return self._response.read1(65536)
        except _SOCKET_ERRORS as e:
            raise Sent(e) from e

    def read_all(self) -> bytes:
        try:
            return self._response.read()
        except _SOCKET_ERRORS as e:
            raise Sent(e) from e

    def close(self) -> None:
        self._conn.close()


class _Transport:
    """Blocking I/O: one kept-alive connection for exchanges, a new one per stream."""

    def __init__(self, client: "Client"):
        self._client = client
        self._conn: Optional[http.client.HTTPConnection] = None
        self._conn_url: Optional[str] = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._conn_url = None

    def exchange(self, request: HttpRequest) -> HttpResponse:
        reused = self._conn is not None and self._conn_url == request.base_url
        if reused and _idle_connection_closed(self._conn):
            reused = False
        if not reused:
            self.close()
            self._conn = _connection(request.base_url, request.timeout, self._client.ssl_context)
            self._conn_url = request.base_url
        conn = self._conn
        assert conn is not None
        try:
            conn.request(request.method, request.target, body=request.body,
                         headers=request.headers)
        except _SOCKET_ERRORS as e:
            self.close()
            raise NotSent(e, stale=reused) from e
        try:
            if conn.sock is not None:
                conn.sock.settimeout(request.read_timeout)
            response = conn.getresponse()
            body = response.read()
        except _SOCKET_ERRORS as e:
            self.close()
            raise Sent(e, stale=reused and isinstance(e, http.client.RemoteDisconnected)) from e
        if response.will_close:
            self.close()
        elif conn.sock is not None:
            conn.sock.settimeout(request.timeout)
        return HttpResponse(response.status, dict(response.getheaders()), body)

    def open_stream(self, request: HttpRequest) -> _Stream:
        conn = _connection(request.base_url, request.timeout, self._client.ssl_context)
        try:
            conn.request(request.method, request.target, body=request.body,
                         headers=request.headers)
        except _SOCKET_ERRORS as e:
            conn.close()
            raise NotSent(e) from e
        try:
            response = conn.getresponse()
        except _SOCKET_ERRORS as e:
            conn.close()
            raise Sent(e) from e
        return _Stream(conn, response, request.read_timeout)

    def sleep(self, seconds: float) -> None:
        self._client._sleep(seconds)


class Client(Api):
    """A client of one gpurent platform (blocking; see AsyncClient for asyncio).

    url: one base URL, or several separated by commas (servers of one platform: a connection
    failure or a 503 no_leader/not_leader moves on to the next). api_key: a gpr_... key. Both
    default to GPURENT_URL / GPURENT_API_KEY and then the CLI's config file
    (~/.config/gpurent/config.toml). timeout: seconds per socket operation. retries: how many
    times a failed request is sent again (0: never). backoff: the base of the exponential backoff
    in seconds (full jitter), capped by max_backoff. ssl_context: for https:// (default: the
    system's trust store). on_request: called with a RequestInfo after every HTTP exchange
    (logging, metrics, tests).

    Route groups: instances, jobs, reservations, volumes, uploads, templates, billing, packages,
    prices, tenants, keys, audit, nodes, join_tokens, metrics, alerts, events (gpurent.api).
    """

    _sleep: Callable[[float], None] = staticmethod(time.sleep)  # tests replace it

    def _new_transport(self) -> _Transport:
        return _Transport(self)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def _conn(self) -> Optional[http.client.HTTPConnection]:
        """The kept-alive connection, if one is open."""
        return self._transport._conn

    # ---- the driver ------------------------------------------------------------------------------
    def _steps(self, flow: Flow) -> Iterator[Any]:
        """Performs the flow's steps with blocking I/O, yielding what it emits; returns its
        value."""
        driver = FlowDriver(flow)
        try:
            while (step := driver.next_step()) is not None:
                if isinstance(step, Emit):
                    yield step.value
                    continue
                try:
                    driver.value = step.perform(self._transport)
                except TransportError as e:
                    driver.failure = e
        finally:
            flow.close()
        return driver.result

    def _run(self, flow: Flow) -> Any:
        steps = self._steps(flow)
        try:
            item = next(steps)
        except StopIteration as stop:
            return stop.value
        steps.close()
        raise TypeError(f"a flow run for its value emitted an item: {item!r}")

    def _iterate(self, flow: Flow) -> Iterator[Any]:
        yield from self._steps(flow)
