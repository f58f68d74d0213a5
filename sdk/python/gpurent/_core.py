"""What Client and AsyncClient share: every request described as data, and every multi-step
operation (retries, pagination, log streams, waiting, uploads) written once as a *flow*.

A flow is a generator that does no I/O itself. It yields steps (an HTTP exchange, opening a
stream, reading a chunk, sleeping, emitting an item) and gets each step's result sent back, or the
transport's failure thrown in. Client drives flows with blocking sockets, AsyncClient with asyncio;
the logic (when to retry and how long to wait, what a page is, when a wait is over) exists once.

    def wait(self, instance_id):                  # a flow
        while True:
            inst = yield from self._call_flow(get_call(instance_id))
            if inst.state == "running":
                return inst
            yield Sleep(0.5)

Client._run(flow) returns its value; AsyncClient._run(flow) returns a coroutine of it. _iterate
gives an iterator (or async iterator) of what the flow emits.
"""
from __future__ import annotations

import json
import random
import ssl
import urllib.parse
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generator, Mapping, Optional, Union

from .config import resolve_settings
from .errors import ApiError, ConnectionFailed, RateLimited, error_from_response

DEFAULT_RETRIES = 4
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# A Retry-After longer than this is not waited out: the error is raised for the caller to decide.
MAX_RETRY_AFTER_S = 120.0
USER_AGENT = "gpurent-python/0.1.0"
# Codes of answers that did not reach the API (a standby, a proxy): safe to send again anywhere.
UNREACHED_CODES = frozenset({"no_leader", "not_leader", "upstream_unavailable"})
LEADER_CODES = frozenset({"no_leader", "not_leader"})

Flow = Generator[Any, Any, Any]


class _ClientTimeout:
    def __repr__(self) -> str:
        return "CLIENT_TIMEOUT"


# Call.timeout's default: the client's own timeout (None there means no limit at all).
CLIENT_TIMEOUT: Any = _ClientTimeout()


