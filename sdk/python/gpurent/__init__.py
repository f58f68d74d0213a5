"""gpurent: a typed Python SDK of the gpurent GPU rental platform (standard library only).

Client (blocking) and AsyncClient (asyncio) have the same route groups and methods
(gpurent.api); gpurent.models holds the dataclasses generated from docs/openapi.json.
"""
from . import models
from .aio import AsyncClient
from .api import INSTANCE_FINAL_STATES, JOB_FINAL_STATES, Instances
from ._core import RequestInfo
from .client import Client
from .config import Settings, resolve_settings
from .errors import (ApiError, BadRequest, ConfigError, Conflict, ConnectionFailed, Forbidden,
                     GpurentError, MethodNotAllowed, NotFound, PayloadTooLarge, PaymentRequired,
                     RateLimited, ServerError, Unauthorized, UnexpectedState, Unprocessable,
                     WaitTimeout)
from .types import ExecResult

__version__ = "0.1.0"
__all__ = [
    "ApiError", "AsyncClient", "BadRequest", "Client", "ConfigError", "Conflict",
    "ConnectionFailed", "ExecResult", "Forbidden", "GpurentError",
    "INSTANCE_FINAL_STATES", "Instances", "JOB_FINAL_STATES", "MethodNotAllowed", "NotFound",
    "PayloadTooLarge", "PaymentRequired", "RateLimited", "RequestInfo", "ServerError",
    "Settings", "Unauthorized", "UnexpectedState", "Unprocessable",
    "WaitTimeout", "models", "resolve_settings",
]
