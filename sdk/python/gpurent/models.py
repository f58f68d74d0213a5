"""Typed models of the gpurent API: generated from docs/openapi.json by
sdk/python/gen_models.py. Do not edit; run `python3 sdk/python/gen_models.py` instead.

Each class has from_dict() (unknown keys are ignored, so newer servers keep working; a missing
required key raises ValueError) and to_dict() (optional fields that are None are left out).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional, Union


def _require_object(d: Any, name: str) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{name}: expected a JSON object, got {type(d).__name__}")


def _required(d: dict[str, Any], key: str, name: str) -> Any:
    try:
        return d[key]
    except KeyError:
        raise ValueError(f"{name}: required key {key!r} is missing") from None

InstanceState = Literal["pending", "starting", "running", "stopping", "stopped", "failed", "preempted", "terminated"]
JobState = Literal["queued", "running", "succeeded", "failed", "cancelled", "preempted"]
PricingModel = Literal["on_demand", "spot", "reserved"]
ReservationState = Literal["booked", "active", "ended", "cancelled"]
Role = Literal["admin", "operator", "tenant-admin", "tenant-member", "read-only"]
VolumeState = Literal["available", "deleted"]

@dataclass(frozen=True)
class AgentBenchmarkOutcome:
    "the outcome of the benchmark request the agent last finished, in every report while the desired state still asks for it"

    request: int
    result: Optional[AgentNodeBenchmark] = None
    error: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AgentBenchmarkOutcome":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["request"] = _required(d, "request", cls.__name__)
        if "result" in d:
            v = d["result"]
            kw["result"] = (None if v is None else AgentNodeBenchmark.from_dict(v))
        if "error" in d:
            kw["error"] = d["error"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["request"] = self.request
        if self.result is not None:
            v = self.result
            out["result"] = (None if v is None else v.to_dict())
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class AgentBenchmarkRequest:
    "the GPUs (UUIDs) the agent is asked to measure (docs/node-benchmark.md); the id is the node's generation when it was asked"

    id: int
    gpus: list[str]
    reason: Literal["join", "released", "operator", "idle"]
    asked_at: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AgentBenchmarkRequest":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = list(v)
        kw["reason"] = _required(d, "reason", cls.__name__)
        kw["asked_at"] = _required(d, "asked_at", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        v = self.gpus
        out["gpus"] = list(v)
        out["reason"] = self.reason
        out["asked_at"] = self.asked_at
        return out


@dataclass(frozen=True)
class AgentGpuBenchmark:
    "one GPU's figures in integer units: GFLOPS and MB/s"

    index: int
    uuid: str
    gemm_gflops: dict[str, int]
    memory_mbps: int
    h2d_mbps: int
    d2h_mbps: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AgentGpuBenchmark":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["index"] = _required(d, "index", cls.__name__)
        kw["uuid"] = _required(d, "uuid", cls.__name__)
        v = _required(d, "gemm_gflops", cls.__name__)
        kw["gemm_gflops"] = dict(v)
        kw["memory_mbps"] = _required(d, "memory_mbps", cls.__name__)
        kw["h2d_mbps"] = _required(d, "h2d_mbps", cls.__name__)
        kw["d2h_mbps"] = _required(d, "d2h_mbps", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["index"] = self.index
        out["uuid"] = self.uuid
        v = self.gemm_gflops
        out["gemm_gflops"] = dict(v)
        out["memory_mbps"] = self.memory_mbps
        out["h2d_mbps"] = self.h2d_mbps
        out["d2h_mbps"] = self.d2h_mbps
        return out


@dataclass(frozen=True)
class AgentNodeBenchmark:
    simulated: bool
    gpus: list[AgentGpuBenchmark]
    peers: list[AgentPeerBandwidth]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AgentNodeBenchmark":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["simulated"] = _required(d, "simulated", cls.__name__)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = [AgentGpuBenchmark.from_dict(x0) for x0 in v]
        v = _required(d, "peers", cls.__name__)
        kw["peers"] = [AgentPeerBandwidth.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["simulated"] = self.simulated
        v = self.gpus
        out["gpus"] = [x0.to_dict() for x0 in v]
        v = self.peers
        out["peers"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class AgentPeerBandwidth:
    from_: int
    to: int
    mbps: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AgentPeerBandwidth":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["from_"] = _required(d, "from", cls.__name__)
        kw["to"] = _required(d, "to", cls.__name__)
        kw["mbps"] = _required(d, "mbps", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["from"] = self.from_
        out["to"] = self.to
        out["mbps"] = self.mbps
        return out


@dataclass(frozen=True)
class Alert:
    id: str
    rule: str
    severity: str
    state: Literal["pending", "firing"]
    subject: AlertSubject
    active_since: str
    fired_at: Optional[str]
    acknowledged: bool
    acknowledged_by: Optional[str]
    acknowledged_at: Optional[str]
    auto_stop: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Alert":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["rule"] = _required(d, "rule", cls.__name__)
        kw["severity"] = _required(d, "severity", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        v = _required(d, "subject", cls.__name__)
        kw["subject"] = AlertSubject.from_dict(v)
        kw["active_since"] = _required(d, "active_since", cls.__name__)
        kw["fired_at"] = _required(d, "fired_at", cls.__name__)
        kw["acknowledged"] = _required(d, "acknowledged", cls.__name__)
        kw["acknowledged_by"] = _required(d, "acknowledged_by", cls.__name__)
        kw["acknowledged_at"] = _required(d, "acknowledged_at", cls.__name__)
        kw["auto_stop"] = _required(d, "auto_stop", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["rule"] = self.rule
        out["severity"] = self.severity
        out["state"] = self.state
        v = self.subject
        out["subject"] = v.to_dict()
        out["active_since"] = self.active_since
        out["fired_at"] = self.fired_at
        out["acknowledged"] = self.acknowledged
        out["acknowledged_by"] = self.acknowledged_by
        out["acknowledged_at"] = self.acknowledged_at
        out["auto_stop"] = self.auto_stop
        return out


@dataclass(frozen=True)
class AlertAcknowledged:
    id: str
    acknowledged: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertAcknowledged":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["acknowledged"] = _required(d, "acknowledged", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["acknowledged"] = self.acknowledged
        return out


@dataclass(frozen=True)
class AlertList:
    items: list[Alert]
    history: list[AlertTransition]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Alert.from_dict(x0) for x0 in v]
        v = _required(d, "history", cls.__name__)
        kw["history"] = [AlertTransition.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        v = self.history
        out["history"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class AlertRule:
    "an alert rule as the server keeps it (POST takes AlertRuleCreate)"

    name: str
    metric: str
    comparison: Literal[">", ">=", "<", "<=", "==", "!=", "absent"]
    threshold: float
    for_s: float
    severity: Literal["info", "warning", "critical"]
    scope: Literal["all", "node", "gpu_type", "instance"]
    scope_value: Optional[str] = None
    idle_auto_stop: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertRule":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["name"] = _required(d, "name", cls.__name__)
        kw["metric"] = _required(d, "metric", cls.__name__)
        kw["comparison"] = _required(d, "comparison", cls.__name__)
        kw["threshold"] = _required(d, "threshold", cls.__name__)
        kw["for_s"] = _required(d, "for_s", cls.__name__)
        kw["severity"] = _required(d, "severity", cls.__name__)
        kw["scope"] = _required(d, "scope", cls.__name__)
        if "scope_value" in d:
            kw["scope_value"] = d["scope_value"]
        if "idle_auto_stop" in d:
            kw["idle_auto_stop"] = d["idle_auto_stop"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["name"] = self.name
        out["metric"] = self.metric
        out["comparison"] = self.comparison
        out["threshold"] = self.threshold
        out["for_s"] = self.for_s
        out["severity"] = self.severity
        out["scope"] = self.scope
        if self.scope_value is not None:
            out["scope_value"] = self.scope_value
        if self.idle_auto_stop is not None:
            out["idle_auto_stop"] = self.idle_auto_stop
        return out


@dataclass(frozen=True)
class AlertRuleCreate:
    name: str
    metric: str
    comparison: Literal[">", ">=", "<", "<=", "==", "!=", "absent"]
    threshold: Optional[float] = None
    for_s: Optional[float] = None
    severity: Optional[Literal["info", "warning", "critical"]] = None
    scope: Optional[Literal["all", "node", "gpu_type", "instance"]] = None
    scope_value: Optional[str] = None
    idle_auto_stop: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertRuleCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["name"] = _required(d, "name", cls.__name__)
        kw["metric"] = _required(d, "metric", cls.__name__)
        kw["comparison"] = _required(d, "comparison", cls.__name__)
        if "threshold" in d:
            kw["threshold"] = d["threshold"]
        if "for_s" in d:
            kw["for_s"] = d["for_s"]
        if "severity" in d:
            kw["severity"] = d["severity"]
        if "scope" in d:
            kw["scope"] = d["scope"]
        if "scope_value" in d:
            kw["scope_value"] = d["scope_value"]
        if "idle_auto_stop" in d:
            kw["idle_auto_stop"] = d["idle_auto_stop"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["name"] = self.name
        out["metric"] = self.metric
        out["comparison"] = self.comparison
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.for_s is not None:
            out["for_s"] = self.for_s
        if self.severity is not None:
            out["severity"] = self.severity
        if self.scope is not None:
            out["scope"] = self.scope
        if self.scope_value is not None:
            out["scope_value"] = self.scope_value
        if self.idle_auto_stop is not None:
            out["idle_auto_stop"] = self.idle_auto_stop
        return out


@dataclass(frozen=True)
class AlertRuleList:
    items: list[AlertRule]
    next_cursor: Any

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertRuleList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [AlertRule.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class AlertSubject:
    metric: str
    subject: str
    node: str
    gpu_type: str
    instance: str
    tenant: str
    value: Optional[float]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertSubject":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["metric"] = _required(d, "metric", cls.__name__)
        kw["subject"] = _required(d, "subject", cls.__name__)
        kw["node"] = _required(d, "node", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["instance"] = _required(d, "instance", cls.__name__)
        kw["tenant"] = _required(d, "tenant", cls.__name__)
        kw["value"] = _required(d, "value", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["metric"] = self.metric
        out["subject"] = self.subject
        out["node"] = self.node
        out["gpu_type"] = self.gpu_type
        out["instance"] = self.instance
        out["tenant"] = self.tenant
        out["value"] = self.value
        return out


@dataclass(frozen=True)
class AlertTransition:
    seq: int
    id: str
    rule: str
    severity: str
    from_: Literal["inactive", "pending", "firing", "resolved"]
    to: Literal["inactive", "pending", "firing", "resolved"]
    at: str
    subject: AlertSubject
    auto_stop: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AlertTransition":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["seq"] = _required(d, "seq", cls.__name__)
        kw["id"] = _required(d, "id", cls.__name__)
        kw["rule"] = _required(d, "rule", cls.__name__)
        kw["severity"] = _required(d, "severity", cls.__name__)
        kw["from_"] = _required(d, "from", cls.__name__)
        kw["to"] = _required(d, "to", cls.__name__)
        kw["at"] = _required(d, "at", cls.__name__)
        v = _required(d, "subject", cls.__name__)
        kw["subject"] = AlertSubject.from_dict(v)
        kw["auto_stop"] = _required(d, "auto_stop", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["seq"] = self.seq
        out["id"] = self.id
        out["rule"] = self.rule
        out["severity"] = self.severity
        out["from"] = self.from_
        out["to"] = self.to
        out["at"] = self.at
        v = self.subject
        out["subject"] = v.to_dict()
        out["auto_stop"] = self.auto_stop
        return out


@dataclass(frozen=True)
class ApiKey:
    id: str
    tenant_id: str
    role: Role
    name: str
    prefix: str
    created_at: str
    scopes: list[str]
    expires_at: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ApiKey":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["role"] = _required(d, "role", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["prefix"] = _required(d, "prefix", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        v = _required(d, "scopes", cls.__name__)
        kw["scopes"] = list(v)
        if "expires_at" in d:
            kw["expires_at"] = d["expires_at"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["tenant_id"] = self.tenant_id
        out["role"] = self.role
        out["name"] = self.name
        out["prefix"] = self.prefix
        out["created_at"] = self.created_at
        v = self.scopes
        out["scopes"] = list(v)
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at
        return out


@dataclass(frozen=True)
class ApiKeyCreate:
    tenant_id: Optional[str] = None
    role: Optional[dict[str, Any]] = None
    name: Optional[str] = None
    scopes: Optional[list[str]] = None
    expires_at: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ApiKeyCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "tenant_id" in d:
            kw["tenant_id"] = d["tenant_id"]
        if "role" in d:
            kw["role"] = d["role"]
        if "name" in d:
            kw["name"] = d["name"]
        if "scopes" in d:
            kw["scopes"] = d["scopes"]
        if "expires_at" in d:
            kw["expires_at"] = d["expires_at"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.tenant_id is not None:
            out["tenant_id"] = self.tenant_id
        if self.role is not None:
            out["role"] = self.role
        if self.name is not None:
            out["name"] = self.name
        if self.scopes is not None:
            out["scopes"] = self.scopes
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at
        return out


@dataclass(frozen=True)
class ApiKeyCreated:
    id: str
    tenant_id: str
    role: Role
    name: str
    prefix: str
    created_at: str
    scopes: list[str]
    key: str
    expires_at: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ApiKeyCreated":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["role"] = _required(d, "role", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["prefix"] = _required(d, "prefix", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        v = _required(d, "scopes", cls.__name__)
        kw["scopes"] = list(v)
        kw["key"] = _required(d, "key", cls.__name__)
        if "expires_at" in d:
            kw["expires_at"] = d["expires_at"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["tenant_id"] = self.tenant_id
        out["role"] = self.role
        out["name"] = self.name
        out["prefix"] = self.prefix
        out["created_at"] = self.created_at
        v = self.scopes
        out["scopes"] = list(v)
        out["key"] = self.key
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at
        return out


@dataclass(frozen=True)
class ApiKeyList:
    items: list[ApiKey]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ApiKeyList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [ApiKey.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    at: str
    tenant_id: Optional[str]
    key_id: Optional[str]
    role: Optional[Role]
    address: str
    action: str
    target: str
    status: int
    outcome: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AuditEntry":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["seq"] = _required(d, "seq", cls.__name__)
        kw["at"] = _required(d, "at", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["key_id"] = _required(d, "key_id", cls.__name__)
        kw["role"] = _required(d, "role", cls.__name__)
        kw["address"] = _required(d, "address", cls.__name__)
        kw["action"] = _required(d, "action", cls.__name__)
        kw["target"] = _required(d, "target", cls.__name__)
        kw["status"] = _required(d, "status", cls.__name__)
        kw["outcome"] = _required(d, "outcome", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["seq"] = self.seq
        out["at"] = self.at
        out["tenant_id"] = self.tenant_id
        out["key_id"] = self.key_id
        out["role"] = self.role
        out["address"] = self.address
        out["action"] = self.action
        out["target"] = self.target
        out["status"] = self.status
        out["outcome"] = self.outcome
        return out


@dataclass(frozen=True)
class AuditList:
    items: list[AuditEntry]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AuditList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [AuditEntry.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class Balance:
    tenant_id: str
    balance_micros: int
    currency: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Balance":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["balance_micros"] = _required(d, "balance_micros", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        out["balance_micros"] = self.balance_micros
        out["currency"] = self.currency
        return out


@dataclass(frozen=True)
class BalanceSettings:
    tenant_id: str
    warning_threshold_micros: int
    credit_limit_micros: int
    below_warning_threshold: bool
    currency: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BalanceSettings":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["warning_threshold_micros"] = _required(d, "warning_threshold_micros", cls.__name__)
        kw["credit_limit_micros"] = _required(d, "credit_limit_micros", cls.__name__)
        kw["below_warning_threshold"] = _required(d, "below_warning_threshold", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        out["warning_threshold_micros"] = self.warning_threshold_micros
        out["credit_limit_micros"] = self.credit_limit_micros
        out["below_warning_threshold"] = self.below_warning_threshold
        out["currency"] = self.currency
        return out


@dataclass(frozen=True)
class BalanceSettingsSet:
    tenant_id: str
    warning_threshold_micros: Optional[int] = None
    credit_limit_micros: Optional[int] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BalanceSettingsSet":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        if "warning_threshold_micros" in d:
            kw["warning_threshold_micros"] = d["warning_threshold_micros"]
        if "credit_limit_micros" in d:
            kw["credit_limit_micros"] = d["credit_limit_micros"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        if self.warning_threshold_micros is not None:
            out["warning_threshold_micros"] = self.warning_threshold_micros
        if self.credit_limit_micros is not None:
            out["credit_limit_micros"] = self.credit_limit_micros
        return out


@dataclass(frozen=True)
class BenchmarkRequest:
    "a node asked to measure GPUs; they take no work until it answers"

    id: int
    node_id: str
    gpus: list[int]
    reason: Literal["join", "released", "operator", "idle"]
    asked_at: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BenchmarkRequest":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["node_id"] = _required(d, "node_id", cls.__name__)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = list(v)
        kw["reason"] = _required(d, "reason", cls.__name__)
        kw["asked_at"] = _required(d, "asked_at", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["node_id"] = self.node_id
        v = self.gpus
        out["gpus"] = list(v)
        out["reason"] = self.reason
        out["asked_at"] = self.asked_at
        return out


@dataclass(frozen=True)
class BenchmarkRun:
    at: str
    reason: Literal["join", "released", "operator", "idle"]
    simulated: bool
    figures: Figures
    peers: list[PeerCopy]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BenchmarkRun":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["at"] = _required(d, "at", cls.__name__)
        kw["reason"] = _required(d, "reason", cls.__name__)
        kw["simulated"] = _required(d, "simulated", cls.__name__)
        v = _required(d, "figures", cls.__name__)
        kw["figures"] = Figures.from_dict(v)
        v = _required(d, "peers", cls.__name__)
        kw["peers"] = [PeerCopy.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["at"] = self.at
        out["reason"] = self.reason
        out["simulated"] = self.simulated
        v = self.figures
        out["figures"] = v.to_dict()
        v = self.peers
        out["peers"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class ContainerToolkit:
    "The NVIDIA Container Toolkit as the node's agent found it: containers get GPUs only with 1.17.8 or later (docs/runtime.md, \"Hardening\")"

    version: str
    gpu_containers: bool
    note: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ContainerToolkit":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["version"] = _required(d, "version", cls.__name__)
        kw["gpu_containers"] = _required(d, "gpu_containers", cls.__name__)
        if "note" in d:
            kw["note"] = d["note"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["version"] = self.version
        out["gpu_containers"] = self.gpu_containers
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class CopyResult:
    path: str
    files: int
    directories: int
    links: int
    bytes: int
    names: list[str]
    names_truncated: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CopyResult":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["path"] = _required(d, "path", cls.__name__)
        kw["files"] = _required(d, "files", cls.__name__)
        kw["directories"] = _required(d, "directories", cls.__name__)
        kw["links"] = _required(d, "links", cls.__name__)
        kw["bytes"] = _required(d, "bytes", cls.__name__)
        v = _required(d, "names", cls.__name__)
        kw["names"] = list(v)
        kw["names_truncated"] = _required(d, "names_truncated", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["path"] = self.path
        out["files"] = self.files
        out["directories"] = self.directories
        out["links"] = self.links
        out["bytes"] = self.bytes
        v = self.names
        out["names"] = list(v)
        out["names_truncated"] = self.names_truncated
        return out


@dataclass(frozen=True)
class DesiredState:
    node_id: str
    generation: int
    workloads: list[WorkloadSpec]
    volumes: Optional[list[str]] = None
    instances: Optional[list[str]] = None
    benchmark: Optional[AgentBenchmarkRequest] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "DesiredState":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["node_id"] = _required(d, "node_id", cls.__name__)
        kw["generation"] = _required(d, "generation", cls.__name__)
        v = _required(d, "workloads", cls.__name__)
        kw["workloads"] = [WorkloadSpec.from_dict(x0) for x0 in v]
        if "volumes" in d:
            kw["volumes"] = d["volumes"]
        if "instances" in d:
            kw["instances"] = d["instances"]
        if "benchmark" in d:
            v = d["benchmark"]
            kw["benchmark"] = (None if v is None else AgentBenchmarkRequest.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["node_id"] = self.node_id
        out["generation"] = self.generation
        v = self.workloads
        out["workloads"] = [x0.to_dict() for x0 in v]
        if self.volumes is not None:
            out["volumes"] = self.volumes
        if self.instances is not None:
            out["instances"] = self.instances
        if self.benchmark is not None:
            v = self.benchmark
            out["benchmark"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class Estimate:
    gpu_type: str
    pricing: PricingModel
    currency: str
    gpu_price_per_gpu_hour_micros: int
    per_hour_micros: EstimatePerHourMicros
    stopped_storage_per_hour_micros: int
    minimum_billed_seconds: int
    minimum_charge_micros: int
    spot: Optional[EstimateSpot]
    work: Optional[WorkEstimate] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Estimate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["pricing"] = _required(d, "pricing", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        kw["gpu_price_per_gpu_hour_micros"] = _required(d, "gpu_price_per_gpu_hour_micros", cls.__name__)
        v = _required(d, "per_hour_micros", cls.__name__)
        kw["per_hour_micros"] = EstimatePerHourMicros.from_dict(v)
        kw["stopped_storage_per_hour_micros"] = _required(d, "stopped_storage_per_hour_micros", cls.__name__)
        kw["minimum_billed_seconds"] = _required(d, "minimum_billed_seconds", cls.__name__)
        kw["minimum_charge_micros"] = _required(d, "minimum_charge_micros", cls.__name__)
        v = _required(d, "spot", cls.__name__)
        kw["spot"] = (None if v is None else EstimateSpot.from_dict(v))
        if "work" in d:
            v = d["work"]
            kw["work"] = (None if v is None else WorkEstimate.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpu_type"] = self.gpu_type
        out["pricing"] = self.pricing
        out["currency"] = self.currency
        out["gpu_price_per_gpu_hour_micros"] = self.gpu_price_per_gpu_hour_micros
        v = self.per_hour_micros
        out["per_hour_micros"] = v.to_dict()
        out["stopped_storage_per_hour_micros"] = self.stopped_storage_per_hour_micros
        out["minimum_billed_seconds"] = self.minimum_billed_seconds
        out["minimum_charge_micros"] = self.minimum_charge_micros
        v = self.spot
        out["spot"] = (None if v is None else v.to_dict())
        if self.work is not None:
            v = self.work
            out["work"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class EstimateCreate:
    name: Optional[str] = None
    gpu_type: Optional[str] = None
    gpu_types: Optional[list[str]] = None
    min_gpu_memory_gb: Optional[int] = None
    gpu_count: Optional[int] = None
    gpu_milli: Optional[int] = None
    gpu_memory_gb: Optional[int] = None
    cpu: Optional[int] = None
    memory_gb: Optional[int] = None
    disk_gb: Optional[int] = None
    node_selector: Optional[dict[str, str]] = None
    command: Optional[Union[str, list[str]]] = None
    env: Optional[dict[str, str]] = None
    pricing: Optional[Literal["on_demand", "spot", "reserved"]] = None
    priority: Optional[int] = None
    queue: Optional[bool] = None
    max_runtime_s: Optional[int] = None
    reservation_id: Optional[str] = None
    image: Optional[str] = None
    volumes: Optional[list[VolumeMount]] = None
    template: Optional[str] = None
    runtime: Optional[Literal["auto", "process", "container", "vm"]] = None
    services: Optional[list[str]] = None
    ssh_keys: Optional[list[str]] = None
    restart_policy: Optional[Literal["on_node_failure", "never"]] = None
    max_price_micros: Optional[int] = None
    workdir: Optional[str] = None
    wait_for_capacity: Optional[bool] = None
    work: Optional[EstimateWork] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EstimateCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "name" in d:
            kw["name"] = d["name"]
        if "gpu_type" in d:
            kw["gpu_type"] = d["gpu_type"]
        if "gpu_types" in d:
            kw["gpu_types"] = d["gpu_types"]
        if "min_gpu_memory_gb" in d:
            kw["min_gpu_memory_gb"] = d["min_gpu_memory_gb"]
        if "gpu_count" in d:
            kw["gpu_count"] = d["gpu_count"]
        if "gpu_milli" in d:
            kw["gpu_milli"] = d["gpu_milli"]
        if "gpu_memory_gb" in d:
            kw["gpu_memory_gb"] = d["gpu_memory_gb"]
        if "cpu" in d:
            kw["cpu"] = d["cpu"]
        if "memory_gb" in d:
            kw["memory_gb"] = d["memory_gb"]
        if "disk_gb" in d:
            kw["disk_gb"] = d["disk_gb"]
        if "node_selector" in d:
            kw["node_selector"] = d["node_selector"]
        if "command" in d:
            kw["command"] = d["command"]
        if "env" in d:
            kw["env"] = d["env"]
        if "pricing" in d:
            kw["pricing"] = d["pricing"]
        if "priority" in d:
            kw["priority"] = d["priority"]
        if "queue" in d:
            kw["queue"] = d["queue"]
        if "max_runtime_s" in d:
            kw["max_runtime_s"] = d["max_runtime_s"]
        if "reservation_id" in d:
            kw["reservation_id"] = d["reservation_id"]
        if "image" in d:
            kw["image"] = d["image"]
        if "volumes" in d:
            v = d["volumes"]
            kw["volumes"] = (None if v is None else [VolumeMount.from_dict(x0) for x0 in v])
        if "template" in d:
            kw["template"] = d["template"]
        if "runtime" in d:
            kw["runtime"] = d["runtime"]
        if "services" in d:
            kw["services"] = d["services"]
        if "ssh_keys" in d:
            kw["ssh_keys"] = d["ssh_keys"]
        if "restart_policy" in d:
            kw["restart_policy"] = d["restart_policy"]
        if "max_price_micros" in d:
            kw["max_price_micros"] = d["max_price_micros"]
        if "workdir" in d:
            kw["workdir"] = d["workdir"]
        if "wait_for_capacity" in d:
            kw["wait_for_capacity"] = d["wait_for_capacity"]
        if "work" in d:
            v = d["work"]
            kw["work"] = (None if v is None else EstimateWork.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        if self.gpu_type is not None:
            out["gpu_type"] = self.gpu_type
        if self.gpu_types is not None:
            out["gpu_types"] = self.gpu_types
        if self.min_gpu_memory_gb is not None:
            out["min_gpu_memory_gb"] = self.min_gpu_memory_gb
        if self.gpu_count is not None:
            out["gpu_count"] = self.gpu_count
        if self.gpu_milli is not None:
            out["gpu_milli"] = self.gpu_milli
        if self.gpu_memory_gb is not None:
            out["gpu_memory_gb"] = self.gpu_memory_gb
        if self.cpu is not None:
            out["cpu"] = self.cpu
        if self.memory_gb is not None:
            out["memory_gb"] = self.memory_gb
        if self.disk_gb is not None:
            out["disk_gb"] = self.disk_gb
        if self.node_selector is not None:
            out["node_selector"] = self.node_selector
        if self.command is not None:
            out["command"] = self.command
        if self.env is not None:
            out["env"] = self.env
        if self.pricing is not None:
            out["pricing"] = self.pricing
        if self.priority is not None:
            out["priority"] = self.priority
        if self.queue is not None:
            out["queue"] = self.queue
        if self.max_runtime_s is not None:
            out["max_runtime_s"] = self.max_runtime_s
        if self.reservation_id is not None:
            out["reservation_id"] = self.reservation_id
        if self.image is not None:
            out["image"] = self.image
        if self.volumes is not None:
            v = self.volumes
            out["volumes"] = (None if v is None else [x0.to_dict() for x0 in v])
        if self.template is not None:
            out["template"] = self.template
        if self.runtime is not None:
            out["runtime"] = self.runtime
        if self.services is not None:
            out["services"] = self.services
        if self.ssh_keys is not None:
            out["ssh_keys"] = self.ssh_keys
        if self.restart_policy is not None:
            out["restart_policy"] = self.restart_policy
        if self.max_price_micros is not None:
            out["max_price_micros"] = self.max_price_micros
        if self.workdir is not None:
            out["workdir"] = self.workdir
        if self.wait_for_capacity is not None:
            out["wait_for_capacity"] = self.wait_for_capacity
        if self.work is not None:
            v = self.work
            out["work"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class EstimatePerHourMicros:
    gpu: int
    cpu: int
    memory: int
    disk: int
    total: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EstimatePerHourMicros":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpu"] = _required(d, "gpu", cls.__name__)
        kw["cpu"] = _required(d, "cpu", cls.__name__)
        kw["memory"] = _required(d, "memory", cls.__name__)
        kw["disk"] = _required(d, "disk", cls.__name__)
        kw["total"] = _required(d, "total", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpu"] = self.gpu
        out["cpu"] = self.cpu
        out["memory"] = self.memory
        out["disk"] = self.disk
        out["total"] = self.total
        return out


@dataclass(frozen=True)
class EstimateSpot:
    floor_per_gpu_hour_micros: Optional[int]
    cap_per_gpu_hour_micros: Optional[int]
    current_per_gpu_hour_micros: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EstimateSpot":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["floor_per_gpu_hour_micros"] = _required(d, "floor_per_gpu_hour_micros", cls.__name__)
        kw["cap_per_gpu_hour_micros"] = _required(d, "cap_per_gpu_hour_micros", cls.__name__)
        kw["current_per_gpu_hour_micros"] = _required(d, "current_per_gpu_hour_micros", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["floor_per_gpu_hour_micros"] = self.floor_per_gpu_hour_micros
        out["cap_per_gpu_hour_micros"] = self.cap_per_gpu_hour_micros
        out["current_per_gpu_hour_micros"] = self.current_per_gpu_hour_micros
        return out


@dataclass(frozen=True)
class EstimateWork:
    "training to time and price from the measured ResNet-50 figures of the type the launch would get"

    model: Literal["resnet50"]
    epochs: int
    images_per_epoch: Optional[int] = None
    precision: Optional[Literal["amp", "fp32"]] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EstimateWork":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["model"] = _required(d, "model", cls.__name__)
        kw["epochs"] = _required(d, "epochs", cls.__name__)
        if "images_per_epoch" in d:
            kw["images_per_epoch"] = d["images_per_epoch"]
        if "precision" in d:
            kw["precision"] = d["precision"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["model"] = self.model
        out["epochs"] = self.epochs
        if self.images_per_epoch is not None:
            out["images_per_epoch"] = self.images_per_epoch
        if self.precision is not None:
            out["precision"] = self.precision
        return out


@dataclass(frozen=True)
class Event:
    seq: int
    at: str
    tenant_id: Optional[str]
    object_id: str
    kind: str
    message: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Event":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["seq"] = _required(d, "seq", cls.__name__)
        kw["at"] = _required(d, "at", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["object_id"] = _required(d, "object_id", cls.__name__)
        kw["kind"] = _required(d, "kind", cls.__name__)
        kw["message"] = _required(d, "message", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["seq"] = self.seq
        out["at"] = self.at
        out["tenant_id"] = self.tenant_id
        out["object_id"] = self.object_id
        out["kind"] = self.kind
        out["message"] = self.message
        return out


@dataclass(frozen=True)
class EventList:
    items: list[Event]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EventList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Event.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class ExecFrame:
    "one line of the exec stream: output ({stream, data}) as it comes, and last the exit status ({exit_code}, with error when the command did not end by itself, e.g. 124 after the timeout)"

    stream: Optional[Literal["stdout", "stderr"]] = None
    data: Optional[str] = None
    exit_code: Optional[int] = None
    error: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExecFrame":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "stream" in d:
            kw["stream"] = d["stream"]
        if "data" in d:
            kw["data"] = d["data"]
        if "exit_code" in d:
            kw["exit_code"] = d["exit_code"]
        if "error" in d:
            kw["error"] = d["error"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.stream is not None:
            out["stream"] = self.stream
        if self.data is not None:
            out["data"] = self.data
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class ExecRequest:
    command: list[str]
    timeout_s: Optional[int] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExecRequest":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "command", cls.__name__)
        kw["command"] = list(v)
        if "timeout_s" in d:
            kw["timeout_s"] = d["timeout_s"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.command
        out["command"] = list(v)
        if self.timeout_s is not None:
            out["timeout_s"] = self.timeout_s
        return out


@dataclass(frozen=True)
class Figures:
    "measured figures (docs/node-benchmark.md): dense GEMM in TFLOPS, bandwidths in GB/s (10^9 bytes a second)"

    gemm_tflops: dict[str, float]
    training_tflops: Optional[float]
    memory_gbps: float
    h2d_gbps: float
    d2h_gbps: float

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Figures":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "gemm_tflops", cls.__name__)
        kw["gemm_tflops"] = dict(v)
        kw["training_tflops"] = _required(d, "training_tflops", cls.__name__)
        kw["memory_gbps"] = _required(d, "memory_gbps", cls.__name__)
        kw["h2d_gbps"] = _required(d, "h2d_gbps", cls.__name__)
        kw["d2h_gbps"] = _required(d, "d2h_gbps", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.gemm_tflops
        out["gemm_tflops"] = dict(v)
        out["training_tflops"] = self.training_tflops
        out["memory_gbps"] = self.memory_gbps
        out["h2d_gbps"] = self.h2d_gbps
        out["d2h_gbps"] = self.d2h_gbps
        return out


@dataclass(frozen=True)
class Gpu:
    uuid: str
    index: int
    type: str
    name: str
    memory_mb: int
    nvlink_domain: Optional[int] = None
    pcie_switch: Optional[int] = None
    numa_node: Optional[int] = None
    pci_address: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Gpu":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["uuid"] = _required(d, "uuid", cls.__name__)
        kw["index"] = _required(d, "index", cls.__name__)
        kw["type"] = _required(d, "type", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["memory_mb"] = _required(d, "memory_mb", cls.__name__)
        if "nvlink_domain" in d:
            kw["nvlink_domain"] = d["nvlink_domain"]
        if "pcie_switch" in d:
            kw["pcie_switch"] = d["pcie_switch"]
        if "numa_node" in d:
            kw["numa_node"] = d["numa_node"]
        if "pci_address" in d:
            kw["pci_address"] = d["pci_address"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["uuid"] = self.uuid
        out["index"] = self.index
        out["type"] = self.type
        out["name"] = self.name
        out["memory_mb"] = self.memory_mb
        if self.nvlink_domain is not None:
            out["nvlink_domain"] = self.nvlink_domain
        if self.pcie_switch is not None:
            out["pcie_switch"] = self.pcie_switch
        if self.numa_node is not None:
            out["numa_node"] = self.numa_node
        if self.pci_address is not None:
            out["pci_address"] = self.pci_address
        return out


@dataclass(frozen=True)
class GpuBenchmark:
    "a GPU's newest benchmark, and how it compares with its type"

    at: str
    reason: Literal["join", "released", "operator", "idle"]
    simulated: bool
    figures: Figures
    shortfall_percent: Optional[float]
    shortfall_figure: Optional[str]
    slow: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuBenchmark":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["at"] = _required(d, "at", cls.__name__)
        kw["reason"] = _required(d, "reason", cls.__name__)
        kw["simulated"] = _required(d, "simulated", cls.__name__)
        v = _required(d, "figures", cls.__name__)
        kw["figures"] = Figures.from_dict(v)
        kw["shortfall_percent"] = _required(d, "shortfall_percent", cls.__name__)
        kw["shortfall_figure"] = _required(d, "shortfall_figure", cls.__name__)
        kw["slow"] = _required(d, "slow", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["at"] = self.at
        out["reason"] = self.reason
        out["simulated"] = self.simulated
        v = self.figures
        out["figures"] = v.to_dict()
        out["shortfall_percent"] = self.shortfall_percent
        out["shortfall_figure"] = self.shortfall_figure
        out["slow"] = self.slow
        return out


@dataclass(frozen=True)
class GpuBenchmarkHistory:
    uuid: str
    index: int
    type: str
    shortfall_percent: Optional[float]
    runs: list[BenchmarkRun]
    trainings: list[TrainingRun]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuBenchmarkHistory":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["uuid"] = _required(d, "uuid", cls.__name__)
        kw["index"] = _required(d, "index", cls.__name__)
        kw["type"] = _required(d, "type", cls.__name__)
        kw["shortfall_percent"] = _required(d, "shortfall_percent", cls.__name__)
        v = _required(d, "runs", cls.__name__)
        kw["runs"] = [BenchmarkRun.from_dict(x0) for x0 in v]
        v = _required(d, "trainings", cls.__name__)
        kw["trainings"] = [TrainingRun.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["uuid"] = self.uuid
        out["index"] = self.index
        out["type"] = self.type
        out["shortfall_percent"] = self.shortfall_percent
        v = self.runs
        out["runs"] = [x0.to_dict() for x0 in v]
        v = self.trainings
        out["trainings"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class GpuBenchmarkHistoryList:
    items: list[GpuBenchmarkHistory]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuBenchmarkHistoryList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [GpuBenchmarkHistory.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class GpuQuarantine:
    uuid: str
    index: int
    cause: Literal["xid", "ecc_dbe", "slow"]
    xid: Optional[int]
    message: str
    quarantined_at: str
    released_at: Optional[str]
    released_by: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuQuarantine":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["uuid"] = _required(d, "uuid", cls.__name__)
        kw["index"] = _required(d, "index", cls.__name__)
        kw["cause"] = _required(d, "cause", cls.__name__)
        kw["xid"] = _required(d, "xid", cls.__name__)
        kw["message"] = _required(d, "message", cls.__name__)
        kw["quarantined_at"] = _required(d, "quarantined_at", cls.__name__)
        kw["released_at"] = _required(d, "released_at", cls.__name__)
        kw["released_by"] = _required(d, "released_by", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["uuid"] = self.uuid
        out["index"] = self.index
        out["cause"] = self.cause
        out["xid"] = self.xid
        out["message"] = self.message
        out["quarantined_at"] = self.quarantined_at
        out["released_at"] = self.released_at
        out["released_by"] = self.released_by
        return out


@dataclass(frozen=True)
class GpuTelemetry:
    "the GPU's latest sample (fields it does not report are absent) and XID events"

    time: Optional[str] = None
    gpu_util_pct: Optional[int] = None
    mem_util_pct: Optional[int] = None
    fb_used_mib: Optional[int] = None
    fb_free_mib: Optional[int] = None
    temperature_c: Optional[int] = None
    power_w: Optional[float] = None
    sm_clock_mhz: Optional[int] = None
    mem_clock_mhz: Optional[int] = None
    pcie_tx_kbps: Optional[int] = None
    pcie_rx_kbps: Optional[int] = None
    throttle_reasons: Optional[int] = None
    ecc_sbe_total: Optional[int] = None
    ecc_dbe_total: Optional[int] = None
    nvlink_up: Optional[int] = None
    nvlink_total: Optional[int] = None
    last_xid: Optional[GpuTelemetryLastXid] = None
    xid_count: Optional[int] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuTelemetry":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "time" in d:
            kw["time"] = d["time"]
        if "gpu_util_pct" in d:
            kw["gpu_util_pct"] = d["gpu_util_pct"]
        if "mem_util_pct" in d:
            kw["mem_util_pct"] = d["mem_util_pct"]
        if "fb_used_mib" in d:
            kw["fb_used_mib"] = d["fb_used_mib"]
        if "fb_free_mib" in d:
            kw["fb_free_mib"] = d["fb_free_mib"]
        if "temperature_c" in d:
            kw["temperature_c"] = d["temperature_c"]
        if "power_w" in d:
            kw["power_w"] = d["power_w"]
        if "sm_clock_mhz" in d:
            kw["sm_clock_mhz"] = d["sm_clock_mhz"]
        if "mem_clock_mhz" in d:
            kw["mem_clock_mhz"] = d["mem_clock_mhz"]
        if "pcie_tx_kbps" in d:
            kw["pcie_tx_kbps"] = d["pcie_tx_kbps"]
        if "pcie_rx_kbps" in d:
            kw["pcie_rx_kbps"] = d["pcie_rx_kbps"]
        if "throttle_reasons" in d:
            kw["throttle_reasons"] = d["throttle_reasons"]
        if "ecc_sbe_total" in d:
            kw["ecc_sbe_total"] = d["ecc_sbe_total"]
        if "ecc_dbe_total" in d:
            kw["ecc_dbe_total"] = d["ecc_dbe_total"]
        if "nvlink_up" in d:
            kw["nvlink_up"] = d["nvlink_up"]
        if "nvlink_total" in d:
            kw["nvlink_total"] = d["nvlink_total"]
        if "last_xid" in d:
            v = d["last_xid"]
            kw["last_xid"] = (None if v is None else GpuTelemetryLastXid.from_dict(v))
        if "xid_count" in d:
            kw["xid_count"] = d["xid_count"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.time is not None:
            out["time"] = self.time
        if self.gpu_util_pct is not None:
            out["gpu_util_pct"] = self.gpu_util_pct
        if self.mem_util_pct is not None:
            out["mem_util_pct"] = self.mem_util_pct
        if self.fb_used_mib is not None:
            out["fb_used_mib"] = self.fb_used_mib
        if self.fb_free_mib is not None:
            out["fb_free_mib"] = self.fb_free_mib
        if self.temperature_c is not None:
            out["temperature_c"] = self.temperature_c
        if self.power_w is not None:
            out["power_w"] = self.power_w
        if self.sm_clock_mhz is not None:
            out["sm_clock_mhz"] = self.sm_clock_mhz
        if self.mem_clock_mhz is not None:
            out["mem_clock_mhz"] = self.mem_clock_mhz
        if self.pcie_tx_kbps is not None:
            out["pcie_tx_kbps"] = self.pcie_tx_kbps
        if self.pcie_rx_kbps is not None:
            out["pcie_rx_kbps"] = self.pcie_rx_kbps
        if self.throttle_reasons is not None:
            out["throttle_reasons"] = self.throttle_reasons
        if self.ecc_sbe_total is not None:
            out["ecc_sbe_total"] = self.ecc_sbe_total
        if self.ecc_dbe_total is not None:
            out["ecc_dbe_total"] = self.ecc_dbe_total
        if self.nvlink_up is not None:
            out["nvlink_up"] = self.nvlink_up
        if self.nvlink_total is not None:
            out["nvlink_total"] = self.nvlink_total
        if self.last_xid is not None:
            v = self.last_xid
            out["last_xid"] = (None if v is None else v.to_dict())
        if self.xid_count is not None:
            out["xid_count"] = self.xid_count
        return out


@dataclass(frozen=True)
class GpuTelemetryLastXid:
    code: Optional[int] = None
    time: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuTelemetryLastXid":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "code" in d:
            kw["code"] = d["code"]
        if "time" in d:
            kw["time"] = d["time"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.code is not None:
            out["code"] = self.code
        if self.time is not None:
            out["time"] = self.time
        return out


@dataclass(frozen=True)
class GpuType:
    slug: str
    display_name: str
    memory_mb: int
    price_per_gpu_hour_micros: Optional[int]
    currency: str
    total: int
    free: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuType":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["slug"] = _required(d, "slug", cls.__name__)
        kw["display_name"] = _required(d, "display_name", cls.__name__)
        kw["memory_mb"] = _required(d, "memory_mb", cls.__name__)
        kw["price_per_gpu_hour_micros"] = _required(d, "price_per_gpu_hour_micros", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        kw["total"] = _required(d, "total", cls.__name__)
        kw["free"] = _required(d, "free", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["slug"] = self.slug
        out["display_name"] = self.display_name
        out["memory_mb"] = self.memory_mb
        out["price_per_gpu_hour_micros"] = self.price_per_gpu_hour_micros
        out["currency"] = self.currency
        out["total"] = self.total
        out["free"] = self.free
        return out


@dataclass(frozen=True)
class GpuTypeList:
    items: list[GpuType]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GpuTypeList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [GpuType.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class Health:
    status: Literal["ok"]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Health":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["status"] = _required(d, "status", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["status"] = self.status
        return out


@dataclass(frozen=True)
class IdleAlertSet:
    below_percent: Optional[float] = None
    for_s: Optional[int] = None
    auto_stop: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "IdleAlertSet":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "below_percent" in d:
            kw["below_percent"] = d["below_percent"]
        if "for_s" in d:
            kw["for_s"] = d["for_s"]
        if "auto_stop" in d:
            kw["auto_stop"] = d["auto_stop"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.below_percent is not None:
            out["below_percent"] = self.below_percent
        if self.for_s is not None:
            out["for_s"] = self.for_s
        if self.auto_stop is not None:
            out["auto_stop"] = self.auto_stop
        return out


@dataclass(frozen=True)
class Instance:
    id: str
    name: str
    tenant_id: str
    state: InstanceState
    gpu_type: str
    gpu_count: int
    cpu: int
    memory_gb: int
    command: list[str]
    env: dict[str, str]
    pricing: PricingModel
    node_id: Optional[str]
    gpus: list[str]
    run: int
    created_at: str
    started_at: Optional[str]
    ended_at: Optional[str]
    exit_code: Optional[int]
    reason: str
    price_per_gpu_hour_micros: Optional[int]
    currency: str
    gpu_types: list[str]
    min_gpu_memory_gb: int
    gpu_milli: int
    gpu_memory_gb: int
    disk_gb: int
    node_selector: dict[str, str]
    priority: int
    queue: bool
    reservation_id: Optional[str]
    image: Optional[str]
    max_runtime_s: Optional[int]
    job_id: Optional[str]
    job_task: Optional[int]
    job_rank: Optional[int]
    volumes: list[VolumeMount]
    template: Optional[str]
    process_command: list[str]
    services: list[str]
    ssh_keys: list[str]
    restart_policy: Literal["on_node_failure", "never"]
    max_price_micros: Optional[int]
    workdir: Optional[str]
    start_requested: bool
    start_on_node: Optional[str]
    wait_for_capacity: bool
    runtime: Literal["process", "container", "auto", "vm"]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Instance":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["gpu_count"] = _required(d, "gpu_count", cls.__name__)
        kw["cpu"] = _required(d, "cpu", cls.__name__)
        kw["memory_gb"] = _required(d, "memory_gb", cls.__name__)
        v = _required(d, "command", cls.__name__)
        kw["command"] = list(v)
        v = _required(d, "env", cls.__name__)
        kw["env"] = dict(v)
        kw["pricing"] = _required(d, "pricing", cls.__name__)
        kw["node_id"] = _required(d, "node_id", cls.__name__)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = list(v)
        kw["run"] = _required(d, "run", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        kw["started_at"] = _required(d, "started_at", cls.__name__)
        kw["ended_at"] = _required(d, "ended_at", cls.__name__)
        kw["exit_code"] = _required(d, "exit_code", cls.__name__)
        kw["reason"] = _required(d, "reason", cls.__name__)
        kw["price_per_gpu_hour_micros"] = _required(d, "price_per_gpu_hour_micros", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        v = _required(d, "gpu_types", cls.__name__)
        kw["gpu_types"] = list(v)
        kw["min_gpu_memory_gb"] = _required(d, "min_gpu_memory_gb", cls.__name__)
        kw["gpu_milli"] = _required(d, "gpu_milli", cls.__name__)
        kw["gpu_memory_gb"] = _required(d, "gpu_memory_gb", cls.__name__)
        kw["disk_gb"] = _required(d, "disk_gb", cls.__name__)
        v = _required(d, "node_selector", cls.__name__)
        kw["node_selector"] = dict(v)
        kw["priority"] = _required(d, "priority", cls.__name__)
        kw["queue"] = _required(d, "queue", cls.__name__)
        kw["reservation_id"] = _required(d, "reservation_id", cls.__name__)
        kw["image"] = _required(d, "image", cls.__name__)
        kw["max_runtime_s"] = _required(d, "max_runtime_s", cls.__name__)
        kw["job_id"] = _required(d, "job_id", cls.__name__)
        kw["job_task"] = _required(d, "job_task", cls.__name__)
        kw["job_rank"] = _required(d, "job_rank", cls.__name__)
        v = _required(d, "volumes", cls.__name__)
        kw["volumes"] = [VolumeMount.from_dict(x0) for x0 in v]
        kw["template"] = _required(d, "template", cls.__name__)
        v = _required(d, "process_command", cls.__name__)
        kw["process_command"] = list(v)
        v = _required(d, "services", cls.__name__)
        kw["services"] = list(v)
        v = _required(d, "ssh_keys", cls.__name__)
        kw["ssh_keys"] = list(v)
        kw["restart_policy"] = _required(d, "restart_policy", cls.__name__)
        kw["max_price_micros"] = _required(d, "max_price_micros", cls.__name__)
        kw["workdir"] = _required(d, "workdir", cls.__name__)
        kw["start_requested"] = _required(d, "start_requested", cls.__name__)
        kw["start_on_node"] = _required(d, "start_on_node", cls.__name__)
        kw["wait_for_capacity"] = _required(d, "wait_for_capacity", cls.__name__)
        kw["runtime"] = _required(d, "runtime", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["name"] = self.name
        out["tenant_id"] = self.tenant_id
        out["state"] = self.state
        out["gpu_type"] = self.gpu_type
        out["gpu_count"] = self.gpu_count
        out["cpu"] = self.cpu
        out["memory_gb"] = self.memory_gb
        v = self.command
        out["command"] = list(v)
        v = self.env
        out["env"] = dict(v)
        out["pricing"] = self.pricing
        out["node_id"] = self.node_id
        v = self.gpus
        out["gpus"] = list(v)
        out["run"] = self.run
        out["created_at"] = self.created_at
        out["started_at"] = self.started_at
        out["ended_at"] = self.ended_at
        out["exit_code"] = self.exit_code
        out["reason"] = self.reason
        out["price_per_gpu_hour_micros"] = self.price_per_gpu_hour_micros
        out["currency"] = self.currency
        v = self.gpu_types
        out["gpu_types"] = list(v)
        out["min_gpu_memory_gb"] = self.min_gpu_memory_gb
        out["gpu_milli"] = self.gpu_milli
        out["gpu_memory_gb"] = self.gpu_memory_gb
        out["disk_gb"] = self.disk_gb
        v = self.node_selector
        out["node_selector"] = dict(v)
        out["priority"] = self.priority
        out["queue"] = self.queue
        out["reservation_id"] = self.reservation_id
        out["image"] = self.image
        out["max_runtime_s"] = self.max_runtime_s
        out["job_id"] = self.job_id
        out["job_task"] = self.job_task
        out["job_rank"] = self.job_rank
        v = self.volumes
        out["volumes"] = [x0.to_dict() for x0 in v]
        out["template"] = self.template
        v = self.process_command
        out["process_command"] = list(v)
        v = self.services
        out["services"] = list(v)
        v = self.ssh_keys
        out["ssh_keys"] = list(v)
        out["restart_policy"] = self.restart_policy
        out["max_price_micros"] = self.max_price_micros
        out["workdir"] = self.workdir
        out["start_requested"] = self.start_requested
        out["start_on_node"] = self.start_on_node
        out["wait_for_capacity"] = self.wait_for_capacity
        out["runtime"] = self.runtime
        return out


@dataclass(frozen=True)
class InstanceCreate:
    name: Optional[str] = None
    gpu_type: Optional[str] = None
    gpu_types: Optional[list[str]] = None
    min_gpu_memory_gb: Optional[int] = None
    gpu_count: Optional[int] = None
    gpu_milli: Optional[int] = None
    gpu_memory_gb: Optional[int] = None
    cpu: Optional[int] = None
    memory_gb: Optional[int] = None
    disk_gb: Optional[int] = None
    node_selector: Optional[dict[str, str]] = None
    command: Optional[Union[str, list[str]]] = None
    env: Optional[dict[str, str]] = None
    pricing: Optional[Literal["on_demand", "spot", "reserved"]] = None
    priority: Optional[int] = None
    queue: Optional[bool] = None
    max_runtime_s: Optional[int] = None
    reservation_id: Optional[str] = None
    image: Optional[str] = None
    volumes: Optional[list[VolumeMount]] = None
    template: Optional[str] = None
    runtime: Optional[Literal["auto", "process", "container", "vm"]] = None
    services: Optional[list[str]] = None
    ssh_keys: Optional[list[str]] = None
    restart_policy: Optional[Literal["on_node_failure", "never"]] = None
    max_price_micros: Optional[int] = None
    workdir: Optional[str] = None
    wait_for_capacity: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InstanceCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "name" in d:
            kw["name"] = d["name"]
        if "gpu_type" in d:
            kw["gpu_type"] = d["gpu_type"]
        if "gpu_types" in d:
            kw["gpu_types"] = d["gpu_types"]
        if "min_gpu_memory_gb" in d:
            kw["min_gpu_memory_gb"] = d["min_gpu_memory_gb"]
        if "gpu_count" in d:
            kw["gpu_count"] = d["gpu_count"]
        if "gpu_milli" in d:
            kw["gpu_milli"] = d["gpu_milli"]
        if "gpu_memory_gb" in d:
            kw["gpu_memory_gb"] = d["gpu_memory_gb"]
        if "cpu" in d:
            kw["cpu"] = d["cpu"]
        if "memory_gb" in d:
            kw["memory_gb"] = d["memory_gb"]
        if "disk_gb" in d:
            kw["disk_gb"] = d["disk_gb"]
        if "node_selector" in d:
            kw["node_selector"] = d["node_selector"]
        if "command" in d:
            kw["command"] = d["command"]
        if "env" in d:
            kw["env"] = d["env"]
        if "pricing" in d:
            kw["pricing"] = d["pricing"]
        if "priority" in d:
            kw["priority"] = d["priority"]
        if "queue" in d:
            kw["queue"] = d["queue"]
        if "max_runtime_s" in d:
            kw["max_runtime_s"] = d["max_runtime_s"]
        if "reservation_id" in d:
            kw["reservation_id"] = d["reservation_id"]
        if "image" in d:
            kw["image"] = d["image"]
        if "volumes" in d:
            v = d["volumes"]
            kw["volumes"] = (None if v is None else [VolumeMount.from_dict(x0) for x0 in v])
        if "template" in d:
            kw["template"] = d["template"]
        if "runtime" in d:
            kw["runtime"] = d["runtime"]
        if "services" in d:
            kw["services"] = d["services"]
        if "ssh_keys" in d:
            kw["ssh_keys"] = d["ssh_keys"]
        if "restart_policy" in d:
            kw["restart_policy"] = d["restart_policy"]
        if "max_price_micros" in d:
            kw["max_price_micros"] = d["max_price_micros"]
        if "workdir" in d:
            kw["workdir"] = d["workdir"]
        if "wait_for_capacity" in d:
            kw["wait_for_capacity"] = d["wait_for_capacity"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        if self.gpu_type is not None:
            out["gpu_type"] = self.gpu_type
        if self.gpu_types is not None:
            out["gpu_types"] = self.gpu_types
        if self.min_gpu_memory_gb is not None:
            out["min_gpu_memory_gb"] = self.min_gpu_memory_gb
        if self.gpu_count is not None:
            out["gpu_count"] = self.gpu_count
        if self.gpu_milli is not None:
            out["gpu_milli"] = self.gpu_milli
        if self.gpu_memory_gb is not None:
            out["gpu_memory_gb"] = self.gpu_memory_gb
        if self.cpu is not None:
            out["cpu"] = self.cpu
        if self.memory_gb is not None:
            out["memory_gb"] = self.memory_gb
        if self.disk_gb is not None:
            out["disk_gb"] = self.disk_gb
        if self.node_selector is not None:
            out["node_selector"] = self.node_selector
        if self.command is not None:
            out["command"] = self.command
        if self.env is not None:
            out["env"] = self.env
        if self.pricing is not None:
            out["pricing"] = self.pricing
        if self.priority is not None:
            out["priority"] = self.priority
        if self.queue is not None:
            out["queue"] = self.queue
        if self.max_runtime_s is not None:
            out["max_runtime_s"] = self.max_runtime_s
        if self.reservation_id is not None:
            out["reservation_id"] = self.reservation_id
        if self.image is not None:
            out["image"] = self.image
        if self.volumes is not None:
            v = self.volumes
            out["volumes"] = (None if v is None else [x0.to_dict() for x0 in v])
        if self.template is not None:
            out["template"] = self.template
        if self.runtime is not None:
            out["runtime"] = self.runtime
        if self.services is not None:
            out["services"] = self.services
        if self.ssh_keys is not None:
            out["ssh_keys"] = self.ssh_keys
        if self.restart_policy is not None:
            out["restart_policy"] = self.restart_policy
        if self.max_price_micros is not None:
            out["max_price_micros"] = self.max_price_micros
        if self.workdir is not None:
            out["workdir"] = self.workdir
        if self.wait_for_capacity is not None:
            out["wait_for_capacity"] = self.wait_for_capacity
        return out


@dataclass(frozen=True)
class InstanceList:
    items: list[Instance]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InstanceList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Instance.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class InstanceStart:
    anywhere: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InstanceStart":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "anywhere" in d:
            kw["anywhere"] = d["anywhere"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.anywhere is not None:
            out["anywhere"] = self.anywhere
        return out


@dataclass(frozen=True)
class Invoice:
    id: str
    tenant_id: str
    period_start: str
    period_end: str
    currency: str
    opening_balance_micros: int
    charges_micros: int
    credits_micros: int
    payments_micros: int
    closing_balance_micros: int
    lines: list[InvoiceLine]
    prepaid: list[InvoiceLine]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Invoice":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["period_start"] = _required(d, "period_start", cls.__name__)
        kw["period_end"] = _required(d, "period_end", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        kw["opening_balance_micros"] = _required(d, "opening_balance_micros", cls.__name__)
        kw["charges_micros"] = _required(d, "charges_micros", cls.__name__)
        kw["credits_micros"] = _required(d, "credits_micros", cls.__name__)
        kw["payments_micros"] = _required(d, "payments_micros", cls.__name__)
        kw["closing_balance_micros"] = _required(d, "closing_balance_micros", cls.__name__)
        v = _required(d, "lines", cls.__name__)
        kw["lines"] = [InvoiceLine.from_dict(x0) for x0 in v]
        v = _required(d, "prepaid", cls.__name__)
        kw["prepaid"] = [InvoiceLine.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["tenant_id"] = self.tenant_id
        out["period_start"] = self.period_start
        out["period_end"] = self.period_end
        out["currency"] = self.currency
        out["opening_balance_micros"] = self.opening_balance_micros
        out["charges_micros"] = self.charges_micros
        out["credits_micros"] = self.credits_micros
        out["payments_micros"] = self.payments_micros
        out["closing_balance_micros"] = self.closing_balance_micros
        v = self.lines
        out["lines"] = [x0.to_dict() for x0 in v]
        v = self.prepaid
        out["prepaid"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class InvoiceLine:
    category: Literal["gpu_time", "storage", "packages", "credits", "payments", "refunds", "other", "package_usage"]
    description: str
    quantity: int
    unit: str
    amount_micros: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InvoiceLine":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["category"] = _required(d, "category", cls.__name__)
        kw["description"] = _required(d, "description", cls.__name__)
        kw["quantity"] = _required(d, "quantity", cls.__name__)
        kw["unit"] = _required(d, "unit", cls.__name__)
        kw["amount_micros"] = _required(d, "amount_micros", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["category"] = self.category
        out["description"] = self.description
        out["quantity"] = self.quantity
        out["unit"] = self.unit
        out["amount_micros"] = self.amount_micros
        return out


@dataclass(frozen=True)
class InvoiceSummary:
    id: str
    tenant_id: str
    period_start: str
    period_end: str
    currency: str
    opening_balance_micros: int
    charges_micros: int
    credits_micros: int
    payments_micros: int
    closing_balance_micros: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InvoiceSummary":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["period_start"] = _required(d, "period_start", cls.__name__)
        kw["period_end"] = _required(d, "period_end", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        kw["opening_balance_micros"] = _required(d, "opening_balance_micros", cls.__name__)
        kw["charges_micros"] = _required(d, "charges_micros", cls.__name__)
        kw["credits_micros"] = _required(d, "credits_micros", cls.__name__)
        kw["payments_micros"] = _required(d, "payments_micros", cls.__name__)
        kw["closing_balance_micros"] = _required(d, "closing_balance_micros", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["tenant_id"] = self.tenant_id
        out["period_start"] = self.period_start
        out["period_end"] = self.period_end
        out["currency"] = self.currency
        out["opening_balance_micros"] = self.opening_balance_micros
        out["charges_micros"] = self.charges_micros
        out["credits_micros"] = self.credits_micros
        out["payments_micros"] = self.payments_micros
        out["closing_balance_micros"] = self.closing_balance_micros
        return out


@dataclass(frozen=True)
class Job:
    id: str
    name: str
    tenant_id: str
    state: JobState
    gpu_type: str
    gpu_types: list[str]
    min_gpu_memory_gb: int
    gpu_count: int
    gpu_milli: int
    gpu_memory_gb: int
    cpu: int
    memory_gb: int
    disk_gb: int
    node_selector: dict[str, str]
    command: list[str]
    env: dict[str, str]
    pricing: PricingModel
    reservation_id: Optional[str]
    image: Optional[str]
    priority: int
    max_runtime_s: Optional[int]
    nodes: int
    array: int
    retries: int
    created_at: str
    started_at: Optional[str]
    ended_at: Optional[str]
    reason: str
    task_counts: dict[str, int]
    services: list[str]
    ssh_keys: list[str]
    restart_policy: Literal["on_node_failure", "never"]
    max_price_micros: Optional[int]
    workdir: Optional[str]
    template: Optional[str]
    process_command: list[str]
    volumes: list[VolumeMount]
    runtime: Literal["process", "container", "auto", "vm"]
    tasks: Optional[list[JobTask]] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Job":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        v = _required(d, "gpu_types", cls.__name__)
        kw["gpu_types"] = list(v)
        kw["min_gpu_memory_gb"] = _required(d, "min_gpu_memory_gb", cls.__name__)
        kw["gpu_count"] = _required(d, "gpu_count", cls.__name__)
        kw["gpu_milli"] = _required(d, "gpu_milli", cls.__name__)
        kw["gpu_memory_gb"] = _required(d, "gpu_memory_gb", cls.__name__)
        kw["cpu"] = _required(d, "cpu", cls.__name__)
        kw["memory_gb"] = _required(d, "memory_gb", cls.__name__)
        kw["disk_gb"] = _required(d, "disk_gb", cls.__name__)
        v = _required(d, "node_selector", cls.__name__)
        kw["node_selector"] = dict(v)
        v = _required(d, "command", cls.__name__)
        kw["command"] = list(v)
        v = _required(d, "env", cls.__name__)
        kw["env"] = dict(v)
        kw["pricing"] = _required(d, "pricing", cls.__name__)
        kw["reservation_id"] = _required(d, "reservation_id", cls.__name__)
        kw["image"] = _required(d, "image", cls.__name__)
        kw["priority"] = _required(d, "priority", cls.__name__)
        kw["max_runtime_s"] = _required(d, "max_runtime_s", cls.__name__)
        kw["nodes"] = _required(d, "nodes", cls.__name__)
        kw["array"] = _required(d, "array", cls.__name__)
        kw["retries"] = _required(d, "retries", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        kw["started_at"] = _required(d, "started_at", cls.__name__)
        kw["ended_at"] = _required(d, "ended_at", cls.__name__)
        kw["reason"] = _required(d, "reason", cls.__name__)
        v = _required(d, "task_counts", cls.__name__)
        kw["task_counts"] = dict(v)
        v = _required(d, "services", cls.__name__)
        kw["services"] = list(v)
        v = _required(d, "ssh_keys", cls.__name__)
        kw["ssh_keys"] = list(v)
        kw["restart_policy"] = _required(d, "restart_policy", cls.__name__)
        kw["max_price_micros"] = _required(d, "max_price_micros", cls.__name__)
        kw["workdir"] = _required(d, "workdir", cls.__name__)
        kw["template"] = _required(d, "template", cls.__name__)
        v = _required(d, "process_command", cls.__name__)
        kw["process_command"] = list(v)
        v = _required(d, "volumes", cls.__name__)
        kw["volumes"] = [VolumeMount.from_dict(x0) for x0 in v]
        kw["runtime"] = _required(d, "runtime", cls.__name__)
        if "tasks" in d:
            v = d["tasks"]
            kw["tasks"] = (None if v is None else [JobTask.from_dict(x0) for x0 in v])
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["name"] = self.name
        out["tenant_id"] = self.tenant_id
        out["state"] = self.state
        out["gpu_type"] = self.gpu_type
        v = self.gpu_types
        out["gpu_types"] = list(v)
        out["min_gpu_memory_gb"] = self.min_gpu_memory_gb
        out["gpu_count"] = self.gpu_count
        out["gpu_milli"] = self.gpu_milli
        out["gpu_memory_gb"] = self.gpu_memory_gb
        out["cpu"] = self.cpu
        out["memory_gb"] = self.memory_gb
        out["disk_gb"] = self.disk_gb
        v = self.node_selector
        out["node_selector"] = dict(v)
        v = self.command
        out["command"] = list(v)
        v = self.env
        out["env"] = dict(v)
        out["pricing"] = self.pricing
        out["reservation_id"] = self.reservation_id
        out["image"] = self.image
        out["priority"] = self.priority
        out["max_runtime_s"] = self.max_runtime_s
        out["nodes"] = self.nodes
        out["array"] = self.array
        out["retries"] = self.retries
        out["created_at"] = self.created_at
        out["started_at"] = self.started_at
        out["ended_at"] = self.ended_at
        out["reason"] = self.reason
        v = self.task_counts
        out["task_counts"] = dict(v)
        v = self.services
        out["services"] = list(v)
        v = self.ssh_keys
        out["ssh_keys"] = list(v)
        out["restart_policy"] = self.restart_policy
        out["max_price_micros"] = self.max_price_micros
        out["workdir"] = self.workdir
        out["template"] = self.template
        v = self.process_command
        out["process_command"] = list(v)
        v = self.volumes
        out["volumes"] = [x0.to_dict() for x0 in v]
        out["runtime"] = self.runtime
        if self.tasks is not None:
            v = self.tasks
            out["tasks"] = (None if v is None else [x0.to_dict() for x0 in v])
        return out


@dataclass(frozen=True)
class JobCreate:
    "What each member of the job runs (an instance's fields, less queue: jobs always wait for room) and the job's shape."

    command: Union[str, list[str]]
    name: Optional[str] = None
    gpu_type: Optional[str] = None
    gpu_types: Optional[list[str]] = None
    min_gpu_memory_gb: Optional[int] = None
    gpu_count: Optional[int] = None
    gpu_milli: Optional[int] = None
    gpu_memory_gb: Optional[int] = None
    cpu: Optional[int] = None
    memory_gb: Optional[int] = None
    disk_gb: Optional[int] = None
    node_selector: Optional[dict[str, str]] = None
    env: Optional[dict[str, str]] = None
    pricing: Optional[Literal["on_demand", "spot", "reserved"]] = None
    priority: Optional[int] = None
    max_runtime_s: Optional[int] = None
    reservation_id: Optional[str] = None
    image: Optional[str] = None
    nodes: Optional[int] = None
    array: Optional[int] = None
    retries: Optional[int] = None
    volumes: Optional[list[VolumeMount]] = None
    template: Optional[str] = None
    runtime: Optional[Literal["auto", "process", "container", "vm"]] = None
    services: Optional[list[str]] = None
    ssh_keys: Optional[list[str]] = None
    restart_policy: Optional[Literal["on_node_failure", "never"]] = None
    max_price_micros: Optional[int] = None
    workdir: Optional[str] = None
    queue: Optional[bool] = None
    wait_for_capacity: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["command"] = _required(d, "command", cls.__name__)
        if "name" in d:
            kw["name"] = d["name"]
        if "gpu_type" in d:
            kw["gpu_type"] = d["gpu_type"]
        if "gpu_types" in d:
            kw["gpu_types"] = d["gpu_types"]
        if "min_gpu_memory_gb" in d:
            kw["min_gpu_memory_gb"] = d["min_gpu_memory_gb"]
        if "gpu_count" in d:
            kw["gpu_count"] = d["gpu_count"]
        if "gpu_milli" in d:
            kw["gpu_milli"] = d["gpu_milli"]
        if "gpu_memory_gb" in d:
            kw["gpu_memory_gb"] = d["gpu_memory_gb"]
        if "cpu" in d:
            kw["cpu"] = d["cpu"]
        if "memory_gb" in d:
            kw["memory_gb"] = d["memory_gb"]
        if "disk_gb" in d:
            kw["disk_gb"] = d["disk_gb"]
        if "node_selector" in d:
            kw["node_selector"] = d["node_selector"]
        if "env" in d:
            kw["env"] = d["env"]
        if "pricing" in d:
            kw["pricing"] = d["pricing"]
        if "priority" in d:
            kw["priority"] = d["priority"]
        if "max_runtime_s" in d:
            kw["max_runtime_s"] = d["max_runtime_s"]
        if "reservation_id" in d:
            kw["reservation_id"] = d["reservation_id"]
        if "image" in d:
            kw["image"] = d["image"]
        if "nodes" in d:
            kw["nodes"] = d["nodes"]
        if "array" in d:
            kw["array"] = d["array"]
        if "retries" in d:
            kw["retries"] = d["retries"]
        if "volumes" in d:
            v = d["volumes"]
            kw["volumes"] = (None if v is None else [VolumeMount.from_dict(x0) for x0 in v])
        if "template" in d:
            kw["template"] = d["template"]
        if "runtime" in d:
            kw["runtime"] = d["runtime"]
        if "services" in d:
            kw["services"] = d["services"]
        if "ssh_keys" in d:
            kw["ssh_keys"] = d["ssh_keys"]
        if "restart_policy" in d:
            kw["restart_policy"] = d["restart_policy"]
        if "max_price_micros" in d:
            kw["max_price_micros"] = d["max_price_micros"]
        if "workdir" in d:
            kw["workdir"] = d["workdir"]
        if "queue" in d:
            kw["queue"] = d["queue"]
        if "wait_for_capacity" in d:
            kw["wait_for_capacity"] = d["wait_for_capacity"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["command"] = self.command
        if self.name is not None:
            out["name"] = self.name
        if self.gpu_type is not None:
            out["gpu_type"] = self.gpu_type
        if self.gpu_types is not None:
            out["gpu_types"] = self.gpu_types
        if self.min_gpu_memory_gb is not None:
            out["min_gpu_memory_gb"] = self.min_gpu_memory_gb
        if self.gpu_count is not None:
            out["gpu_count"] = self.gpu_count
        if self.gpu_milli is not None:
            out["gpu_milli"] = self.gpu_milli
        if self.gpu_memory_gb is not None:
            out["gpu_memory_gb"] = self.gpu_memory_gb
        if self.cpu is not None:
            out["cpu"] = self.cpu
        if self.memory_gb is not None:
            out["memory_gb"] = self.memory_gb
        if self.disk_gb is not None:
            out["disk_gb"] = self.disk_gb
        if self.node_selector is not None:
            out["node_selector"] = self.node_selector
        if self.env is not None:
            out["env"] = self.env
        if self.pricing is not None:
            out["pricing"] = self.pricing
        if self.priority is not None:
            out["priority"] = self.priority
        if self.max_runtime_s is not None:
            out["max_runtime_s"] = self.max_runtime_s
        if self.reservation_id is not None:
            out["reservation_id"] = self.reservation_id
        if self.image is not None:
            out["image"] = self.image
        if self.nodes is not None:
            out["nodes"] = self.nodes
        if self.array is not None:
            out["array"] = self.array
        if self.retries is not None:
            out["retries"] = self.retries
        if self.volumes is not None:
            v = self.volumes
            out["volumes"] = (None if v is None else [x0.to_dict() for x0 in v])
        if self.template is not None:
            out["template"] = self.template
        if self.runtime is not None:
            out["runtime"] = self.runtime
        if self.services is not None:
            out["services"] = self.services
        if self.ssh_keys is not None:
            out["ssh_keys"] = self.ssh_keys
        if self.restart_policy is not None:
            out["restart_policy"] = self.restart_policy
        if self.max_price_micros is not None:
            out["max_price_micros"] = self.max_price_micros
        if self.workdir is not None:
            out["workdir"] = self.workdir
        if self.queue is not None:
            out["queue"] = self.queue
        if self.wait_for_capacity is not None:
            out["wait_for_capacity"] = self.wait_for_capacity
        return out


@dataclass(frozen=True)
class JobList:
    items: list[Job]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Job.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class JobMemberPlacement:
    "a job member's place in its job; the agent gives the process GPURENT_JOB_ID, GPURENT_ARRAY_INDEX and _SIZE and torchrun's variables from it (docs/scheduler.md, Jobs)"

    id: str
    index: int
    array_size: int
    nodes: int
    rank: int
    gpus_per_node: int
    master_addr: str
    master_port: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobMemberPlacement":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["index"] = _required(d, "index", cls.__name__)
        kw["array_size"] = _required(d, "array_size", cls.__name__)
        kw["nodes"] = _required(d, "nodes", cls.__name__)
        kw["rank"] = _required(d, "rank", cls.__name__)
        kw["gpus_per_node"] = _required(d, "gpus_per_node", cls.__name__)
        kw["master_addr"] = _required(d, "master_addr", cls.__name__)
        kw["master_port"] = _required(d, "master_port", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["index"] = self.index
        out["array_size"] = self.array_size
        out["nodes"] = self.nodes
        out["rank"] = self.rank
        out["gpus_per_node"] = self.gpus_per_node
        out["master_addr"] = self.master_addr
        out["master_port"] = self.master_port
        return out


@dataclass(frozen=True)
class JobTask:
    index: int
    state: JobState
    attempts: int
    exit_code: Optional[int]
    instances: list[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobTask":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["index"] = _required(d, "index", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        kw["attempts"] = _required(d, "attempts", cls.__name__)
        kw["exit_code"] = _required(d, "exit_code", cls.__name__)
        v = _required(d, "instances", cls.__name__)
        kw["instances"] = list(v)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["index"] = self.index
        out["state"] = self.state
        out["attempts"] = self.attempts
        out["exit_code"] = self.exit_code
        v = self.instances
        out["instances"] = list(v)
        return out


@dataclass(frozen=True)
class JoinToken:
    id: str
    token: str
    description: str
    expires_at: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JoinToken":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["token"] = _required(d, "token", cls.__name__)
        kw["description"] = _required(d, "description", cls.__name__)
        kw["expires_at"] = _required(d, "expires_at", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["token"] = self.token
        out["description"] = self.description
        out["expires_at"] = self.expires_at
        return out


@dataclass(frozen=True)
class JoinTokenCreate:
    description: Optional[str] = None
    ttl_s: Optional[int] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JoinTokenCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "description" in d:
            kw["description"] = d["description"]
        if "ttl_s" in d:
            kw["ttl_s"] = d["ttl_s"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.description is not None:
            out["description"] = self.description
        if self.ttl_s is not None:
            out["ttl_s"] = self.ttl_s
        return out


@dataclass(frozen=True)
class LogSize:
    size: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LogSize":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["size"] = _required(d, "size", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["size"] = self.size
        return out


@dataclass(frozen=True)
class MetricSeries:
    metric: str
    dcgm_name: str
    unit: str
    aggregation: str
    resolution: Literal["raw", "minute", "hour"]
    step_s: float
    gpus: list[str]
    points: list[MetricSeriesPointsItem]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MetricSeries":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["metric"] = _required(d, "metric", cls.__name__)
        kw["dcgm_name"] = _required(d, "dcgm_name", cls.__name__)
        kw["unit"] = _required(d, "unit", cls.__name__)
        kw["aggregation"] = _required(d, "aggregation", cls.__name__)
        kw["resolution"] = _required(d, "resolution", cls.__name__)
        kw["step_s"] = _required(d, "step_s", cls.__name__)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = list(v)
        v = _required(d, "points", cls.__name__)
        kw["points"] = [MetricSeriesPointsItem.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["metric"] = self.metric
        out["dcgm_name"] = self.dcgm_name
        out["unit"] = self.unit
        out["aggregation"] = self.aggregation
        out["resolution"] = self.resolution
        out["step_s"] = self.step_s
        v = self.gpus
        out["gpus"] = list(v)
        v = self.points
        out["points"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class MetricSeriesPointsItem:
    t: str
    value: float
    series: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MetricSeriesPointsItem":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["t"] = _required(d, "t", cls.__name__)
        kw["value"] = _required(d, "value", cls.__name__)
        kw["series"] = _required(d, "series", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["t"] = self.t
        out["value"] = self.value
        out["series"] = self.series
        return out


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    state: Literal["ready", "down"]
    gpu_count: int
    free_gpus: int
    gpus: list[NodeGpu]
    cpu_count: int
    memory_mb: int
    simulated: bool
    isolation: Literal["sandbox", "none"]
    isolation_note: str
    container_runtime: bool
    container_toolkit: Optional[ContainerToolkit]
    registered_from: str
    agent_version: str
    registered_at: str
    last_heartbeat: str
    clock_skew_ms: Optional[int]
    cordoned: bool
    schedulable: bool
    disk_gb: int
    fabric_group: str
    labels: dict[str, str]
    benchmark_pending: Optional[BenchmarkRequest]
    status: Literal["ready", "degraded", "draining", "cordoned", "down"]
    quarantined_gpus: list[GpuQuarantine]
    vm: Optional[VmCapability]
    moving_instances: Optional[int] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Node":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        kw["gpu_count"] = _required(d, "gpu_count", cls.__name__)
        kw["free_gpus"] = _required(d, "free_gpus", cls.__name__)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = [NodeGpu.from_dict(x0) for x0 in v]
        kw["cpu_count"] = _required(d, "cpu_count", cls.__name__)
        kw["memory_mb"] = _required(d, "memory_mb", cls.__name__)
        kw["simulated"] = _required(d, "simulated", cls.__name__)
        kw["isolation"] = _required(d, "isolation", cls.__name__)
        kw["isolation_note"] = _required(d, "isolation_note", cls.__name__)
        kw["container_runtime"] = _required(d, "container_runtime", cls.__name__)
        v = _required(d, "container_toolkit", cls.__name__)
        kw["container_toolkit"] = (None if v is None else ContainerToolkit.from_dict(v))
        kw["registered_from"] = _required(d, "registered_from", cls.__name__)
        kw["agent_version"] = _required(d, "agent_version", cls.__name__)
        kw["registered_at"] = _required(d, "registered_at", cls.__name__)
        kw["last_heartbeat"] = _required(d, "last_heartbeat", cls.__name__)
        kw["clock_skew_ms"] = _required(d, "clock_skew_ms", cls.__name__)
        kw["cordoned"] = _required(d, "cordoned", cls.__name__)
        kw["schedulable"] = _required(d, "schedulable", cls.__name__)
        kw["disk_gb"] = _required(d, "disk_gb", cls.__name__)
        kw["fabric_group"] = _required(d, "fabric_group", cls.__name__)
        v = _required(d, "labels", cls.__name__)
        kw["labels"] = dict(v)
        v = _required(d, "benchmark_pending", cls.__name__)
        kw["benchmark_pending"] = (None if v is None else BenchmarkRequest.from_dict(v))
        kw["status"] = _required(d, "status", cls.__name__)
        v = _required(d, "quarantined_gpus", cls.__name__)
        kw["quarantined_gpus"] = [GpuQuarantine.from_dict(x0) for x0 in v]
        v = _required(d, "vm", cls.__name__)
        kw["vm"] = (None if v is None else VmCapability.from_dict(v))
        if "moving_instances" in d:
            kw["moving_instances"] = d["moving_instances"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["name"] = self.name
        out["state"] = self.state
        out["gpu_count"] = self.gpu_count
        out["free_gpus"] = self.free_gpus
        v = self.gpus
        out["gpus"] = [x0.to_dict() for x0 in v]
        out["cpu_count"] = self.cpu_count
        out["memory_mb"] = self.memory_mb
        out["simulated"] = self.simulated
        out["isolation"] = self.isolation
        out["isolation_note"] = self.isolation_note
        out["container_runtime"] = self.container_runtime
        v = self.container_toolkit
        out["container_toolkit"] = (None if v is None else v.to_dict())
        out["registered_from"] = self.registered_from
        out["agent_version"] = self.agent_version
        out["registered_at"] = self.registered_at
        out["last_heartbeat"] = self.last_heartbeat
        out["clock_skew_ms"] = self.clock_skew_ms
        out["cordoned"] = self.cordoned
        out["schedulable"] = self.schedulable
        out["disk_gb"] = self.disk_gb
        out["fabric_group"] = self.fabric_group
        v = self.labels
        out["labels"] = dict(v)
        v = self.benchmark_pending
        out["benchmark_pending"] = (None if v is None else v.to_dict())
        out["status"] = self.status
        v = self.quarantined_gpus
        out["quarantined_gpus"] = [x0.to_dict() for x0 in v]
        v = self.vm
        out["vm"] = (None if v is None else v.to_dict())
        if self.moving_instances is not None:
            out["moving_instances"] = self.moving_instances
        return out


@dataclass(frozen=True)
class NodeGpu:
    "a GPU of the node: what it is (Gpu's members but pcie_switch and numa_node), who holds it, and what it last reported"

    uuid: str
    index: int
    type: str
    name: str
    memory_mb: int
    nvlink_domain: int
    instance_id: Optional[str]
    instance_ids: list[str]
    telemetry: Optional[GpuTelemetry]
    quarantined: bool
    benchmark: Optional[GpuBenchmark]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NodeGpu":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["uuid"] = _required(d, "uuid", cls.__name__)
        kw["index"] = _required(d, "index", cls.__name__)
        kw["type"] = _required(d, "type", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["memory_mb"] = _required(d, "memory_mb", cls.__name__)
        kw["nvlink_domain"] = _required(d, "nvlink_domain", cls.__name__)
        kw["instance_id"] = _required(d, "instance_id", cls.__name__)
        v = _required(d, "instance_ids", cls.__name__)
        kw["instance_ids"] = list(v)
        v = _required(d, "telemetry", cls.__name__)
        kw["telemetry"] = (None if v is None else GpuTelemetry.from_dict(v))
        kw["quarantined"] = _required(d, "quarantined", cls.__name__)
        v = _required(d, "benchmark", cls.__name__)
        kw["benchmark"] = (None if v is None else GpuBenchmark.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["uuid"] = self.uuid
        out["index"] = self.index
        out["type"] = self.type
        out["name"] = self.name
        out["memory_mb"] = self.memory_mb
        out["nvlink_domain"] = self.nvlink_domain
        out["instance_id"] = self.instance_id
        v = self.instance_ids
        out["instance_ids"] = list(v)
        v = self.telemetry
        out["telemetry"] = (None if v is None else v.to_dict())
        out["quarantined"] = self.quarantined
        v = self.benchmark
        out["benchmark"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class NodeList:
    items: list[Node]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NodeList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Node.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class NodeRegistration:
    name: str
    gpus: list[Gpu]
    cpu_count: Optional[int] = None
    memory_mb: Optional[int] = None
    simulated: Optional[bool] = None
    agent_version: Optional[str] = None
    isolation: Optional[Literal["", "sandbox", "none"]] = None
    isolation_note: Optional[str] = None
    disk_gb: Optional[int] = None
    fabric_group: Optional[str] = None
    labels: Optional[dict[str, str]] = None
    container_runtime: Optional[bool] = None
    address: Optional[str] = None
    benchmarks: Optional[bool] = None
    vm: Optional[VmCapability] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NodeRegistration":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["name"] = _required(d, "name", cls.__name__)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = [Gpu.from_dict(x0) for x0 in v]
        if "cpu_count" in d:
            kw["cpu_count"] = d["cpu_count"]
        if "memory_mb" in d:
            kw["memory_mb"] = d["memory_mb"]
        if "simulated" in d:
            kw["simulated"] = d["simulated"]
        if "agent_version" in d:
            kw["agent_version"] = d["agent_version"]
        if "isolation" in d:
            kw["isolation"] = d["isolation"]
        if "isolation_note" in d:
            kw["isolation_note"] = d["isolation_note"]
        if "disk_gb" in d:
            kw["disk_gb"] = d["disk_gb"]
        if "fabric_group" in d:
            kw["fabric_group"] = d["fabric_group"]
        if "labels" in d:
            kw["labels"] = d["labels"]
        if "container_runtime" in d:
            kw["container_runtime"] = d["container_runtime"]
        if "address" in d:
            kw["address"] = d["address"]
        if "benchmarks" in d:
            kw["benchmarks"] = d["benchmarks"]
        if "vm" in d:
            v = d["vm"]
            kw["vm"] = (None if v is None else VmCapability.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["name"] = self.name
        v = self.gpus
        out["gpus"] = [x0.to_dict() for x0 in v]
        if self.cpu_count is not None:
            out["cpu_count"] = self.cpu_count
        if self.memory_mb is not None:
            out["memory_mb"] = self.memory_mb
        if self.simulated is not None:
            out["simulated"] = self.simulated
        if self.agent_version is not None:
            out["agent_version"] = self.agent_version
        if self.isolation is not None:
            out["isolation"] = self.isolation
        if self.isolation_note is not None:
            out["isolation_note"] = self.isolation_note
        if self.disk_gb is not None:
            out["disk_gb"] = self.disk_gb
        if self.fabric_group is not None:
            out["fabric_group"] = self.fabric_group
        if self.labels is not None:
            out["labels"] = self.labels
        if self.container_runtime is not None:
            out["container_runtime"] = self.container_runtime
        if self.address is not None:
            out["address"] = self.address
        if self.benchmarks is not None:
            out["benchmarks"] = self.benchmarks
        if self.vm is not None:
            v = self.vm
            out["vm"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class NodeReport:
    applied_generation: int
    workloads: list[WorkloadStatus]
    telemetry: Optional[str] = None
    container_runtime: Optional[bool] = None
    container_toolkit: Optional[ContainerToolkit] = None
    node_api_address: Optional[str] = None
    node_api_secret: Optional[str] = None
    sent_at_ms: Optional[int] = None
    benchmark: Optional[AgentBenchmarkOutcome] = None
    vm: Optional[VmCapability] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NodeReport":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["applied_generation"] = _required(d, "applied_generation", cls.__name__)
        v = _required(d, "workloads", cls.__name__)
        kw["workloads"] = [WorkloadStatus.from_dict(x0) for x0 in v]
        if "telemetry" in d:
            kw["telemetry"] = d["telemetry"]
        if "container_runtime" in d:
            kw["container_runtime"] = d["container_runtime"]
        if "container_toolkit" in d:
            v = d["container_toolkit"]
            kw["container_toolkit"] = (None if v is None else ContainerToolkit.from_dict(v))
        if "node_api_address" in d:
            kw["node_api_address"] = d["node_api_address"]
        if "node_api_secret" in d:
            kw["node_api_secret"] = d["node_api_secret"]
        if "sent_at_ms" in d:
            kw["sent_at_ms"] = d["sent_at_ms"]
        if "benchmark" in d:
            v = d["benchmark"]
            kw["benchmark"] = (None if v is None else AgentBenchmarkOutcome.from_dict(v))
        if "vm" in d:
            v = d["vm"]
            kw["vm"] = (None if v is None else VmCapability.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["applied_generation"] = self.applied_generation
        v = self.workloads
        out["workloads"] = [x0.to_dict() for x0 in v]
        if self.telemetry is not None:
            out["telemetry"] = self.telemetry
        if self.container_runtime is not None:
            out["container_runtime"] = self.container_runtime
        if self.container_toolkit is not None:
            v = self.container_toolkit
            out["container_toolkit"] = (None if v is None else v.to_dict())
        if self.node_api_address is not None:
            out["node_api_address"] = self.node_api_address
        if self.node_api_secret is not None:
            out["node_api_secret"] = self.node_api_secret
        if self.sent_at_ms is not None:
            out["sent_at_ms"] = self.sent_at_ms
        if self.benchmark is not None:
            v = self.benchmark
            out["benchmark"] = (None if v is None else v.to_dict())
        if self.vm is not None:
            v = self.vm
            out["vm"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class Offer:
    gpu_type: str
    display_name: str
    memory_mb: int
    total: int
    free: int
    max_free_per_node: int
    price_per_gpu_hour_micros: Optional[int]
    spot_price_per_gpu_hour_micros: Optional[int]
    currency: str
    measured: Optional[OfferMeasured]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Offer":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["display_name"] = _required(d, "display_name", cls.__name__)
        kw["memory_mb"] = _required(d, "memory_mb", cls.__name__)
        kw["total"] = _required(d, "total", cls.__name__)
        kw["free"] = _required(d, "free", cls.__name__)
        kw["max_free_per_node"] = _required(d, "max_free_per_node", cls.__name__)
        kw["price_per_gpu_hour_micros"] = _required(d, "price_per_gpu_hour_micros", cls.__name__)
        kw["spot_price_per_gpu_hour_micros"] = _required(d, "spot_price_per_gpu_hour_micros", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        v = _required(d, "measured", cls.__name__)
        kw["measured"] = (None if v is None else OfferMeasured.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpu_type"] = self.gpu_type
        out["display_name"] = self.display_name
        out["memory_mb"] = self.memory_mb
        out["total"] = self.total
        out["free"] = self.free
        out["max_free_per_node"] = self.max_free_per_node
        out["price_per_gpu_hour_micros"] = self.price_per_gpu_hour_micros
        out["spot_price_per_gpu_hour_micros"] = self.spot_price_per_gpu_hour_micros
        out["currency"] = self.currency
        v = self.measured
        out["measured"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class OfferList:
    items: list[Offer]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OfferList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Offer.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class OfferMeasured:
    "what the type's GPUs measure: the median over the newest run of each GPU measured"

    gpus: int
    simulated: bool
    figures: Figures
    spread_percent: float
    perf_per_price: Optional[float]
    spot_perf_per_price: Optional[float]
    resnet50: Optional[OfferTraining]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OfferMeasured":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpus"] = _required(d, "gpus", cls.__name__)
        kw["simulated"] = _required(d, "simulated", cls.__name__)
        v = _required(d, "figures", cls.__name__)
        kw["figures"] = Figures.from_dict(v)
        kw["spread_percent"] = _required(d, "spread_percent", cls.__name__)
        kw["perf_per_price"] = _required(d, "perf_per_price", cls.__name__)
        kw["spot_perf_per_price"] = _required(d, "spot_perf_per_price", cls.__name__)
        v = _required(d, "resnet50", cls.__name__)
        kw["resnet50"] = (None if v is None else OfferTraining.from_dict(v))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpus"] = self.gpus
        out["simulated"] = self.simulated
        v = self.figures
        out["figures"] = v.to_dict()
        out["spread_percent"] = self.spread_percent
        out["perf_per_price"] = self.perf_per_price
        out["spot_perf_per_price"] = self.spot_perf_per_price
        v = self.resnet50
        out["resnet50"] = (None if v is None else v.to_dict())
        return out


@dataclass(frozen=True)
class OfferTraining:
    "what the type's GPUs train at: the median over the GPUs whose newest ResNet-50 run has the shape (batch, image size) of the type's newest"

    gpus: int
    model: Literal["resnet50"]
    batch: int
    image_size: int
    images_per_s: dict[str, float]
    images_per_price: Optional[float]
    spot_images_per_price: Optional[float]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OfferTraining":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpus"] = _required(d, "gpus", cls.__name__)
        kw["model"] = _required(d, "model", cls.__name__)
        kw["batch"] = _required(d, "batch", cls.__name__)
        kw["image_size"] = _required(d, "image_size", cls.__name__)
        v = _required(d, "images_per_s", cls.__name__)
        kw["images_per_s"] = dict(v)
        kw["images_per_price"] = _required(d, "images_per_price", cls.__name__)
        kw["spot_images_per_price"] = _required(d, "spot_images_per_price", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpus"] = self.gpus
        out["model"] = self.model
        out["batch"] = self.batch
        out["image_size"] = self.image_size
        v = self.images_per_s
        out["images_per_s"] = dict(v)
        out["images_per_price"] = self.images_per_price
        out["spot_images_per_price"] = self.spot_images_per_price
        return out


@dataclass(frozen=True)
class Package:
    id: str
    tenant_id: str
    product: str
    gpu_type: str
    gpu_hours: int
    remaining_gpu_seconds: int
    remaining_gpu_hours: float
    price_micros: int
    recognised_micros: int
    bought_at: str
    expires_at: str
    state: Literal["active", "used_up", "expired"]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Package":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["product"] = _required(d, "product", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["gpu_hours"] = _required(d, "gpu_hours", cls.__name__)
        kw["remaining_gpu_seconds"] = _required(d, "remaining_gpu_seconds", cls.__name__)
        kw["remaining_gpu_hours"] = _required(d, "remaining_gpu_hours", cls.__name__)
        kw["price_micros"] = _required(d, "price_micros", cls.__name__)
        kw["recognised_micros"] = _required(d, "recognised_micros", cls.__name__)
        kw["bought_at"] = _required(d, "bought_at", cls.__name__)
        kw["expires_at"] = _required(d, "expires_at", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["tenant_id"] = self.tenant_id
        out["product"] = self.product
        out["gpu_type"] = self.gpu_type
        out["gpu_hours"] = self.gpu_hours
        out["remaining_gpu_seconds"] = self.remaining_gpu_seconds
        out["remaining_gpu_hours"] = self.remaining_gpu_hours
        out["price_micros"] = self.price_micros
        out["recognised_micros"] = self.recognised_micros
        out["bought_at"] = self.bought_at
        out["expires_at"] = self.expires_at
        out["state"] = self.state
        return out


@dataclass(frozen=True)
class PackageProduct:
    name: str
    gpu_type: str
    gpu_hours: int
    price_micros: int
    validity_days: int
    currency: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PackageProduct":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["name"] = _required(d, "name", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["gpu_hours"] = _required(d, "gpu_hours", cls.__name__)
        kw["price_micros"] = _required(d, "price_micros", cls.__name__)
        kw["validity_days"] = _required(d, "validity_days", cls.__name__)
        if "currency" in d:
            kw["currency"] = d["currency"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["name"] = self.name
        out["gpu_type"] = self.gpu_type
        out["gpu_hours"] = self.gpu_hours
        out["price_micros"] = self.price_micros
        out["validity_days"] = self.validity_days
        if self.currency is not None:
            out["currency"] = self.currency
        return out


@dataclass(frozen=True)
class PackagePurchase:
    product: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PackagePurchase":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["product"] = _required(d, "product", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["product"] = self.product
        return out


@dataclass(frozen=True)
class PeerCopy:
    to: int
    gbps: float

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PeerCopy":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["to"] = _required(d, "to", cls.__name__)
        kw["gbps"] = _required(d, "gbps", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["to"] = self.to
        out["gbps"] = self.gbps
        return out


@dataclass(frozen=True)
class PriceChange:
    "what changes; the rest is carried over from the version in force at effective_at"

    effective_at: Optional[str] = None
    currency: Optional[str] = None
    gpu_per_hour_micros: Optional[dict[str, Optional[int]]] = None
    cpu_per_core_hour_micros: Optional[int] = None
    memory_per_gb_hour_micros: Optional[int] = None
    disk_per_gb_hour_micros: Optional[int] = None
    storage_per_gb_month_micros: Optional[int] = None
    egress_per_gb_micros: Optional[int] = None
    minimum_billed_seconds: Optional[int] = None
    spot_floor_permille: Optional[int] = None
    reserved_discount_permille: Optional[dict[str, int]] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PriceChange":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "effective_at" in d:
            kw["effective_at"] = d["effective_at"]
        if "currency" in d:
            kw["currency"] = d["currency"]
        if "gpu_per_hour_micros" in d:
            kw["gpu_per_hour_micros"] = d["gpu_per_hour_micros"]
        if "cpu_per_core_hour_micros" in d:
            kw["cpu_per_core_hour_micros"] = d["cpu_per_core_hour_micros"]
        if "memory_per_gb_hour_micros" in d:
            kw["memory_per_gb_hour_micros"] = d["memory_per_gb_hour_micros"]
        if "disk_per_gb_hour_micros" in d:
            kw["disk_per_gb_hour_micros"] = d["disk_per_gb_hour_micros"]
        if "storage_per_gb_month_micros" in d:
            kw["storage_per_gb_month_micros"] = d["storage_per_gb_month_micros"]
        if "egress_per_gb_micros" in d:
            kw["egress_per_gb_micros"] = d["egress_per_gb_micros"]
        if "minimum_billed_seconds" in d:
            kw["minimum_billed_seconds"] = d["minimum_billed_seconds"]
        if "spot_floor_permille" in d:
            kw["spot_floor_permille"] = d["spot_floor_permille"]
        if "reserved_discount_permille" in d:
            kw["reserved_discount_permille"] = d["reserved_discount_permille"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.effective_at is not None:
            out["effective_at"] = self.effective_at
        if self.currency is not None:
            out["currency"] = self.currency
        if self.gpu_per_hour_micros is not None:
            out["gpu_per_hour_micros"] = self.gpu_per_hour_micros
        if self.cpu_per_core_hour_micros is not None:
            out["cpu_per_core_hour_micros"] = self.cpu_per_core_hour_micros
        if self.memory_per_gb_hour_micros is not None:
            out["memory_per_gb_hour_micros"] = self.memory_per_gb_hour_micros
        if self.disk_per_gb_hour_micros is not None:
            out["disk_per_gb_hour_micros"] = self.disk_per_gb_hour_micros
        if self.storage_per_gb_month_micros is not None:
            out["storage_per_gb_month_micros"] = self.storage_per_gb_month_micros
        if self.egress_per_gb_micros is not None:
            out["egress_per_gb_micros"] = self.egress_per_gb_micros
        if self.minimum_billed_seconds is not None:
            out["minimum_billed_seconds"] = self.minimum_billed_seconds
        if self.spot_floor_permille is not None:
            out["spot_floor_permille"] = self.spot_floor_permille
        if self.reserved_discount_permille is not None:
            out["reserved_discount_permille"] = self.reserved_discount_permille
        return out


@dataclass(frozen=True)
class PriceVersion:
    "a version of the price book (docs/billing.md)"

    version: int
    effective_at: str
    set_at: str
    currency: str
    gpu_per_hour_micros: dict[str, int]
    cpu_per_core_hour_micros: int
    memory_per_gb_hour_micros: int
    disk_per_gb_hour_micros: int
    storage_per_gb_month_micros: int
    egress_per_gb_micros: int
    minimum_billed_seconds: int
    spot_floor_permille: int
    reserved_discount_permille: dict[str, int]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PriceVersion":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["version"] = _required(d, "version", cls.__name__)
        kw["effective_at"] = _required(d, "effective_at", cls.__name__)
        kw["set_at"] = _required(d, "set_at", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        v = _required(d, "gpu_per_hour_micros", cls.__name__)
        kw["gpu_per_hour_micros"] = dict(v)
        kw["cpu_per_core_hour_micros"] = _required(d, "cpu_per_core_hour_micros", cls.__name__)
        kw["memory_per_gb_hour_micros"] = _required(d, "memory_per_gb_hour_micros", cls.__name__)
        kw["disk_per_gb_hour_micros"] = _required(d, "disk_per_gb_hour_micros", cls.__name__)
        kw["storage_per_gb_month_micros"] = _required(d, "storage_per_gb_month_micros", cls.__name__)
        kw["egress_per_gb_micros"] = _required(d, "egress_per_gb_micros", cls.__name__)
        kw["minimum_billed_seconds"] = _required(d, "minimum_billed_seconds", cls.__name__)
        kw["spot_floor_permille"] = _required(d, "spot_floor_permille", cls.__name__)
        v = _required(d, "reserved_discount_permille", cls.__name__)
        kw["reserved_discount_permille"] = dict(v)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["version"] = self.version
        out["effective_at"] = self.effective_at
        out["set_at"] = self.set_at
        out["currency"] = self.currency
        v = self.gpu_per_hour_micros
        out["gpu_per_hour_micros"] = dict(v)
        out["cpu_per_core_hour_micros"] = self.cpu_per_core_hour_micros
        out["memory_per_gb_hour_micros"] = self.memory_per_gb_hour_micros
        out["disk_per_gb_hour_micros"] = self.disk_per_gb_hour_micros
        out["storage_per_gb_month_micros"] = self.storage_per_gb_month_micros
        out["egress_per_gb_micros"] = self.egress_per_gb_micros
        out["minimum_billed_seconds"] = self.minimum_billed_seconds
        out["spot_floor_permille"] = self.spot_floor_permille
        v = self.reserved_discount_permille
        out["reserved_discount_permille"] = dict(v)
        return out


@dataclass(frozen=True)
class PriceVersionList:
    items: list[PriceVersion]
    next_cursor: Any

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PriceVersionList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [PriceVersion.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class Prices:
    current: PriceVersion
    upcoming: list[PriceVersion]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Prices":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "current", cls.__name__)
        kw["current"] = PriceVersion.from_dict(v)
        v = _required(d, "upcoming", cls.__name__)
        kw["upcoming"] = [PriceVersion.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.current
        out["current"] = v.to_dict()
        v = self.upcoming
        out["upcoming"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class Problem:
    "RFC 9457 problem details; every error answer has this shape"

    type: str
    title: str
    status: int
    code: str
    detail: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Problem":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["type"] = _required(d, "type", cls.__name__)
        kw["title"] = _required(d, "title", cls.__name__)
        kw["status"] = _required(d, "status", cls.__name__)
        kw["code"] = _required(d, "code", cls.__name__)
        kw["detail"] = _required(d, "detail", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["type"] = self.type
        out["title"] = self.title
        out["status"] = self.status
        out["code"] = self.code
        out["detail"] = self.detail
        return out


@dataclass(frozen=True)
class Quota:
    tenant_id: str
    max_gpus_per_type: dict[str, int]
    max_instances: Optional[int]
    max_queued: Optional[int]
    max_array: Optional[int]
    max_body_bytes: Optional[int]
    weight: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Quota":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        v = _required(d, "max_gpus_per_type", cls.__name__)
        kw["max_gpus_per_type"] = dict(v)
        kw["max_instances"] = _required(d, "max_instances", cls.__name__)
        kw["max_queued"] = _required(d, "max_queued", cls.__name__)
        kw["max_array"] = _required(d, "max_array", cls.__name__)
        kw["max_body_bytes"] = _required(d, "max_body_bytes", cls.__name__)
        kw["weight"] = _required(d, "weight", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        v = self.max_gpus_per_type
        out["max_gpus_per_type"] = dict(v)
        out["max_instances"] = self.max_instances
        out["max_queued"] = self.max_queued
        out["max_array"] = self.max_array
        out["max_body_bytes"] = self.max_body_bytes
        out["weight"] = self.weight
        return out


@dataclass(frozen=True)
class QuotaSet:
    "replaces the whole quota: a field left out is no limit (weight 1)"

    max_gpus_per_type: Optional[dict[str, int]] = None
    max_instances: Optional[int] = None
    max_queued: Optional[int] = None
    max_array: Optional[int] = None
    max_body_bytes: Optional[int] = None
    weight: Optional[int] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "QuotaSet":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "max_gpus_per_type" in d:
            kw["max_gpus_per_type"] = d["max_gpus_per_type"]
        if "max_instances" in d:
            kw["max_instances"] = d["max_instances"]
        if "max_queued" in d:
            kw["max_queued"] = d["max_queued"]
        if "max_array" in d:
            kw["max_array"] = d["max_array"]
        if "max_body_bytes" in d:
            kw["max_body_bytes"] = d["max_body_bytes"]
        if "weight" in d:
            kw["weight"] = d["weight"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.max_gpus_per_type is not None:
            out["max_gpus_per_type"] = self.max_gpus_per_type
        if self.max_instances is not None:
            out["max_instances"] = self.max_instances
        if self.max_queued is not None:
            out["max_queued"] = self.max_queued
        if self.max_array is not None:
            out["max_array"] = self.max_array
        if self.max_body_bytes is not None:
            out["max_body_bytes"] = self.max_body_bytes
        if self.weight is not None:
            out["weight"] = self.weight
        return out


@dataclass(frozen=True)
class RegistrationResult:
    node_id: str
    credential: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RegistrationResult":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["node_id"] = _required(d, "node_id", cls.__name__)
        kw["credential"] = _required(d, "credential", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["node_id"] = self.node_id
        out["credential"] = self.credential
        return out


@dataclass(frozen=True)
class ReportResult:
    generation: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ReportResult":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["generation"] = _required(d, "generation", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["generation"] = self.generation
        return out


@dataclass(frozen=True)
class Reservation:
    id: str
    tenant_id: str
    gpu_type: str
    gpu_count: int
    start: str
    end: str
    state: ReservationState
    created_at: str
    payment: Literal["upfront", "monthly"]
    price_per_gpu_hour_micros: int
    discount_permille: int
    total_micros: int
    paid_micros: int
    refunded: bool
    currency: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Reservation":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["gpu_count"] = _required(d, "gpu_count", cls.__name__)
        kw["start"] = _required(d, "start", cls.__name__)
        kw["end"] = _required(d, "end", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        kw["payment"] = _required(d, "payment", cls.__name__)
        kw["price_per_gpu_hour_micros"] = _required(d, "price_per_gpu_hour_micros", cls.__name__)
        kw["discount_permille"] = _required(d, "discount_permille", cls.__name__)
        kw["total_micros"] = _required(d, "total_micros", cls.__name__)
        kw["paid_micros"] = _required(d, "paid_micros", cls.__name__)
        kw["refunded"] = _required(d, "refunded", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["tenant_id"] = self.tenant_id
        out["gpu_type"] = self.gpu_type
        out["gpu_count"] = self.gpu_count
        out["start"] = self.start
        out["end"] = self.end
        out["state"] = self.state
        out["created_at"] = self.created_at
        out["payment"] = self.payment
        out["price_per_gpu_hour_micros"] = self.price_per_gpu_hour_micros
        out["discount_permille"] = self.discount_permille
        out["total_micros"] = self.total_micros
        out["paid_micros"] = self.paid_micros
        out["refunded"] = self.refunded
        out["currency"] = self.currency
        return out


@dataclass(frozen=True)
class ReservationCreate:
    gpu_type: str
    gpu_count: int
    tenant_id: Optional[str] = None
    start: Optional[str] = None
    end: Optional[str] = None
    term_days: Optional[int] = None
    payment: Optional[Literal["upfront", "monthly"]] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ReservationCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["gpu_count"] = _required(d, "gpu_count", cls.__name__)
        if "tenant_id" in d:
            kw["tenant_id"] = d["tenant_id"]
        if "start" in d:
            kw["start"] = d["start"]
        if "end" in d:
            kw["end"] = d["end"]
        if "term_days" in d:
            kw["term_days"] = d["term_days"]
        if "payment" in d:
            kw["payment"] = d["payment"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpu_type"] = self.gpu_type
        out["gpu_count"] = self.gpu_count
        if self.tenant_id is not None:
            out["tenant_id"] = self.tenant_id
        if self.start is not None:
            out["start"] = self.start
        if self.end is not None:
            out["end"] = self.end
        if self.term_days is not None:
            out["term_days"] = self.term_days
        if self.payment is not None:
            out["payment"] = self.payment
        return out


@dataclass(frozen=True)
class ReservationList:
    items: list[Reservation]
    next_cursor: Any

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ReservationList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Reservation.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class RevenueReport:
    from_: str
    to: str
    currency: str
    total_micros: int
    credits_micros: int
    by_gpu_type: dict[str, int]
    by_tenant: dict[str, int]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RevenueReport":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["from_"] = _required(d, "from", cls.__name__)
        kw["to"] = _required(d, "to", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        kw["total_micros"] = _required(d, "total_micros", cls.__name__)
        kw["credits_micros"] = _required(d, "credits_micros", cls.__name__)
        v = _required(d, "by_gpu_type", cls.__name__)
        kw["by_gpu_type"] = dict(v)
        v = _required(d, "by_tenant", cls.__name__)
        kw["by_tenant"] = dict(v)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["from"] = self.from_
        out["to"] = self.to
        out["currency"] = self.currency
        out["total_micros"] = self.total_micros
        out["credits_micros"] = self.credits_micros
        v = self.by_gpu_type
        out["by_gpu_type"] = dict(v)
        v = self.by_tenant
        out["by_tenant"] = dict(v)
        return out


@dataclass(frozen=True)
class ServiceTicket:
    path: str
    expires_at: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ServiceTicket":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["path"] = _required(d, "path", cls.__name__)
        kw["expires_at"] = _required(d, "expires_at", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["path"] = self.path
        out["expires_at"] = self.expires_at
        return out


@dataclass(frozen=True)
class Session:
    "a console session: its secret travels only in the HttpOnly cookie gpurent_console"

    tenant_id: str
    key_id: str
    role: Role
    session_of: str
    csrf_token: str
    expires_at: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Session":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["key_id"] = _required(d, "key_id", cls.__name__)
        kw["role"] = _required(d, "role", cls.__name__)
        kw["session_of"] = _required(d, "session_of", cls.__name__)
        kw["csrf_token"] = _required(d, "csrf_token", cls.__name__)
        kw["expires_at"] = _required(d, "expires_at", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        out["key_id"] = self.key_id
        out["role"] = self.role
        out["session_of"] = self.session_of
        out["csrf_token"] = self.csrf_token
        out["expires_at"] = self.expires_at
        return out


@dataclass(frozen=True)
class SessionCreate:
    key: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SessionCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["key"] = _required(d, "key", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["key"] = self.key
        return out


@dataclass(frozen=True)
class SpotPricePoint:
    gpu_type: str
    at: str
    price_per_gpu_hour_micros: int
    utilisation_permille: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SpotPricePoint":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["at"] = _required(d, "at", cls.__name__)
        kw["price_per_gpu_hour_micros"] = _required(d, "price_per_gpu_hour_micros", cls.__name__)
        kw["utilisation_permille"] = _required(d, "utilisation_permille", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpu_type"] = self.gpu_type
        out["at"] = self.at
        out["price_per_gpu_hour_micros"] = self.price_per_gpu_hour_micros
        out["utilisation_permille"] = self.utilisation_permille
        return out


@dataclass(frozen=True)
class SpotPrices:
    items: list[SpotPricesItemsItem]
    currency: str
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SpotPrices":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [SpotPricesItemsItem.from_dict(x0) for x0 in v]
        kw["currency"] = _required(d, "currency", cls.__name__)
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["currency"] = self.currency
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class SpotPricesItemsItem:
    gpu_type: str
    current_per_gpu_hour_micros: int
    floor_per_gpu_hour_micros: int
    cap_per_gpu_hour_micros: int
    points: list[SpotPricePoint]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SpotPricesItemsItem":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["current_per_gpu_hour_micros"] = _required(d, "current_per_gpu_hour_micros", cls.__name__)
        kw["floor_per_gpu_hour_micros"] = _required(d, "floor_per_gpu_hour_micros", cls.__name__)
        kw["cap_per_gpu_hour_micros"] = _required(d, "cap_per_gpu_hour_micros", cls.__name__)
        v = _required(d, "points", cls.__name__)
        kw["points"] = [SpotPricePoint.from_dict(x0) for x0 in v]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["gpu_type"] = self.gpu_type
        out["current_per_gpu_hour_micros"] = self.current_per_gpu_hour_micros
        out["floor_per_gpu_hour_micros"] = self.floor_per_gpu_hour_micros
        out["cap_per_gpu_hour_micros"] = self.cap_per_gpu_hour_micros
        v = self.points
        out["points"] = [x0.to_dict() for x0 in v]
        return out


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    image: Optional[str]
    command: list[str]
    process_command: list[str]
    env: dict[str, str]
    services: list[str]
    recommended_gpu_memory_gb: int
    runtimes: list[Literal["process", "container"]]
    builtin: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Template":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["name"] = _required(d, "name", cls.__name__)
        kw["description"] = _required(d, "description", cls.__name__)
        kw["image"] = _required(d, "image", cls.__name__)
        v = _required(d, "command", cls.__name__)
        kw["command"] = list(v)
        v = _required(d, "process_command", cls.__name__)
        kw["process_command"] = list(v)
        v = _required(d, "env", cls.__name__)
        kw["env"] = dict(v)
        v = _required(d, "services", cls.__name__)
        kw["services"] = list(v)
        kw["recommended_gpu_memory_gb"] = _required(d, "recommended_gpu_memory_gb", cls.__name__)
        v = _required(d, "runtimes", cls.__name__)
        kw["runtimes"] = list(v)
        kw["builtin"] = _required(d, "builtin", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["name"] = self.name
        out["description"] = self.description
        out["image"] = self.image
        v = self.command
        out["command"] = list(v)
        v = self.process_command
        out["process_command"] = list(v)
        v = self.env
        out["env"] = dict(v)
        v = self.services
        out["services"] = list(v)
        out["recommended_gpu_memory_gb"] = self.recommended_gpu_memory_gb
        v = self.runtimes
        out["runtimes"] = list(v)
        out["builtin"] = self.builtin
        return out


@dataclass(frozen=True)
class TemplateList:
    items: list[Template]
    next_cursor: Any

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TemplateList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Template.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class TemplateSet:
    "give image, process_command or both"

    description: Optional[str] = None
    image: Optional[str] = None
    command: Optional[Union[str, list[str]]] = None
    process_command: Optional[Union[str, list[str]]] = None
    env: Optional[dict[str, str]] = None
    services: Optional[list[str]] = None
    recommended_gpu_memory_gb: Optional[int] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TemplateSet":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        if "description" in d:
            kw["description"] = d["description"]
        if "image" in d:
            kw["image"] = d["image"]
        if "command" in d:
            kw["command"] = d["command"]
        if "process_command" in d:
            kw["process_command"] = d["process_command"]
        if "env" in d:
            kw["env"] = d["env"]
        if "services" in d:
            kw["services"] = d["services"]
        if "recommended_gpu_memory_gb" in d:
            kw["recommended_gpu_memory_gb"] = d["recommended_gpu_memory_gb"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        if self.description is not None:
            out["description"] = self.description
        if self.image is not None:
            out["image"] = self.image
        if self.command is not None:
            out["command"] = self.command
        if self.process_command is not None:
            out["process_command"] = self.process_command
        if self.env is not None:
            out["env"] = self.env
        if self.services is not None:
            out["services"] = self.services
        if self.recommended_gpu_memory_gb is not None:
            out["recommended_gpu_memory_gb"] = self.recommended_gpu_memory_gb
        return out


@dataclass(frozen=True)
class Tenant:
    id: str
    name: str
    created_at: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Tenant":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["name"] = self.name
        out["created_at"] = self.created_at
        return out


@dataclass(frozen=True)
class TenantCreate:
    name: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TenantCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["name"] = _required(d, "name", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["name"] = self.name
        return out


@dataclass(frozen=True)
class TenantList:
    items: list[TenantWithBalance]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TenantList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [TenantWithBalance.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class TenantWithBalance:
    id: str
    name: str
    created_at: str
    balance_micros: int
    currency: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TenantWithBalance":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        kw["balance_micros"] = _required(d, "balance_micros", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["name"] = self.name
        out["created_at"] = self.created_at
        out["balance_micros"] = self.balance_micros
        out["currency"] = self.currency
        return out


@dataclass(frozen=True)
class Topup:
    tenant_id: str
    amount_micros: int
    reference: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Topup":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["amount_micros"] = _required(d, "amount_micros", cls.__name__)
        if "reference" in d:
            kw["reference"] = d["reference"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        out["amount_micros"] = self.amount_micros
        if self.reference is not None:
            out["reference"] = self.reference
        return out


@dataclass(frozen=True)
class TopupResult:
    transfer_id: str
    tenant_id: str
    amount_micros: int
    balance_micros: int
    currency: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TopupResult":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["transfer_id"] = _required(d, "transfer_id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["amount_micros"] = _required(d, "amount_micros", cls.__name__)
        kw["balance_micros"] = _required(d, "balance_micros", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["transfer_id"] = self.transfer_id
        out["tenant_id"] = self.tenant_id
        out["amount_micros"] = self.amount_micros
        out["balance_micros"] = self.balance_micros
        out["currency"] = self.currency
        return out


@dataclass(frozen=True)
class TrainingRecord:
    "the run recorded, and the GPU it was recorded against"

    node_id: str
    gpu_uuid: str
    gpu_index: int
    gpu_type: str
    run: TrainingRun

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainingRecord":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["node_id"] = _required(d, "node_id", cls.__name__)
        kw["gpu_uuid"] = _required(d, "gpu_uuid", cls.__name__)
        kw["gpu_index"] = _required(d, "gpu_index", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        v = _required(d, "run", cls.__name__)
        kw["run"] = TrainingRun.from_dict(v)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["node_id"] = self.node_id
        out["gpu_uuid"] = self.gpu_uuid
        out["gpu_index"] = self.gpu_index
        out["gpu_type"] = self.gpu_type
        v = self.run
        out["run"] = v.to_dict()
        return out


@dataclass(frozen=True)
class TrainingRecordCreate:
    instance_id: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainingRecordCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["instance_id"] = _required(d, "instance_id", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["instance_id"] = self.instance_id
        return out


@dataclass(frozen=True)
class TrainingRun:
    "a ResNet-50 training run on one GPU (the resnet50-bench template, recorded by an operator)"

    at: str
    instance_id: str
    model: Literal["resnet50"]
    batch: int
    image_size: int
    device: str
    images_per_s: dict[str, float]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainingRun":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["at"] = _required(d, "at", cls.__name__)
        kw["instance_id"] = _required(d, "instance_id", cls.__name__)
        kw["model"] = _required(d, "model", cls.__name__)
        kw["batch"] = _required(d, "batch", cls.__name__)
        kw["image_size"] = _required(d, "image_size", cls.__name__)
        kw["device"] = _required(d, "device", cls.__name__)
        v = _required(d, "images_per_s", cls.__name__)
        kw["images_per_s"] = dict(v)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["at"] = self.at
        out["instance_id"] = self.instance_id
        out["model"] = self.model
        out["batch"] = self.batch
        out["image_size"] = self.image_size
        out["device"] = self.device
        v = self.images_per_s
        out["images_per_s"] = dict(v)
        return out


@dataclass(frozen=True)
class Transfer:
    id: str
    at: str
    kind: Literal["topup", "usage", "credit", "purchase", "recognition", "refund"]
    from_account: str
    to_account: str
    amount_micros: int
    reference: str
    currency: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Transfer":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["at"] = _required(d, "at", cls.__name__)
        kw["kind"] = _required(d, "kind", cls.__name__)
        kw["from_account"] = _required(d, "from_account", cls.__name__)
        kw["to_account"] = _required(d, "to_account", cls.__name__)
        kw["amount_micros"] = _required(d, "amount_micros", cls.__name__)
        kw["reference"] = _required(d, "reference", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["at"] = self.at
        out["kind"] = self.kind
        out["from_account"] = self.from_account
        out["to_account"] = self.to_account
        out["amount_micros"] = self.amount_micros
        out["reference"] = self.reference
        out["currency"] = self.currency
        return out


@dataclass(frozen=True)
class TransferList:
    items: list[Transfer]
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TransferList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Transfer.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class Upload:
    "A tenant's upload: a tar.gz its instances unpack into their home before their command starts (workdir). Sent in pieces; resumable from `received`."

    id: str
    size: int
    sha256: str
    received: int
    complete: bool
    created_at: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Upload":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["size"] = _required(d, "size", cls.__name__)
        kw["sha256"] = _required(d, "sha256", cls.__name__)
        kw["received"] = _required(d, "received", cls.__name__)
        kw["complete"] = _required(d, "complete", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["size"] = self.size
        out["sha256"] = self.sha256
        out["received"] = self.received
        out["complete"] = self.complete
        out["created_at"] = self.created_at
        return out


@dataclass(frozen=True)
class UploadCreate:
    size: int
    sha256: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "UploadCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["size"] = _required(d, "size", cls.__name__)
        kw["sha256"] = _required(d, "sha256", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["size"] = self.size
        out["sha256"] = self.sha256
        return out


@dataclass(frozen=True)
class Usage:
    tenant_id: str
    items: list[UsageItem]
    volumes: list[VolumeUsageItem]
    total_micros: int
    currency: str
    next_cursor: Optional[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Usage":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        v = _required(d, "items", cls.__name__)
        kw["items"] = [UsageItem.from_dict(x0) for x0 in v]
        v = _required(d, "volumes", cls.__name__)
        kw["volumes"] = [VolumeUsageItem.from_dict(x0) for x0 in v]
        kw["total_micros"] = _required(d, "total_micros", cls.__name__)
        kw["currency"] = _required(d, "currency", cls.__name__)
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        v = self.volumes
        out["volumes"] = [x0.to_dict() for x0 in v]
        out["total_micros"] = self.total_micros
        out["currency"] = self.currency
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class UsageItem:
    instance_id: str
    run: int
    gpu_type: str
    gpu_count: int
    pricing: PricingModel
    price_per_gpu_hour_micros: int
    started_at: str
    ended_at: Optional[str]
    seconds: int
    minimum_seconds: int
    amount_micros: int
    kind: Literal["run", "stopped_disk"]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "UsageItem":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["instance_id"] = _required(d, "instance_id", cls.__name__)
        kw["run"] = _required(d, "run", cls.__name__)
        kw["gpu_type"] = _required(d, "gpu_type", cls.__name__)
        kw["gpu_count"] = _required(d, "gpu_count", cls.__name__)
        kw["pricing"] = _required(d, "pricing", cls.__name__)
        kw["price_per_gpu_hour_micros"] = _required(d, "price_per_gpu_hour_micros", cls.__name__)
        kw["started_at"] = _required(d, "started_at", cls.__name__)
        kw["ended_at"] = _required(d, "ended_at", cls.__name__)
        kw["seconds"] = _required(d, "seconds", cls.__name__)
        kw["minimum_seconds"] = _required(d, "minimum_seconds", cls.__name__)
        kw["amount_micros"] = _required(d, "amount_micros", cls.__name__)
        kw["kind"] = _required(d, "kind", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["instance_id"] = self.instance_id
        out["run"] = self.run
        out["gpu_type"] = self.gpu_type
        out["gpu_count"] = self.gpu_count
        out["pricing"] = self.pricing
        out["price_per_gpu_hour_micros"] = self.price_per_gpu_hour_micros
        out["started_at"] = self.started_at
        out["ended_at"] = self.ended_at
        out["seconds"] = self.seconds
        out["minimum_seconds"] = self.minimum_seconds
        out["amount_micros"] = self.amount_micros
        out["kind"] = self.kind
        return out


@dataclass(frozen=True)
class VmCapability:
    "what a node's agent can do with virtual machines (docs/vm-runtime.md); VM work goes only to nodes whose GPUs pass through"

    accelerator: Literal["kvm", "tcg"]
    gpu_passthrough: bool
    note: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "VmCapability":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["accelerator"] = _required(d, "accelerator", cls.__name__)
        kw["gpu_passthrough"] = _required(d, "gpu_passthrough", cls.__name__)
        if "note" in d:
            kw["note"] = d["note"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["accelerator"] = self.accelerator
        out["gpu_passthrough"] = self.gpu_passthrough
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Volume:
    id: str
    tenant_id: str
    name: str
    size_gb: int
    node_id: Optional[str]
    state: VolumeState
    created_at: str
    price_per_gb_month_micros: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Volume":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["id"] = _required(d, "id", cls.__name__)
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["size_gb"] = _required(d, "size_gb", cls.__name__)
        kw["node_id"] = _required(d, "node_id", cls.__name__)
        kw["state"] = _required(d, "state", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        kw["price_per_gb_month_micros"] = _required(d, "price_per_gb_month_micros", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["id"] = self.id
        out["tenant_id"] = self.tenant_id
        out["name"] = self.name
        out["size_gb"] = self.size_gb
        out["node_id"] = self.node_id
        out["state"] = self.state
        out["created_at"] = self.created_at
        out["price_per_gb_month_micros"] = self.price_per_gb_month_micros
        return out


@dataclass(frozen=True)
class VolumeCreate:
    name: str
    size_gb: int
    node_id: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "VolumeCreate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["name"] = _required(d, "name", cls.__name__)
        kw["size_gb"] = _required(d, "size_gb", cls.__name__)
        if "node_id" in d:
            kw["node_id"] = d["node_id"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["name"] = self.name
        out["size_gb"] = self.size_gb
        if self.node_id is not None:
            out["node_id"] = self.node_id
        return out


@dataclass(frozen=True)
class VolumeList:
    items: list[Volume]
    next_cursor: Any

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "VolumeList":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        v = _required(d, "items", cls.__name__)
        kw["items"] = [Volume.from_dict(x0) for x0 in v]
        kw["next_cursor"] = _required(d, "next_cursor", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        v = self.items
        out["items"] = [x0.to_dict() for x0 in v]
        out["next_cursor"] = self.next_cursor
        return out


@dataclass(frozen=True)
class VolumeMount:
    volume_id: str
    mount_path: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "VolumeMount":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["volume_id"] = _required(d, "volume_id", cls.__name__)
        kw["mount_path"] = _required(d, "mount_path", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["volume_id"] = self.volume_id
        out["mount_path"] = self.mount_path
        return out


@dataclass(frozen=True)
class VolumeUsageItem:
    volume_id: str
    name: str
    size_gb: int
    price_per_gb_month_micros: int
    created_at: str
    deleted_at: Optional[str]
    seconds: int
    amount_micros: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "VolumeUsageItem":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["volume_id"] = _required(d, "volume_id", cls.__name__)
        kw["name"] = _required(d, "name", cls.__name__)
        kw["size_gb"] = _required(d, "size_gb", cls.__name__)
        kw["price_per_gb_month_micros"] = _required(d, "price_per_gb_month_micros", cls.__name__)
        kw["created_at"] = _required(d, "created_at", cls.__name__)
        kw["deleted_at"] = _required(d, "deleted_at", cls.__name__)
        kw["seconds"] = _required(d, "seconds", cls.__name__)
        kw["amount_micros"] = _required(d, "amount_micros", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["volume_id"] = self.volume_id
        out["name"] = self.name
        out["size_gb"] = self.size_gb
        out["price_per_gb_month_micros"] = self.price_per_gb_month_micros
        out["created_at"] = self.created_at
        out["deleted_at"] = self.deleted_at
        out["seconds"] = self.seconds
        out["amount_micros"] = self.amount_micros
        return out


@dataclass(frozen=True)
class Whoami:
    tenant_id: str
    key_id: str
    role: Role
    scopes: list[str]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Whoami":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["tenant_id"] = _required(d, "tenant_id", cls.__name__)
        kw["key_id"] = _required(d, "key_id", cls.__name__)
        kw["role"] = _required(d, "role", cls.__name__)
        v = _required(d, "scopes", cls.__name__)
        kw["scopes"] = list(v)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["tenant_id"] = self.tenant_id
        out["key_id"] = self.key_id
        out["role"] = self.role
        v = self.scopes
        out["scopes"] = list(v)
        return out


@dataclass(frozen=True)
class WorkEstimate:
    "how long the work takes on the launch and what it costs: its images over the type's measured throughput times the launch's GPUs (linear scaling assumed), at the hourly charge of now"

    model: str
    epochs: int
    images: int
    precision: str
    images_per_s: float
    measured_gpus: int
    batch: int
    image_size: int
    seconds: int
    cost_micros: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "WorkEstimate":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["model"] = _required(d, "model", cls.__name__)
        kw["epochs"] = _required(d, "epochs", cls.__name__)
        kw["images"] = _required(d, "images", cls.__name__)
        kw["precision"] = _required(d, "precision", cls.__name__)
        kw["images_per_s"] = _required(d, "images_per_s", cls.__name__)
        kw["measured_gpus"] = _required(d, "measured_gpus", cls.__name__)
        kw["batch"] = _required(d, "batch", cls.__name__)
        kw["image_size"] = _required(d, "image_size", cls.__name__)
        kw["seconds"] = _required(d, "seconds", cls.__name__)
        kw["cost_micros"] = _required(d, "cost_micros", cls.__name__)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["model"] = self.model
        out["epochs"] = self.epochs
        out["images"] = self.images
        out["precision"] = self.precision
        out["images_per_s"] = self.images_per_s
        out["measured_gpus"] = self.measured_gpus
        out["batch"] = self.batch
        out["image_size"] = self.image_size
        out["seconds"] = self.seconds
        out["cost_micros"] = self.cost_micros
        return out


@dataclass(frozen=True)
class WorkloadSpec:
    instance_id: str
    run: int
    should_run: bool
    command: list[str]
    env: dict[str, str]
    gpus: list[str]
    tenant_id: Optional[str] = None
    cpu: Optional[int] = None
    memory_gb: Optional[int] = None
    disk_gb: Optional[int] = None
    volumes: Optional[list[VolumeMount]] = None
    job: Optional[JobMemberPlacement] = None
    workdir: Optional[str] = None
    image: Optional[str] = None
    services: Optional[list[str]] = None
    vm: Optional[bool] = None
    ssh_keys: Optional[list[str]] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "WorkloadSpec":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["instance_id"] = _required(d, "instance_id", cls.__name__)
        kw["run"] = _required(d, "run", cls.__name__)
        kw["should_run"] = _required(d, "should_run", cls.__name__)
        v = _required(d, "command", cls.__name__)
        kw["command"] = list(v)
        v = _required(d, "env", cls.__name__)
        kw["env"] = dict(v)
        v = _required(d, "gpus", cls.__name__)
        kw["gpus"] = list(v)
        if "tenant_id" in d:
            kw["tenant_id"] = d["tenant_id"]
        if "cpu" in d:
            kw["cpu"] = d["cpu"]
        if "memory_gb" in d:
            kw["memory_gb"] = d["memory_gb"]
        if "disk_gb" in d:
            kw["disk_gb"] = d["disk_gb"]
        if "volumes" in d:
            v = d["volumes"]
            kw["volumes"] = (None if v is None else [VolumeMount.from_dict(x0) for x0 in v])
        if "job" in d:
            v = d["job"]
            kw["job"] = (None if v is None else JobMemberPlacement.from_dict(v))
        if "workdir" in d:
            kw["workdir"] = d["workdir"]
        if "image" in d:
            kw["image"] = d["image"]
        if "services" in d:
            kw["services"] = d["services"]
        if "vm" in d:
            kw["vm"] = d["vm"]
        if "ssh_keys" in d:
            kw["ssh_keys"] = d["ssh_keys"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["instance_id"] = self.instance_id
        out["run"] = self.run
        out["should_run"] = self.should_run
        v = self.command
        out["command"] = list(v)
        v = self.env
        out["env"] = dict(v)
        v = self.gpus
        out["gpus"] = list(v)
        if self.tenant_id is not None:
            out["tenant_id"] = self.tenant_id
        if self.cpu is not None:
            out["cpu"] = self.cpu
        if self.memory_gb is not None:
            out["memory_gb"] = self.memory_gb
        if self.disk_gb is not None:
            out["disk_gb"] = self.disk_gb
        if self.volumes is not None:
            v = self.volumes
            out["volumes"] = (None if v is None else [x0.to_dict() for x0 in v])
        if self.job is not None:
            v = self.job
            out["job"] = (None if v is None else v.to_dict())
        if self.workdir is not None:
            out["workdir"] = self.workdir
        if self.image is not None:
            out["image"] = self.image
        if self.services is not None:
            out["services"] = self.services
        if self.vm is not None:
            out["vm"] = self.vm
        if self.ssh_keys is not None:
            out["ssh_keys"] = self.ssh_keys
        return out


@dataclass(frozen=True)
class WorkloadStatus:
    instance_id: str
    run: int
    phase: Literal["starting", "running", "exited"]
    exit_code: Optional[int] = None
    message: Optional[str] = None
    never_started: Optional[bool] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "WorkloadStatus":
        """Builds it from a JSON object; unknown keys are ignored."""
        _require_object(d, cls.__name__)
        kw: dict[str, Any] = {}
        kw["instance_id"] = _required(d, "instance_id", cls.__name__)
        kw["run"] = _required(d, "run", cls.__name__)
        kw["phase"] = _required(d, "phase", cls.__name__)
        if "exit_code" in d:
            kw["exit_code"] = d["exit_code"]
        if "message" in d:
            kw["message"] = d["message"]
        if "never_started" in d:
            kw["never_started"] = d["never_started"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; optional fields that are None are left out."""
        out: dict[str, Any] = {}
        out["instance_id"] = self.instance_id
        out["run"] = self.run
        out["phase"] = self.phase
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
        if self.message is not None:
            out["message"] = self.message
        if self.never_started is not None:
            out["never_started"] = self.never_started
        return out