# ---- requests as data --------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One API request, described: what the route groups build and a client sends.

    route: the path template as docs/openapi.json writes it ("/v1/instances/{id}"), filled from
    `params` (each value percent-encoded as one segment). body: a JSON value or a generated model;
    data: raw bytes instead (sent as `content_type`). idempotency_key: None gives a POST a fresh
    uuid4, False sends none, a str is sent as it is. decode: applied to the decoded answer (e.g.
    models.Instance.from_dict). timeout: seconds to wait for each read of the answer's body
    (CLIENT_TIMEOUT: the client's; None: no limit); streams use it as the longest quiet spell
    allowed. repeatable: sending it twice
    does no more than once, so it may be sent again after a connection failed mid-request (GET,
    PUT, DELETE and requests with an Idempotency-Key are anyway).
    """

    method: str
    route: str
    params: Mapping[str, Any] = field(default_factory=dict)
    query: Optional[Mapping[str, Any]] = None
    body: Any = None
    data: Optional[bytes] = None
    content_type: str = "application/json"
    headers: Optional[Mapping[str, str]] = None
    idempotency_key: Union[str, bool, None] = None
    decode: Optional[Callable[[Any], Any]] = None
    accept: str = "application/json"
    timeout: Any = CLIENT_TIMEOUT  # Optional[float] or CLIENT_TIMEOUT
    repeatable: bool = False
    templated: bool = True  # False for Client.request(path): the route is a literal path

    @property
    def path(self) -> str:
        path = self.route
        if not path.startswith("/"):
            path = "/" + path
        if self.templated and self.params:
            path = path.format(**{k: urllib.parse.quote(str(v), safe="")
                                  for k, v in self.params.items()})
        return path


@dataclass(frozen=True)
class HttpRequest:
    """A request ready for the wire: the transports send exactly this."""

    method: str
    base_url: str       # scheme://host:port[/prefix] of the server it goes to
    target: str         # the request target: prefix + path + query
    headers: dict[str, str]
    body: Optional[bytes]
    timeout: Optional[float]       # connecting and waiting for the answer's head
    read_timeout: Optional[float]  # each read of the body (None: no limit)


class HttpResponse:
    """A whole answer (the body read to its end)."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes):
        self.status = status
        self.headers = dict(headers)
        self.body = body

    def header(self, name: str) -> Optional[str]:
        return header(self.headers, name)


def header(headers: Mapping[str, str], name: str) -> Optional[str]:
    name = name.lower()
    for k, v in headers.items():
        if k.lower() == name:
            return v
    return None


@dataclass(frozen=True)
class RequestInfo:
    """What a client's `on_request` hook is told after every HTTP exchange (each retry too).

    route: the path template of a typed method's route (None for Client.request()); path: what
    was sent, without the query; status: the answer's status, None when none came (then `error`
    says why); attempt: 0 for the first try."""

    method: str
    route: Optional[str]
    path: str
    status: Optional[int]
    attempt: int
    error: Optional[BaseException] = None


# ---- what transports raise -----------------------------------------------------------------------
class TransportError(Exception):
    """A failed exchange (raised by transports into flows, never out of the SDK).

    stale: it happened on a kept-alive connection the server had already closed (before any byte
    of an answer), which says nothing about the server: trying again at once is right."""

    sent = False

    def __init__(self, cause: BaseException, stale: bool = False):
        super().__init__(str(cause) or type(cause).__name__)
        self.cause = cause
        self.stale = stale


class NotSent(TransportError):
    """Nothing reached the server (refused, no route, TLS failure, write on a closed connection)."""


class Sent(TransportError):
    """The request may have reached the server, but no (whole) answer came."""

    sent = True


# ---- steps a flow yields ------------------------------------------------------------------------
# Each step's perform(transport) does the I/O: its result, or for AsyncClient an awaitable of it.
@dataclass(frozen=True)
class Exchange:
    request: HttpRequest

    def perform(self, transport: Any) -> Any:
        return transport.exchange(self.request)


@dataclass(frozen=True)
class OpenStream:
    """Sends the request on a connection of its own; the result has status, headers,
    read_chunk() (b"" at the end), read_all() and close()."""

    request: HttpRequest

    def perform(self, transport: Any) -> Any:
        return transport.open_stream(self.request)


@dataclass(frozen=True)
class ReadChunk:
    stream: Any

    def perform(self, transport: Any) -> Any:
        return self.stream.read_chunk()


@dataclass(frozen=True)
class ReadAll:
    stream: Any

    def perform(self, transport: Any) -> Any:
        return self.stream.read_all()


@dataclass(frozen=True)
class Sleep:
    seconds: float

    def perform(self, transport: Any) -> Any:
        return transport.sleep(self.seconds)


@dataclass(frozen=True)
class Emit:
    """An item for the caller of an iterating flow (handled by the driver, not the transport)."""

    value: Any


class FlowDriver:
    """Advances a flow: next_step() sends it the last step's result (or throws in the last
    step's TransportError) and returns its next step, None once it has returned (its value is
    then in `result`). The clients' drivers loop over it, performing each step their way."""

    def __init__(self, flow: Flow):
        self.flow = flow
        self.value: Any = None
        self.failure: Optional[TransportError] = None
        self.result: Any = None

    def next_step(self) -> Any:
        try:
            if self.failure is not None:
                step = self.flow.throw(self.failure)
            else:
                step = self.flow.send(self.value)
        except StopIteration as stop:
            self.result = stop.value
            return None
        self.value, self.failure = None, None
        return step


# ---- answers -------------------------------------------------------------------------------------
def decode_body(headers: Mapping[str, str], body: bytes) -> Any:
    """JSON as dicts/lists, NDJSON as a list of values, other types as str, None when empty."""
    if not body:
        return None
    ctype = (header(headers, "Content-Type") or "").split(";")[0].strip().lower()
    if ctype == "application/x-ndjson":
        return [json.loads(line) for line in body.splitlines() if line.strip()]
    if ctype.endswith("json"):
        return json.loads(body)
    return body.decode("utf-8", errors="replace")


class LineSplitter:
    """Cuts a byte stream into text lines (each with its "\\n"; the last may lack it)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[str]:
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        return [line.decode("utf-8", errors="replace") + "\n" for line in lines]

    def end(self) -> list[str]:
        rest, self._pending = self._pending, b""
        return [rest.decode("utf-8", errors="replace")] if rest else []


# ---- the client both share -----------------------------------------------------------------------
class BaseClient:
    """Configuration, failover, request preparation and the flows. api.Api adds the routes,
    Client and AsyncClient a transport and a driver (_run, _iterate). See Client for the
    parameters."""

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None,
                 timeout: float = 30.0, retries: int = DEFAULT_RETRIES, backoff: float = 0.5,
                 max_backoff: float = 30.0, ssl_context: Optional[ssl.SSLContext] = None,
                 user_agent: str = USER_AGENT,
                 on_request: Optional[Callable[[RequestInfo], None]] = None):
        settings = resolve_settings(url, api_key)
        self.urls = [u.strip().rstrip("/") for u in settings.url.split(",") if u.strip()]
        if not self.urls:
            raise ValueError("no server URL")
        for u in self.urls:
            if urllib.parse.urlsplit(u).scheme not in ("http", "https"):
                raise ValueError(f"unsupported URL {u!r}: http:// or https:// only")
        self.api_key = settings.api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.ssl_context = ssl_context
        self.user_agent = user_agent
        self.on_request = on_request
        self._current = 0  # index into self.urls
        self._transport = self._new_transport()

    def _new_transport(self) -> Any:
        """The I/O: exchange(), open_stream(), sleep() (blocking, or coroutines)."""
        raise NotImplementedError

    @property
    def url(self) -> str:
        return self.urls[self._current]

    def _failover(self) -> None:
        """Moves on to the next URL (servers of one platform), if there are several."""
        if len(self.urls) > 1:
            self._current = (self._current + 1) % len(self.urls)

    # ---- preparing requests ----------------------------------------------------------------------
    def _target(self, path: str, query: Optional[Mapping[str, Any]]) -> str:
        target = urllib.parse.urlsplit(self.url).path.rstrip("/") + path
        pairs = []
        for k, v in (query or {}).items():
            if v is None:
                continue
            if isinstance(v, bool):
                v = "true" if v else "false"
            pairs.append((k, str(v)))
        if pairs:
            target += ("&" if "?" in target else "?") + urllib.parse.urlencode(pairs)
        return target

    def _payload(self, call: Call) -> tuple[Optional[bytes], dict[str, str]]:
        """The body's bytes and the headers of every attempt (one Idempotency-Key for all)."""
        headers = {"User-Agent": self.user_agent, "Accept": call.accept}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        if call.data is not None:
            data: Optional[bytes] = call.data
        elif call.body is not None:
            body = call.body.to_dict() if hasattr(call.body, "to_dict") else call.body
            data = json.dumps(body).encode()
        elif call.method == "POST":
            data = b"{}"
        else:
            data = None
        if data is not None:
            headers["Content-Type"] = call.content_type
        key = call.idempotency_key
        if key is None and call.method == "POST":
            key = str(uuid.uuid4())
        if isinstance(key, str) and key:
            headers["Idempotency-Key"] = key
        headers.update(call.headers or {})
        return data, headers

    def _http_request(self, call: Call, data: Optional[bytes], headers: dict[str, str]
                      ) -> HttpRequest:
        read_timeout = self.timeout if call.timeout is CLIENT_TIMEOUT else call.timeout
        return HttpRequest(call.method, self.url, self._target(call.path, call.query), headers,
                           data, self.timeout, read_timeout)

    def _notify(self, call: Call, attempt: int, status: Optional[int],
                error: Optional[BaseException] = None) -> None:
        if self.on_request is not None:
            self.on_request(RequestInfo(call.method, call.route if call.templated else None,
                                        call.path, status, attempt, error))

    # ---- retries ---------------------------------------------------------------------------------
    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        """Exponential backoff with full jitter; at least Retry-After when the server gave one."""
        jittered = random.uniform(0, min(self.max_backoff, self.backoff * (2 ** attempt)))
        if retry_after is not None:
            return retry_after + jittered * 0.1
        return jittered

    def _retry_after_error(self, error: ApiError, attempt: int, repeatable: bool
                           ) -> Optional[float]:
        """How long to wait before sending again after an error answer; None: raise it.
        429 and 503 did nothing; a 502 upstream_unavailable reached no API, other 502s may have
        done the work, so they are repeated only when that is safe."""
        retryable = (isinstance(error, RateLimited) or error.status == 503
                     or (error.status == 502 and (error.code in UNREACHED_CODES or repeatable)))
        if attempt >= self.retries or not retryable:
            return None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None and retry_after > MAX_RETRY_AFTER_S:
            return None
        return self._backoff(attempt, retry_after)

    # ---- flows -----------------------------------------------------------------------------------
    def _exchange_flow(self, call: Call, stream: bool = False) -> Flow:
        """Sends `call` until it is answered with a status below 400, retrying connection
        failures (after the request went out only when `repeatable`: an idempotent method or an
        Idempotency-Key), 429, 503 and the safe 502s with backoff; returns the HttpResponse (with
        stream=True the open stream, its body unread). Error answers raise their ApiError."""
        data, headers = self._payload(call)
        repeatable = (call.repeatable or call.method in IDEMPOTENT_METHODS
                      or "Idempotency-Key" in headers)
        attempt = 0
        stale_retried = False
        while True:
            request = self._http_request(call, data, headers)
            step = OpenStream(request) if stream else Exchange(request)
            try:
                response = yield step
            except TransportError as failure:
                self._notify(call, attempt, None, failure.cause)
                if failure.stale and not stale_retried and (repeatable or not failure.sent):
                    stale_retried = True  # the server had closed the idle connection
                    continue
                if attempt >= self.retries or (failure.sent and not repeatable):
                    what = "connection lost after sending" if failure.sent else "no connection"
                    raise ConnectionFailed(
                        f"{call.method} {self.url}{call.path}: {what}: {failure}",
                        self.url, failure.cause) from failure.cause
                self._failover()
                yield Sleep(self._backoff(attempt, None))
                attempt += 1
                continue
            self._notify(call, attempt, response.status)
            if response.status < 400:
                return response
            body = response.body if not stream else (yield from self._drain(response))
            error = error_from_response(response.status, body, response.headers, call.method,
                                        self.url + call.path)
            delay = self._retry_after_error(error, attempt, repeatable)
            if delay is None:
                raise error
            if error.code in LEADER_CODES:
                self._failover()
            yield Sleep(delay)
            attempt += 1

    def _drain(self, stream: Any) -> Flow:
        """The rest of a stream's body (an error answer's problem), then the stream closed."""
        try:
            return (yield ReadAll(stream))
        except TransportError:
            return b""  # the error answer is raised all the same, without its detail
        finally:
            stream.close()

    def _call_flow(self, call: Call) -> Flow:
        """Sends `call` and returns its decoded answer, passed through call.decode."""
        response = yield from self._exchange_flow(call)
        value = decode_body(response.headers, response.body)
        return call.decode(value) if call.decode else value

    def _pages_flow(self, call: Call, collect: Optional[list] = None) -> Flow:
        """Every item of a list route (`{"items", "next_cursor"}`, `?cursor=`), page by page,
        each through call.decode: emitted one by one, or appended to `collect`."""
        query = dict(call.query or {})
        while True:
            page = yield from self._call_flow(replace(call, query=query, decode=None))
            for item in page.get("items", []):
                item = call.decode(item) if call.decode else item
                if collect is None:
                    yield Emit(item)
                else:
                    collect.append(item)
            cursor = page.get("next_cursor")
            if not cursor:
                return collect
            query["cursor"] = cursor

    def _all_flow(self, call: Call) -> Flow:
        """The items of a list route as one list (every page, should the server ever page it)."""
        return (yield from self._pages_flow(call, collect=[]))

    def _lines_flow(self, call: Call, decode: Callable[[str], Any] = str) -> Flow:
        """Streams a chunked answer line by line, each through `decode`, until it ends."""
        stream = yield from self._exchange_flow(call, stream=True)
        try:
            splitter = LineSplitter()
            while True:
                try:
                    chunk = yield ReadChunk(stream)
                except TransportError as failure:
                    raise ConnectionFailed(f"{call.method} {self.url}{call.path}: stream cut "
                                           f"off: {failure}", self.url, failure.cause) from failure
                if not chunk:
                    break
                for line in splitter.feed(chunk):
                    yield Emit(decode(line))
            for line in splitter.end():
                yield Emit(decode(line))
        finally:
            stream.close()

    # ---- drivers (subclasses) --------------------------------------------------------------------
    def _run(self, flow: Flow) -> Any:
        raise NotImplementedError

    def _iterate(self, flow: Flow) -> Any:
        raise NotImplementedError

    # ---- generic access --------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None,
                query: Optional[Mapping[str, Any]] = None,
                headers: Optional[Mapping[str, str]] = None,
                idempotency_key: Union[str, bool, None] = None) -> Any:
        """Sends a request to any route and returns the decoded answer: JSON as dicts/lists,
        NDJSON as a list, text as str, None for an empty body. Raises an ApiError subclass for
        4xx/5xx and ConnectionFailed when no answer came (after retries).

        body: a JSON-able value or a generated model. query: None values are left out, booleans
        sent as true/false. idempotency_key: None gives a POST a fresh uuid4 Idempotency-Key (so a
        retry of a route that honours it can never do the work twice; the typed methods send one
        only to such routes), False sends none, a str is sent as it is."""
        call = Call(method.upper(), path, query=query, body=body, headers=headers,
                    idempotency_key=idempotency_key, templated=False)
        return self._run(self._call_flow(call))

    def paginate(self, path: str, model: Optional[Callable[[Any], Any]] = None,
                 query: Optional[Mapping[str, Any]] = None, limit: Optional[int] = None) -> Any:
        """Every item of a list route, lazily, page by page (`?cursor=`), each passed through
        `model` (e.g. models.Instance.from_dict). limit: the page size."""
        q = dict(query or {})
        if limit is not None:
            q["limit"] = limit
        call = Call("GET", path, query=q, decode=model, templated=False)
        return self._iterate(self._pages_flow(call))
