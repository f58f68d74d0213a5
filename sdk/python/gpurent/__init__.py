"""gpurent: a typed Python SDK of the gpurent GPU rental platform (standard library only)."""
from . import models
from .client import Client, Instances
from .config import Settings, resolve_settings
from .errors import (ApiError, BadRequest, ConfigError, Conflict, ConnectionFailed, Forbidden,
                     GpurentError, MethodNotAllowed, NotFound, PayloadTooLarge, PaymentRequired,
                     RateLimited, ServerError, Unauthorized, UnexpectedState, Unprocessable,
                     WaitTimeout)

__version__ = "0.1.0"
__all__ = [
    "ApiError", "BadRequest", "Client", "ConfigError", "Conflict", "ConnectionFailed",
    "Forbidden", "GpurentError", "Instances", "MethodNotAllowed", "NotFound", "PayloadTooLarge",
    "PaymentRequired", "RateLimited", "ServerError", "Settings", "Unauthorized",
    "UnexpectedState", "Unprocessable", "WaitTimeout", "models", "resolve_settings",
]