__all__ = [
    "InstanceState",
    "JobState",
    "PricingModel",
    "ReservationState",
    "Role",
    "VolumeState",
    "AgentBenchmarkOutcome",
    "AgentBenchmarkRequest",
    "AgentGpuBenchmark",
    "AgentNodeBenchmark",
    "AgentPeerBandwidth",
    "Alert",
    "AlertAcknowledged",
    "AlertList",
    "AlertRule",
    "AlertRuleCreate",
    "AlertRuleList",
    "AlertSubject",
    "AlertTransition",
    "ApiKey",
    "ApiKeyCreate",
    "ApiKeyCreated",
    "ApiKeyList",
    "AuditEntry",
    "AuditList",
    "Balance",
    "BalanceSettings",
    "BalanceSettingsSet",
    "BenchmarkRequest",
    "BenchmarkRun",
    "ContainerToolkit",
    "CopyResult",
    "DesiredState",
    "Estimate",
    "EstimateCreate",
    "EstimatePerHourMicros",
    "EstimateSpot",
    "EstimateWork",
    "Event",
    "EventList",
    "ExecFrame",
    "ExecRequest",
    "Figures",
    "Gpu",
    "GpuBenchmark",
    "GpuBenchmarkHistory",
    "GpuBenchmarkHistoryList",
    "GpuQuarantine",
    "GpuTelemetry",
    "GpuTelemetryLastXid",
    "GpuType",
    "GpuTypeList",
    "Health",
    "IdleAlertSet",
    "Instance",
    "InstanceCreate",
    "InstanceList",
    "InstanceStart",
    "Invoice",
    "InvoiceLine",
    "InvoiceSummary",
    "Job",
    "JobCreate",
    "JobList",
    "JobMemberPlacement",
    "JobTask",
    "JoinToken",
    "JoinTokenCreate",
    "LogSize",
    "MetricSeries",
    "MetricSeriesPointsItem",
    "Node",
    "NodeGpu",
    "NodeList",
    "NodeRegistration",
    "NodeReport",
    "Offer",
    "OfferList",
    "OfferMeasured",
    "OfferTraining",
    "Package",
    "PackageProduct",
    "PackagePurchase",
    "PeerCopy",
    "PriceChange",
    "PriceVersion",
    "PriceVersionList",
    "Prices",
    "Problem",
    "Quota",
    "QuotaSet",
    "RegistrationResult",
    "ReportResult",
    "Reservation",
    "ReservationCreate",
    "ReservationList",
    "RevenueReport",
    "ServiceTicket",
    "Session",
    "SessionCreate",
    "SpotPricePoint",
    "SpotPrices",
    "SpotPricesItemsItem",
    "Template",
    "TemplateList",
    "TemplateSet",
    "Tenant",
    "TenantCreate",
    "TenantList",
    "TenantWithBalance",
    "Topup",
    "TopupResult",
    "TrainingRecord",
    "TrainingRecordCreate",
    "TrainingRun",
    "Transfer",
    "TransferList",
    "Upload",
    "UploadCreate",
    "Usage",
    "UsageItem",
    "VmCapability",
    "Volume",
    "VolumeCreate",
    "VolumeList",
    "VolumeMount",
    "VolumeUsageItem",
    "Whoami",
    "WorkEstimate",
    "WorkloadSpec",
    "WorkloadStatus",
]
