"""AsyncClient: the same groups and methods as Client, for asyncio (standard library only).

    import asyncio
    from gpurent import AsyncClient

    async def main():
        async with AsyncClient() as c:
            inst = await c.instances.create(gpu_type="h100-80g", command="python train.py")
            await c.wait_until(inst.id, "running", timeout=300)
            async for line in c.instances.stream_logs(inst.id):
                print(line, end="")
            print(await asyncio.gather(*(c.instances.get(i) for i in ids)))

Methods that return a value return a coroutine of it; list and stream methods return async
iterators. The requests, retries, pagination and waits are the flows Client runs too (_core,
api); this module performs their steps over its own HTTP/1.1 client on asyncio.open_connection:
kept-alive connections (a small pool, so concurrent calls each get one), Content-Length and
chunked bodies, TLS through an ssl.SSLContext.
"""
from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from typing import Any, AsyncIterator, Awaitable, Callable, Optional

from ._core import (Emit, Flow, FlowDriver, HttpRequest, HttpResponse, NotSent, Sent,
                    TransportError)
from .api import Api

__all__ = ["AsyncClient"]

MAX_HEADER_LINE = 65536
MAX_HEADERS = 200
READ_SIZE = 65536
# Kept-alive connections kept per server; more may be open at once while calls are in flight.
MAX_IDLE_CONNECTIONS = 8


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as this client reads it."""


class _Connection:
    """One HTTP/1.1 connection: sends a request, reads the head and then the body."""

    def __init__(self, base_url: str, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter):
        self.base_url = base_url
        self.reader = reader
        self.writer = writer
        self.reusable = False  # set when an answer was read to its end on a kept-alive connection

    @classmethod
    async def open(cls, base_url: str, timeout: Optional[float],
                   ssl_context: Optional[ssl.SSLContext]) -> "_Connection":
        parts = urllib.parse.urlsplit(base_url)
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        context = (ssl_context or ssl.create_default_context()) if tls else None
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, port, ssl=context,
                                    server_hostname=parts.hostname if tls else None,
                                    limit=MAX_HEADER_LINE),
            timeout)
        return cls(base_url, reader, writer)

    def close(self) -> None:
        self.reusable = False
        self.writer.close()

    async def send(self, request: HttpRequest) -> None:
        parts = urllib.parse.urlsplit(request.base_url)
        lines = [f"{request.method} {request.target} HTTP/1.1", f"Host: {parts.netloc}"]
        lines += [f"{k}: {v}" for k, v in request.headers.items()]
        if request.body is not None:
            lines.append(f"Content-Length: {len(request.body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.writer.write(head + (request.body or b""))
        await asyncio.wait_for(self.writer.drain(), request.timeout)

    async def _line(self, timeout: Optional[float]) -> bytes:
        line = await asyncio.wait_for(self.reader.readuntil(b"\n"), timeout)
        return line.rstrip(b"\r\n")

    async def read_head(self, request: HttpRequest) -> tuple[int, dict[str, str], "_Body"]:
        """The status, the headers and a reader of the body. 1xx answers are skipped."""
        while True:
            status_line = await self._line(request.timeout)
            version, _, rest = status_line.decode("latin-1").partition(" ")
            if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
                raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
            status = int(rest[:3])
            headers: dict[str, str] = {}
            while True:
                line = await self._line(request.read_timeout)
                if not line:
                    break
                if len(headers) >= MAX_HEADERS:
                    raise ProtocolError("too many header lines")
                name, sep, value = line.decode("latin-1").partition(":")
                if not sep:
                    raise ProtocolError(f"malformed header line: {line[:80]!r}")
                name, value = name.strip(), value.strip()
                # A repeated header is one comma-separated list (RFC 9110, 5.3).
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            if 100 <= status < 200:
                continue
            lower = {k.lower(): v.lower() for k, v in headers.items()}
            keep_alive = version == "HTTP/1.1" and "close" not in lower.get("connection", "")
            return status, headers, _Body(self, request, status, lower, keep_alive)


class _Body:
    """Reads an answer's body as its framing says: none, Content-Length, chunked, or until the
    server closes. read_chunk() returns b"" at the end."""

    def __init__(self, conn: _Connection, request: HttpRequest, status: int,
                 headers: dict[str, str], keep_alive: bool):
        self._conn = conn
        self._timeout = request.read_timeout
        self._keep_alive = keep_alive
        self._chunk_left = 0
        self._length: Optional[int] = None
        self._done = False
        if request.method == "HEAD" or status in (204, 304):
            self._mode = "none"
        elif "chunked" in headers.get("transfer-encoding", ""):
            self._mode = "chunked"
        elif "content-length" in headers:
            self._mode = "length"
            try:
                self._length = int(headers["content-length"])
            except ValueError:
                raise ProtocolError(f"bad Content-Length {headers['content-length']!r}") from None
        else:
            self._mode = "close"
            self._keep_alive = False
        if self._mode == "none" or self._length == 0:
            self._finish()

    def _finish(self) -> None:
        self._done = True
        self._conn.reusable = self._keep_alive

    async def _read(self, n: int) -> bytes:
        return await asyncio.wait_for(self._conn.reader.read(n), self._timeout)

    async def _exactly(self, n: int) -> bytes:
        return await asyncio.wait_for(self._conn.reader.readexactly(n), self._timeout)

    async def read_chunk(self) -> bytes:
        if self._done:
            return b""
        if self._mode == "length":
            assert self._length is not None
            data = await self._read(min(self._length, READ_SIZE))
            if not data:
                raise ProtocolError("the connection closed before the body's end")
            self._length -= len(data)
            if self._length == 0:
                self._finish()
            return data
        if self._mode == "close":
            data = await self._read(READ_SIZE)
            if not data:
                self._finish()
            return data
        return await self._read_chunked()

    async def _read_chunked(self) -> bytes:
        if self._chunk_left == 0:
            size_line = await self._conn._line(self._timeout)
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size line {size_line[:40]!r}") from None
            if size == 0:
                while await self._conn._line(self._timeout):  # trailers, then the empty line
                    pass
                self._finish()
                return b""
            self._chunk_left = size
        data = await self._read(min(self._chunk_left, READ_SIZE))
        if not data:
            raise ProtocolError("the connection closed inside a chunk")
        self._chunk_left -= len(data)
        if self._chunk_left == 0:
            await self._exactly(2)  # the CRLF after the chunk's data
        return data

    async def read_all(self) -> bytes:
        parts = []
        while chunk := await self.read_chunk():
            parts.append(chunk)
        return b"".join(parts)


# Failures of a connection: a socket error, a timeout, the peer closing mid-answer, a bad answer.
_FAILURES = (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
             asyncio.LimitOverrunError, ProtocolError)


class _Stream:
    """An answer read as it comes (OpenStream): its connection is closed with it."""

    def __init__(self, conn: _Connection, status: int, headers: dict[str, str], body: _Body):
        self._conn = conn
        self.status = status
        self.headers = headers
        self._body = body

    async def read_chunk(self) -> bytes:
        try:
            return await self._body.read_chunk()
        except _FAILURES as e:
            self.close()
            raise Sent(e) from e

    async def read_all(self) -> bytes:
        try:
            return await self._body.read_all()
        except _FAILURES as e:
            self.close()
            raise Sent(e) from e

    def close(self) -> None:
        self._conn.close()


class _Transport:
    """asyncio I/O: a pool of kept-alive connections per server, a new one per stream."""

    def __init__(self, client: "AsyncClient"):
        self._client = client
        self._idle: dict[str, list[_Connection]] = {}

    async def _connect(self, request: HttpRequest) -> _Connection:
        try:
            return await _Connection.open(request.base_url, request.timeout,
                                          self._client.ssl_context)
        except (OSError, asyncio.TimeoutError, ssl.SSLError) as e:
            raise NotSent(e) from e

    def _release(self, conn: _Connection) -> None:
        idle = self._idle.setdefault(conn.base_url, [])
        if conn.reusable and len(idle) < MAX_IDLE_CONNECTIONS:
            idle.append(conn)
        else:
            conn.close()

    def _idle_connection(self, base_url: str) -> Optional[_Connection]:
        """A kept-alive connection to the server, skipping those it closed while idle."""
        idle = self._idle.get(base_url, [])
        while idle:
            conn = idle.pop()
            if not (conn.reader.at_eof() or conn.writer.is_closing()):
                return conn
            conn.close()
        return None

    async def exchange(self, request: HttpRequest) -> HttpResponse:
        conn = self._idle_connection(request.base_url)
        reused = conn is not None
        if conn is None:
            conn = await self._connect(request)
        try:
            await conn.send(request)
        except _FAILURES as e:
            conn.close()
            raise NotSent(e, stale=reused) from e
        try:
            status, headers, body = await conn.read_head(request)
        except _FAILURES as e:
            conn.close()
            # EOF before any byte of an answer on a reused connection: the server had closed it.
            nothing = isinstance(e, asyncio.IncompleteReadError) and not e.partial
            raise Sent(e, stale=reused and nothing) from e
        try:
            data = await body.read_all()
        except _FAILURES as e:
            conn.close()
            raise Sent(e) from e
        self._release(conn)
        return HttpResponse(status, headers, data)

    async def open_stream(self, request: HttpRequest) -> _Stream:
        conn = await self._connect(request)
        try:
            await conn.send(request)
        except _FAILURES as e:
            conn.close()
            raise NotSent(e) from e
        try:
            status, headers, body = await conn.read_head(request)
        except _FAILURES as e:
            conn.close()
            raise Sent(e) from e
        return _Stream(conn, status, headers, body)

    async def sleep(self, seconds: float) -> None:
        await self._client._sleep(seconds)

    async def close(self) -> None:
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
                try:
                    await conn.writer.wait_closed()
                except OSError:
                    pass  # closing a connection the peer reset: it is closed either way


class AsyncClient(Api):
    """Client's asyncio twin: the same parameters, groups and methods (see Client), each
    returning a coroutine, or an async iterator for lists and streams. Use it within one event
    loop; concurrent calls on it are fine (each takes a connection of the pool)."""

    _sleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)  # tests replace it

    def _new_transport(self) -> _Transport:
        return _Transport(self)

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # ---- the driver ------------------------------------------------------------------------------
    async def _steps(self, flow: Flow, result: list) -> AsyncIterator[Any]:
        """Performs the flow's steps with asyncio, yielding what it emits; appends its value
        to `result` (an async generator returns none)."""
        driver = FlowDriver(flow)
        try:
            while (step := driver.next_step()) is not None:
                if isinstance(step, Emit):
                    yield step.value
                    continue
                try:
                    driver.value = await step.perform(self._transport)
                except TransportError as e:
                    driver.failure = e
        finally:
            flow.close()
        result.append(driver.result)

    async def _result(self, flow: Flow) -> Any:
        result: list = []
        steps = self._steps(flow, result)
        async for item in steps:
            await steps.aclose()
            raise TypeError(f"a flow run for its value emitted an item: {item!r}")
        return result[0]

    def _run(self, flow: Flow) -> Awaitable[Any]:
        return self._result(flow)

    def _iterate(self, flow: Flow) -> AsyncIterator[Any]:
        return self._steps(flow, [])
