"""Exceptions of the gpurent SDK.

Every error answer of the API is application/problem+json
(`{"type", "title", "status", "code", "detail"}`, docs/api.md); the client raises it as an
ApiError subclass chosen by the status, so callers can write `except NotFound:` and still read the
stable `code` (e.g. "instance_not_found").
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Optional


class GpurentError(Exception):
    """Base class of everything the SDK raises."""


class ConfigError(GpurentError):
    """The config file is unreadable or malformed (the CLI's "invalid_config")."""


class ConnectionFailed(GpurentError):
    """No answer came from the server (refused, reset, timed out, TLS failure), after retries."""

    def __init__(self, message: str, url: str = "", cause: Optional[BaseException] = None):
        super().__init__(message)
        self.url = url
        self.cause = cause


class WaitTimeout(GpurentError, TimeoutError):
    """wait_until() ran out of time; `last` is the last object seen."""

    def __init__(self, message: str, last: Any = None):
        super().__init__(message)
        self.last = last


class UnexpectedState(GpurentError):
    """wait_until() saw a state from which the wanted one cannot come (e.g. failed)."""

    def __init__(self, message: str, last: Any = None):
        super().__init__(message)
        self.last = last


class ApiError(GpurentError):
    """An error answer of the API (4xx/5xx)."""

    def __init__(self, status: int, code: str = "", title: str = "", detail: str = "",
                 type: str = "", body: Any = None, headers: Optional[Mapping[str, str]] = None,
                 method: str = "", url: str = ""):
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.type = type
        self.body = body  # the parsed problem (dict), or the raw text if it was not JSON
        self.headers = dict(headers or {})
        self.method = method
        self.url = url
        where = f" ({method} {url})" if method else ""
        super().__init__(f"{status} {code or title}: {detail}{where}".strip())


class BadRequest(ApiError):
    """400: malformed_json, invalid_field, unknown_field, invalid_query, ..."""


class Unauthorized(ApiError):
    """401: unauthenticated, invalid_session, ..."""


class PaymentRequired(ApiError):
    """402: insufficient_balance, insufficient_funds."""


class Forbidden(ApiError):
    """403: forbidden, cross_origin."""


class NotFound(ApiError):
    """404: instance_not_found, job_not_found, route_not_found, ..."""


class MethodNotAllowed(ApiError):
    """405: method_not_allowed."""


class Conflict(ApiError):
    """409: invalid_state, ambiguous_name, insufficient_capacity, idempotency_key_reused, ..."""


class PayloadTooLarge(ApiError):
    """413: payload_too_large."""


class Unprocessable(ApiError):
    """422: unknown_gpu_type, never_fits, reservation_required, ..."""


class RateLimited(ApiError):
    """429: rate_limited; `retry_after` is the server's Retry-After in seconds (or None)."""

    def __init__(self, *args: Any, retry_after: Optional[float] = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: upstream_unavailable, upstream_failed, node_unreachable, no_leader, ..."""

    def __init__(self, *args: Any, retry_after: Optional[float] = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


_BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    402: PaymentRequired,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    422: Unprocessable,
    429: RateLimited,
}


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds: delta-seconds or an HTTP date; None if absent or unparseable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import email.utils
        import time
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def error_from_response(status: int, body: bytes, headers: Optional[Mapping[str, str]] = None,
                        method: str = "", url: str = "") -> ApiError:
    """The exception for an error answer: its class by status, its fields from problem+json
    (a body that is not problem+json still gives the right class, with the text as detail)."""
    headers = dict(headers or {})
    text = body.decode("utf-8", errors="replace") if body else ""
    parsed: Any = text
    code = title = detail = type_ = ""
    try:
        problem = json.loads(text) if text else None
    except ValueError:
        problem = None
    if isinstance(problem, dict):
        parsed = problem
        code = str(problem.get("code") or "")
        title = str(problem.get("title") or "")
        detail = str(problem.get("detail") or "")
        type_ = str(problem.get("type") or "")
    else:
        detail = text.strip()[:500]
    if 500 <= status <= 599:
        cls: type = ServerError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    kwargs: dict[str, Any] = dict(code=code, title=title, detail=detail, type=type_, body=parsed,
                                  headers=headers, method=method, url=url)
    if cls in (RateLimited, ServerError):
        lower = {k.lower(): v for k, v in headers.items()}
        kwargs["retry_after"] = parse_retry_after(lower.get("retry-after"))
    return cls(status, **kwargs)
