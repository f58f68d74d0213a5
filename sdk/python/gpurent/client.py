"""The synchronous client of the gpurent REST API (docs/api.md), standard library only.

    from gpurent import Client
    c = Client()                       # URL and key as the CLI finds them (gpurent.config)
    inst = c.instances.create(gpu_type="h100-80g", command=["python", "train.py"])
    c.wait_until(inst.id, "running", timeout=300)
    for line in c.instances.stream_logs(inst.id):
        print(line, end="")

A Client keeps one keep-alive connection and is not thread-safe: use one per thread.
"""
from __future__ import annotations

import http.client
import json
import random
import socket
import ssl
import time
import urllib.parse
import uuid
from dataclasses import fields as dataclass_fields
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, TypeVar, Union

from . import models
from .config import resolve_settings
from .errors import (ApiError, ConnectionFailed, RateLimited, ServerError, UnexpectedState,
                     WaitTimeout, error_from_response)

__all__ = ["Client", "Instances", "DEFAULT_RETRIES"]

DEFAULT_RETRIES = 4
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# A Retry-After longer than this is not waited out: the error is raised for the caller to decide.
MAX_RETRY_AFTER_S = 120.0
USER_AGENT = "gpurent-python/0.1.0"

T = TypeVar("T")


class _Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: str) -> Optional[str]:
        name = name.lower()
        for k, v in self.headers.items():
            if k.lower() == name:
                return v
        return None


