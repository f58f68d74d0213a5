"""Typed answers that docs/openapi.json describes inline or not at all, so gen_models.py makes
no class of them: exec's output frames, a service's login ticket, an alert's acknowledgement.
Written by hand, with the same from_dict/to_dict shape as the generated models."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional


@dataclass(frozen=True)
class ExecFrame:
    """One line of POST /v1/instances/{id}/exec: output (`stream` "stdout"/"stderr" with its
    `data`), or, last, the command's `exit_code` (with `error` when it was killed)."""

    stream: Optional[str] = None
    data: str = ""
    exit_code: Optional[int] = None
    error: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExecFrame":
        if not isinstance(d, dict):
            raise ValueError(f"ExecFrame: expected a JSON object, got {type(d).__name__}")
        return cls(stream=d.get("stream"), data=d.get("data", ""),
                   exit_code=d.get("exit_code"), error=d.get("error"))

    def to_dict(self) -> dict[str, Any]:
        if self.exit_code is not None:
            out: dict[str, Any] = {"exit_code": self.exit_code}
            if self.error is not None:
                out["error"] = self.error
            return out
        return {"stream": self.stream, "data": self.data}


@dataclass(frozen=True)
class ExecResult:
    """A finished exec: its whole stdout and stderr, and how it ended. exit_code is None when
    the stream ended without an exit status (the node went away)."""

    exit_code: Optional[int]
    stdout: str
    stderr: str
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @classmethod
    def from_frames(cls, frames: Iterable[Any]) -> "ExecResult":
        out: dict[str, list[str]] = {"stdout": [], "stderr": []}
        exit_code = error = None
        for frame in frames:
            if not isinstance(frame, ExecFrame):
                frame = ExecFrame.from_dict(frame)
            if frame.exit_code is not None:
                exit_code, error = frame.exit_code, frame.error
            elif frame.stream in out:
                out[frame.stream].append(frame.data)
        return cls(exit_code, "".join(out["stdout"]), "".join(out["stderr"]), error)


@dataclass(frozen=True)
class ServiceTicket:
    """POST /v1/instances/{id}/services/{service}/ticket: `path` (/i/<id>/<service>/?login=...)
    opened on the server's URL signs a browser in to the service, until `expires_at`."""

    path: str
    expires_at: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ServiceTicket":
        if not isinstance(d, dict) or "path" not in d:
            raise ValueError(f"ServiceTicket: expected an object with a path, got {d!r}")
        return cls(path=d["path"], expires_at=d.get("expires_at"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at
        return out


@dataclass(frozen=True)
class AlertAck:
    """POST /v1/alerts/{id}/ack."""

    id: str
    acknowledged: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertAck":
        if not isinstance(d, dict) or "id" not in d:
            raise ValueError(f"AlertAck: expected an object with an id, got {d!r}")
        return cls(id=d["id"], acknowledged=bool(d.get("acknowledged")))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "acknowledged": self.acknowledged}
