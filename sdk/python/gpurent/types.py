"""What the SDK makes of answers beyond their generated models (gpurent.models): a finished exec,
gathered from its frames."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from . import models


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
            if not isinstance(frame, models.ExecFrame):
                frame = models.ExecFrame.from_dict(frame)
            if frame.exit_code is not None:
                exit_code, error = frame.exit_code, frame.error
            elif frame.stream in out:
                out[frame.stream].append(frame.data or "")
        return cls(exit_code, "".join(out["stdout"]), "".join(out["stderr"]), error)