class _Sent(Exception):
    """A failure after the request may have reached the server (wraps the cause)."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class Client:
    """url: one base URL, or several separated by commas (servers of one platform: a connection
    failure or a 503 no_leader/not_leader moves on to the next). api_key: a gpr_... key.
    Both default to the environment and then the CLI's config file. timeout: seconds per socket
    operation. retries: how many times a failed request is sent again (0: never).
    backoff: the base of the exponential backoff in seconds (full jitter), capped by max_backoff.
    """

    def __init__(self, url: Optional[str] = None, api_key: Optional[str] = None,
                 timeout: float = 30.0, retries: int = DEFAULT_RETRIES, backoff: float = 0.5,
                 max_backoff: float = 30.0, ssl_context: Optional[ssl.SSLContext] = None,
                 user_agent: str = USER_AGENT):
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
        self._current = 0  # index into self.urls
        self._conn: Optional[http.client.HTTPConnection] = None
        self._conn_url: Optional[str] = None
        self._sleep: Callable[[float], None] = time.sleep  # tests replace it
        self.instances = Instances(self)

    @property
    def url(self) -> str:
        return self.urls[self._current]

    # ---- connections -------------------------------------------------------------------------
    def _new_connection(self, base: str, timeout: Optional[float]) -> http.client.HTTPConnection:
        parts = urllib.parse.urlsplit(base)
        if parts.scheme == "https":
            return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                               context=self.ssl_context)
        return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """The kept-alive connection to the current URL, and whether it was used before."""
        if self._conn is not None and self._conn_url == self.url:
            return self._conn, True
        self.close()
        self._conn = self._new_connection(self.url, self.timeout)
        self._conn_url = self.url
        return self._conn, False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._conn_url = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _prefix(self) -> str:
        return urllib.parse.urlsplit(self.url).path.rstrip("/")

    def _headers(self, body: Optional[bytes], extra: Optional[Mapping[str, str]]) -> dict[str, str]:
        headers = {"User-Agent": self.user_agent, "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        if body is not None:
            headers["Content-Type"] = "application/json"
        headers.update(extra or {})
        return headers

    def _send_once(self, method: str, target: str, body: Optional[bytes],
                   headers: dict[str, str]) -> _Response:
        """One exchange on the kept-alive connection. Raises OSError/HTTPException when nothing
        was sent, _Sent when the request may have reached the server."""
        conn, reused = self._connection()
        try:
            conn.request(method, target, body=body, headers=headers)
        except (OSError, http.client.HTTPException) as e:
            self.close()
            if reused and isinstance(e, (BrokenPipeError, ConnectionResetError)):
                # The server closed the idle kept-alive connection: nothing reached it.
                conn, _ = self._connection()
                conn.request(method, target, body=body, headers=headers)
            else:
                raise
        try:
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            self.close()
            if reused and isinstance(e, http.client.RemoteDisconnected) and method in IDEMPOTENT_METHODS:
                # A stale kept-alive connection closed as we sent: send it once more, afresh.
                return self._send_once(method, target, body, headers)
            raise _Sent(e) from e
        if resp.will_close:
            self.close()
        return _Response(resp.status, dict(resp.getheaders()), data)

    def _delay(self, attempt: int, retry_after: Optional[float]) -> float:
        jittered = random.uniform(0, min(self.max_backoff, self.backoff * (2 ** attempt)))
        if retry_after is not None:
            return retry_after + jittered * 0.1
        return jittered

    # ---- the generic request ------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None,
                query: Optional[Mapping[str, Any]] = None,
                headers: Optional[Mapping[str, str]] = None,
                idempotency_key: Union[str, bool, None] = None) -> Any:
        """Sends a request and returns the decoded answer: JSON as dicts/lists, text/plain as
        str, None for an empty body. Raises an ApiError subclass for 4xx/5xx and ConnectionFailed
        when no answer came.

        body: a JSON-able value or a generated model (sent as its to_dict()). query: None values
        are left out, booleans sent as true/false. idempotency_key: None gives a POST a fresh
        uuid4 Idempotency-Key (so a retry can never do it twice), False sends none, a str is sent
        as it is.

        Retries (up to `retries`, exponential backoff with jitter): a connection that failed
        before anything was sent; one that failed after, only for idempotent methods or requests
        carrying an Idempotency-Key; answers 429, 503 and 502 upstream_unavailable (which did not
        reach the API), waiting at least their Retry-After; other 502s only when safe to repeat.
        """
        method = method.upper()
        response = self._request(method, path, body, query, headers, idempotency_key)
        if not response.body:
            return None
        ctype = (response.header("Content-Type") or "").split(";")[0].strip().lower()
        if ctype.endswith("json"):
            return json.loads(response.body)
        return response.body.decode("utf-8", errors="replace")

    def _target(self, path: str, query: Optional[Mapping[str, Any]]) -> str:
        if not path.startswith("/"):
            path = "/" + path
        target = self._prefix() + path
        if query:
            pairs = []
            for k, v in query.items():
                if v is None:
                    continue
                if isinstance(v, bool):
                    v = "true" if v else "false"
                pairs.append((k, str(v)))
            if pairs:
                target += ("&" if "?" in target else "?") + urllib.parse.urlencode(pairs)
        return target

    def _request(self, method: str, path: str, body: Any, query: Optional[Mapping[str, Any]],
                 headers: Optional[Mapping[str, str]],
                 idempotency_key: Union[str, bool, None]) -> _Response:
        if hasattr(body, "to_dict"):
            body = body.to_dict()
        data = json.dumps(body).encode() if body is not None else None
        if method == "POST" and data is None:
            data = b"{}"
        extra = dict(headers or {})
        if idempotency_key is None and method == "POST":
            idempotency_key = str(uuid.uuid4())
        if isinstance(idempotency_key, str) and idempotency_key:
            extra["Idempotency-Key"] = idempotency_key
        all_headers = self._headers(data, extra)
        repeatable = method in IDEMPOTENT_METHODS or "Idempotency-Key" in all_headers
        attempt = 0
        while True:
            target = self._target(path, query)
            try:
                response = self._send_once(method, target, data, all_headers)
            except _Sent as e:
                if not repeatable or attempt >= self.retries:
                    raise ConnectionFailed(
                        f"{method} {self.url}{path}: connection lost after sending: {e.cause}",
                        self.url, e.cause) from e.cause
                self._failover()
                self._sleep(self._delay(attempt, None))
                attempt += 1
                continue
            except (OSError, http.client.HTTPException) as e:
                if attempt >= self.retries:
                    raise ConnectionFailed(f"{method} {self.url}{path}: {e}", self.url, e) from e
                self._failover()
                self._sleep(self._delay(attempt, None))
                attempt += 1
                continue
            if response.status < 400:
                return response
            error = error_from_response(response.status, response.body, response.headers,
                                        method, self.url + path)
            if attempt < self.retries and self._should_retry(error, repeatable):
                retry_after = getattr(error, "retry_after", None)
                if retry_after is None or retry_after <= MAX_RETRY_AFTER_S:
                    if error.code in ("no_leader", "not_leader"):
                        self._failover()
                    self._sleep(self._delay(attempt, retry_after))
                    attempt += 1
                    continue
            raise error

    @staticmethod
    def _should_retry(error: ApiError, repeatable: bool) -> bool:
        if isinstance(error, RateLimited) or error.status == 503:
            return True
        if error.status == 502:
            return error.code == "upstream_unavailable" or repeatable
        return False

    def _failover(self) -> None:
        if len(self.urls) > 1:
            self.close()
            self._current = (self._current + 1) % len(self.urls)

    def paginate(self, path: str, model: Optional[Callable[[Any], T]] = None,
                 query: Optional[Mapping[str, Any]] = None, limit: Optional[int] = None
                 ) -> Iterator[T]:
        """Every item of a list route, page by page (`{"items", "next_cursor"}`; `?cursor=`),
        each passed through `model` (e.g. models.Instance.from_dict). limit: the page size."""
        q = dict(query or {})
        if limit is not None:
            q["limit"] = limit
        while True:
            page = self.request("GET", path, query=q)
            for item in page.get("items", []):
                yield model(item) if model else item
            cursor = page.get("next_cursor")
            if not cursor:
                return
            q["cursor"] = cursor

    # ---- typed routes -------------------------------------------------------------------------
    def whoami(self) -> models.Whoami:
        return models.Whoami.from_dict(self.request("GET", "/v1/whoami"))

    def balance(self, tenant: Optional[str] = None) -> models.Balance:
        return models.Balance.from_dict(
            self.request("GET", "/v1/billing/balance", query={"tenant": tenant}))

    def offers(self) -> list[models.Offer]:
        return list(self.paginate("/v1/offers", models.Offer.from_dict))

    def estimate(self, spec: Optional[models.InstanceCreate] = None, **fields: Any
                 ) -> models.Estimate:
        """The hourly price of a launch (the body of POST /v1/instances); creates nothing."""
        body = _launch_body(spec, fields)
        return models.Estimate.from_dict(
            self.request("POST", "/v1/estimate", body=body, idempotency_key=False))

    def wait_until(self, instance_id: str, state: Union[str, Iterable[str]],
                   timeout: float = 300.0, poll: float = 0.5) -> models.Instance:
        return self.instances.wait_until(instance_id, state, timeout, poll)

    def health(self) -> Any:
        return self.request("GET", "/healthz")


def _launch_body(spec: Optional[Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    if spec is not None and fields:
        raise TypeError("give a models.InstanceCreate or keyword fields, not both")
    if spec is None:
        known = {f.name for f in dataclass_fields(models.InstanceCreate)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise TypeError(f"unknown InstanceCreate field(s): {', '.join(unknown)}")
        spec = models.InstanceCreate(**fields)
    return spec.to_dict() if hasattr(spec, "to_dict") else dict(spec)


# States an instance does not leave on its own.
_FINAL_STATES = frozenset({"failed", "terminated", "preempted", "stopped"})


class Instances:
    """/v1/instances: launch, list, get, stop, start, delete, logs."""

    def __init__(self, client: Client):
        self._c = client

    def create(self, spec: Optional[models.InstanceCreate] = None,
               idempotency_key: Optional[str] = None, **fields: Any) -> models.Instance:
        """Launches an instance: a models.InstanceCreate, or its fields as keywords
        (gpu_type="h100-80g", command=[...], ...). An Idempotency-Key is sent (a fresh uuid4
        unless given), so a retry after a lost answer returns the same instance."""
        body = _launch_body(spec, fields)
        return models.Instance.from_dict(self._c.request(
            "POST", "/v1/instances", body=body, idempotency_key=idempotency_key))

    def list(self, state: Optional[str] = None, tenant: Optional[str] = None,
             job: Optional[str] = None, limit: Optional[int] = None) -> Iterator[models.Instance]:
        """Every instance of the caller (a lazy iterator over all pages; limit = page size)."""
        return self._c.paginate("/v1/instances", models.Instance.from_dict,
                                {"state": state, "tenant": tenant, "job": job}, limit)

    def list_page(self, cursor: Optional[str] = None, limit: Optional[int] = None,
                  state: Optional[str] = None) -> models.InstanceList:
        return models.InstanceList.from_dict(self._c.request(
            "GET", "/v1/instances", query={"cursor": cursor, "limit": limit, "state": state}))

    def get(self, instance_id: str) -> models.Instance:
        return models.Instance.from_dict(self._c.request("GET", _path(instance_id)))

    def stop(self, instance_id: str) -> models.Instance:
        return models.Instance.from_dict(
            self._c.request("POST", _path(instance_id, "stop"), idempotency_key=False))

    def start(self, instance_id: str) -> models.Instance:
        return models.Instance.from_dict(
            self._c.request("POST", _path(instance_id, "start"), idempotency_key=False))

    def delete(self, instance_id: str) -> models.Instance:
        return models.Instance.from_dict(self._c.request("DELETE", _path(instance_id)))

    def logs(self, instance_id: str) -> str:
        """stdout+stderr of all runs so far."""
        text = self._c.request("GET", _path(instance_id, "logs"))
        return text or ""

    def stream_logs(self, instance_id: str, read_timeout: Optional[float] = None
                    ) -> Iterator[str]:
        """Yields the log line by line (`?follow=true`): what is there, then what comes, until
        the instance ends. Uses a connection of its own; read_timeout: the longest quiet spell
        allowed (None: no limit)."""
        c = self._c
        conn = c._new_connection(c.url, c.timeout)
        try:
            target = c._target(_path(instance_id, "logs"), {"follow": True})
            try:
                conn.request("GET", target, headers=c._headers(None, {"Accept": "text/plain"}))
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                raise ConnectionFailed(f"GET {c.url}{target}: {e}", c.url, e) from e
            if resp.status >= 400:
                raise error_from_response(resp.status, resp.read(), dict(resp.getheaders()),
                                          "GET", c.url + target)
            if conn.sock is not None:
                conn.sock.settimeout(read_timeout)
            pending = b""
            while True:
                try:
                    chunk = resp.read1(65536)
                except (OSError, http.client.HTTPException) as e:
                    raise ConnectionFailed(f"log stream of {instance_id} cut off: {e}",
                                           c.url, e) from e
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", errors="replace") + "\n"
            if pending:
                yield pending.decode("utf-8", errors="replace")
        finally:
            conn.close()

    def wait_until(self, instance_id: str, state: Union[str, Iterable[str]],
                   timeout: float = 300.0, poll: float = 0.5) -> models.Instance:
        """Polls until the instance is in `state` (or one of several) and returns it. Raises
        UnexpectedState when it settles in another final state (failed, terminated, preempted,
        stopped) and WaitTimeout after `timeout` seconds."""
        wanted = {state} if isinstance(state, str) else set(state)
        deadline = time.monotonic() + timeout
        last: Optional[models.Instance] = None
        while True:
            last = self.get(instance_id)
            if last.state in wanted:
                return last
            if last.state in _FINAL_STATES and not last.start_requested:
                raise UnexpectedState(
                    f"instance {instance_id} is {last.state}"
                    + (f" ({last.reason})" if last.reason else "")
                    + f", not {'/'.join(sorted(wanted))}", last)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(f"instance {instance_id} still {last.state} after {timeout}s, "
                                  f"not {'/'.join(sorted(wanted))}", last)
            self._c._sleep(min(poll, remaining))


def _path(instance_id: str, action: Optional[str] = None) -> str:
    path = "/v1/instances/" + urllib.parse.quote(instance_id, safe="")
    return path + "/" + action if action else path
