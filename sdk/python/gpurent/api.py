"""Every route of the gpurent API (docs/api.md), once, for Client and AsyncClient.

Each method describes its request (a _core.Call: method, path template, query, body, how to decode
the answer) and hands it to the client: `self._send(call)` is the decoded answer for Client and a
coroutine of it for AsyncClient; `self._pages(call)` an iterator (async iterator) over every page
of a list route. Helpers of several requests (wait_until, uploads, copies, a job's task logs) are
flows (see _core): generators that yield the calls and sleeps and get their results back, run by
the client's own driver.

Annotations give what Client returns; AsyncClient returns awaitables of the same (async iterators
for Iterator[...]).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import keyword
import os
import tarfile
import time
from dataclasses import fields as dataclass_fields
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from . import models
from ._core import CLIENT_TIMEOUT, BaseClient, Call, Flow, Sleep
from .errors import Conflict, UnexpectedState, WaitTimeout
from .types import ExecResult

__all__ = ["Api", "SKIPPED_ROUTES", "Alerts", "Audit", "Billing", "Events", "Instances", "Jobs",
           "JoinTokens", "Keys", "Metrics", "Nodes", "Packages", "Prices", "Reservations",
           "Templates", "Tenants", "Uploads", "Volumes"]

# The routes of docs/openapi.json that have no method here, and why (the README lists them; the
# tests check that every other route is called).
_SESSION = ("the web console's sign-in (an API key traded for a cookie session with a CSRF "
            "token); the SDK sends its key with every request instead")
_PROXY = ("the services proxy, for browsers and a service's own clients: "
          "instances.service_ticket() gives the URL to open")
_AGENT = "the agent protocol, spoken by a node's agent with its join token or node credential"
SKIPPED_ROUTES: dict[tuple[str, str], str] = {
    ("GET", "/"): "the web console's page, for browsers",
    ("GET", "/console/{name}"): "the web console's files, for browsers",
    ("POST", "/v1/session"): _SESSION,
    ("GET", "/v1/session"): _SESSION,
    ("DELETE", "/v1/session"): _SESSION,
    **{(method, "/i/{id}/{service}/{path}"): _PROXY
       for method in ("GET", "POST", "PUT", "PATCH", "DELETE")},
    ("GET", "/metrics"): "Prometheus' scrape (text format), for Prometheus",
    ("GET", "/v1/instances/{id}/ssh"): ("a byte tunnel to a VM's SSH server, for OpenSSH: "
                                        "`gpurent ssh-proxy ID` is its ProxyCommand"),
    ("POST", "/v1/agent/register"): _AGENT,
    ("GET", "/v1/agent/desired"): _AGENT,
    ("POST", "/v1/agent/report"): _AGENT,
    ("POST", "/v1/agent/logs"): _AGENT,
    ("GET", "/v1/agent/upload"): _AGENT,
}

# The most bytes one PUT /v1/uploads/{id} may carry (docs/api.md).
UPLOAD_PIECE_BYTES = 1 << 20
# Seconds an exec's answer may take beyond its own timeout_s before the client gives up.
EXEC_GRACE_S = 30.0
DEFAULT_EXEC_TIMEOUT_S = 600

Time = Union[str, _dt.datetime, None]


def _when(value: Time) -> Optional[str]:
    """An RFC 3339 UTC time for a query or body (a naive datetime is taken as UTC)."""
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    utc = value.astimezone(_dt.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _plain(value: Any) -> Any:
    """A JSON value from what a caller may pass: models as their to_dict(), datetimes as
    RFC 3339, lists and dicts walked."""
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if isinstance(value, _dt.datetime):
        return _when(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _body(model: type, spec: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A request body from a generated model instance (or plain dict), or from its fields given
    as keywords (nested objects as models or dicts). Checked here, before anything is sent: a
    misspelt keyword is a TypeError, a missing required field a ValueError."""
    if spec is not None and fields:
        raise TypeError(f"give a models.{model.__name__} or keyword fields, not both")
    if spec is None:
        known = {f.name for f in dataclass_fields(model)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise TypeError(f"unknown {model.__name__} field(s): {', '.join(unknown)}")
        spec = model.from_dict({_json_name(k): v for k, v in _plain(fields).items()})
    return _plain(spec)


def _json_name(attr: str) -> str:
    """A field's JSON name: gen_models.py appends "_" to Python keywords (`from_`)."""
    return attr[:-1] if attr.endswith("_") and keyword.iskeyword(attr[:-1]) else attr


def _argv(command: Union[str, Sequence[str]]) -> list[str]:
    """An argv; a string is run by /bin/sh -c (as the launch routes take it)."""
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    return list(command)


def _no_content(_: Any) -> None:
    return None


class _Group:
    """A group of routes (c.instances, c.jobs, ...): builds calls, the client sends them."""

    def __init__(self, client: "Api"):
        self._client = client

    def _send(self, call: Call) -> Any:
        return self._client._run(self._client._call_flow(call))

    def _pages(self, call: Call) -> Any:
        return self._client._iterate(self._client._pages_flow(call))

    def _all(self, call: Call) -> Any:
        return self._client._run(self._client._all_flow(call))

    def _lines(self, call: Call, decode: Callable[[str], Any] = str) -> Any:
        return self._client._iterate(self._client._lines_flow(call, decode))

    def _run(self, flow: Flow) -> Any:
        return self._client._run(flow)

    def _flow(self, call: Call) -> Flow:
        """The call as a step of a larger flow: `x = yield from self._flow(call)`."""
        return self._client._call_flow(call)


def _wait_flow(group: _Group, get: Callable[[], Call], kind: str, object_id: str,
               state: Union[str, Iterable[str]], final: frozenset[str],
               still_going: Callable[[Any], bool], timeout: float, poll: float) -> Flow:
    """Polls until the object is in `state` (or one of several) and returns it. Raises
    UnexpectedState when it settled in another final state and WaitTimeout after `timeout` s."""
    wanted = {state} if isinstance(state, str) else set(state)
    deadline = time.monotonic() + timeout
    while True:
        last = yield from group._flow(get())
        if last.state in wanted:
            return last
        if last.state in final and not still_going(last):
            reason = getattr(last, "reason", "")
            raise UnexpectedState(f"{kind} {object_id} is {last.state}"
                                  + (f" ({reason})" if reason else "")
                                  + f", not {'/'.join(sorted(wanted))}", last)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeout(f"{kind} {object_id} still {last.state} after {timeout}s, "
                              f"not {'/'.join(sorted(wanted))}", last)
        yield Sleep(min(poll, remaining))


# States an instance does not leave on its own.
INSTANCE_FINAL_STATES = frozenset({"failed", "terminated", "preempted", "stopped"})
JOB_FINAL_STATES = frozenset({"succeeded", "failed", "cancelled", "preempted"})


class Instances(_Group):
    """/v1/instances: launch, list, get, stop, start, delete, logs, exec, copies, services."""

    def create(self, spec: Optional[models.InstanceCreate] = None,
               idempotency_key: Optional[str] = None, **fields: Any) -> models.Instance:
        """Launches an instance: a models.InstanceCreate, or its fields as keywords
        (gpu_type="h100-80g", command=[...], ...). An Idempotency-Key is sent (a fresh uuid4
        unless given), so a retry after a lost answer returns the same instance."""
        return self._send(Call("POST", "/v1/instances",
                               body=_body(models.InstanceCreate, spec, fields),
                               idempotency_key=idempotency_key,
                               decode=models.Instance.from_dict))

    def list(self, state: Optional[str] = None, tenant: Optional[str] = None,
             job: Optional[str] = None, limit: Optional[int] = None) -> Iterator[models.Instance]:
        """Every instance of the caller (operators: all, or `tenant`'s), lazily over all pages
        (limit: the page size); a job's members only with `job`."""
        return self._pages(Call("GET", "/v1/instances", decode=models.Instance.from_dict,
                                query={"state": state, "tenant": tenant, "job": job,
                                       "limit": limit}))

    def list_page(self, cursor: Optional[str] = None, limit: Optional[int] = None,
                  state: Optional[str] = None) -> models.InstanceList:
        """One page, with its next_cursor (for callers that keep the cursor themselves)."""
        return self._send(Call("GET", "/v1/instances", decode=models.InstanceList.from_dict,
                               query={"cursor": cursor, "limit": limit, "state": state}))

    def _get(self, instance_id: str) -> Call:
        return Call("GET", "/v1/instances/{id}", {"id": instance_id},
                    decode=models.Instance.from_dict)

    def get(self, instance_id: str) -> models.Instance:
        """One instance, by id or by its (unambiguous) name."""
        return self._send(self._get(instance_id))

    def stop(self, instance_id: str) -> models.Instance:
        """Stops it (keeping its disk): `stopping`, or `stopped` if it was not running."""
        return self._send(Call("POST", "/v1/instances/{id}/stop", {"id": instance_id},
                               idempotency_key=False, decode=models.Instance.from_dict))

    def start(self, instance_id: str, anywhere: bool = False) -> models.Instance:
        """Starts a stopped instance again (`pending`); one still stopping is started once it
        has stopped (`start_requested`). It waits for the node that keeps its files
        (`start_on_node`); with `anywhere`, any node that fits will do, and its files are left
        behind (and deleted). Given to a start still waiting for its node, `anywhere` frees it."""
        body = models.InstanceStart(anywhere=True) if anywhere else None
        return self._send(Call("POST", "/v1/instances/{id}/start", {"id": instance_id},
                               body=body, idempotency_key=False,
                               decode=models.Instance.from_dict))

    def delete(self, instance_id: str) -> models.Instance:
        """Removes it: `terminated`, or `stopping` until its process is gone."""
        return self._send(Call("DELETE", "/v1/instances/{id}", {"id": instance_id},
                               decode=models.Instance.from_dict))

    def logs(self, instance_id: str) -> str:
        """stdout+stderr of all its runs so far."""
        return self._send(Call("GET", "/v1/instances/{id}/logs", {"id": instance_id},
                               accept="text/plain", decode=lambda text: text or ""))

    def stream_logs(self, instance_id: str, read_timeout: Optional[float] = None
                    ) -> Iterator[str]:
        """Its log line by line (`?follow=true`): what is there, then what comes, until the
        instance ends. read_timeout: the longest quiet spell allowed (None: no limit)."""
        return self._lines(Call("GET", "/v1/instances/{id}/logs", {"id": instance_id},
                                query={"follow": True}, accept="text/plain",
                                timeout=read_timeout))

    def wait_until(self, instance_id: str, state: Union[str, Iterable[str]],
                   timeout: float = 300.0, poll: float = 0.5) -> models.Instance:
        """Polls until the instance is in `state` (or one of several) and returns it. Raises
        UnexpectedState when it settles in another final state (failed, terminated, preempted,
        stopped; one stopped with a start requested is not settled) and WaitTimeout after
        `timeout` seconds."""
        return self._run(_wait_flow(self, lambda: self._get(instance_id), "instance",
                                    instance_id, state, INSTANCE_FINAL_STATES,
                                    lambda i: bool(i.start_requested), timeout, poll))

    def _exec(self, instance_id: str, command: Union[str, Sequence[str]],
              timeout_s: Optional[int], decode: Optional[Callable[[Any], Any]]) -> Call:
        body: dict[str, Any] = {"command": _argv(command)}
        if timeout_s is not None:
            body["timeout_s"] = timeout_s
        # Not repeatable once sent (the command may have run): no Idempotency-Key.
        return Call("POST", "/v1/instances/{id}/exec", {"id": instance_id}, body=body,
                    idempotency_key=False, accept="application/x-ndjson", decode=decode,
                    timeout=(timeout_s or DEFAULT_EXEC_TIMEOUT_S) + EXEC_GRACE_S)

    def exec(self, instance_id: str, command: Union[str, Sequence[str]],
             timeout_s: Optional[int] = None) -> ExecResult:
        """Runs a command in the running instance (an argv, no shell; a str is run by
        /bin/sh -c) and returns its whole output and exit status once it ends. timeout_s: the
        server kills it after this long (default 600; exit_code 124)."""
        return self._send(self._exec(instance_id, command, timeout_s, ExecResult.from_frames))

    def exec_stream(self, instance_id: str, command: Union[str, Sequence[str]],
                    timeout_s: Optional[int] = None) -> Iterator[models.ExecFrame]:
        """Like exec, yielding its output as it comes: ExecFrames with stream and data, the
        last one with the exit_code. Leaving the loop early closes the connection, which kills
        the command."""
        return self._lines(self._exec(instance_id, command, timeout_s, None),
                           lambda line: models.ExecFrame.from_dict(json.loads(line)))

    def copy_upload(self, instance_id: str, upload_id: str, path: str = "") -> models.CopyResult:
        """Unpacks a complete upload (a tar.gz, c.uploads) into a directory of the running
        instance: `path` relative to its home (empty: the home)."""
        return self._send(_copy_call("/v1/instances/{id}/files", instance_id, upload_id, path))

    def copy(self, instance_id: str, source: str, path: str = "") -> models.CopyResult:
        """What `gpurent cp SOURCE ID:PATH` does: packs a local file or directory (under its own
        name; "dir/" with a trailing slash: its contents), uploads it (resumably) and unpacks
        it into the running instance's `path`."""
        return self._run(_copy_flow(self._client, "/v1/instances/{id}/files", instance_id,
                                    source, path))

    def service_ticket(self, instance_id: str, service: str) -> models.ServiceTicket:
        """A login ticket (valid 2 minutes) for a browser to reach one of the instance's HTTP
        services: open service_url(ticket) (or the server's URL + ticket.path)."""
        return self._send(Call("POST", "/v1/instances/{id}/services/{service}/ticket",
                               {"id": instance_id, "service": service}, idempotency_key=False,
                               repeatable=True, decode=models.ServiceTicket.from_dict))

    def service_url(self, ticket: models.ServiceTicket) -> str:
        """The URL a browser opens to sign in to the service with the ticket."""
        return self._client.url + ticket.path

    def set_idle_alert(self, instance_id: str, below_percent: Optional[float] = None,
                       for_s: Optional[int] = None, auto_stop: Optional[bool] = None
                       ) -> models.AlertRule:
        """Alerts (and with auto_stop stops the instance) when its GPUs stay below
        `below_percent` utilisation for `for_s` seconds; server defaults 5 % and 1800 s."""
        body = models.IdleAlertSet(below_percent=below_percent, for_s=for_s, auto_stop=auto_stop)
        return self._send(Call("PUT", "/v1/instances/{id}/idle-alert", {"id": instance_id},
                               body=body, decode=models.AlertRule.from_dict))


def _copy_call(route: str, target_id: str, upload_id: str, path: str) -> Call:
    # Unpacking the same upload to the same place twice gives the same files: repeatable.
    return Call("POST", route, {"id": target_id}, query={"upload": upload_id, "path": path},
                idempotency_key=False, repeatable=True, decode=models.CopyResult.from_dict)


def _copy_flow(client: "Api", route: str, target_id: str, source: str, path: str) -> Flow:
    upload = yield from client.uploads._upload_flow(Uploads.pack(source))
    return (yield from client._call_flow(_copy_call(route, target_id, upload.id, path)))


class Jobs(_Group):
    """/v1/jobs: batch work run to completion; arrays (tasks) and gangs (nodes per task)."""

    def create(self, spec: Optional[models.JobCreate] = None,
               idempotency_key: Optional[str] = None, **fields: Any) -> models.Job:
        """Submits a job: a models.JobCreate or its fields as keywords (command=..., array=4,
        nodes=2, retries=1, pricing="spot", ...). Sent with an Idempotency-Key."""
        return self._send(Call("POST", "/v1/jobs", body=_body(models.JobCreate, spec, fields),
                               idempotency_key=idempotency_key, decode=models.Job.from_dict))

    def list(self, state: Optional[str] = None, tenant: Optional[str] = None,
             limit: Optional[int] = None) -> Iterator[models.Job]:
        """Every job of the caller in creation order, lazily over all pages."""
        return self._pages(Call("GET", "/v1/jobs", decode=models.Job.from_dict,
                                query={"state": state, "tenant": tenant, "limit": limit}))

    def _get(self, job_id: str, tasks: Optional[bool] = None) -> Call:
        return Call("GET", "/v1/jobs/{id}", {"id": job_id},
                    query={"tasks": 1 if tasks else None}, decode=models.Job.from_dict)

    def get(self, job_id: str, tasks: Optional[bool] = None) -> models.Job:
        """One job; tasks=True lists the tasks even of arrays above 1000."""
        return self._send(self._get(job_id, tasks))

    def cancel(self, job_id: str) -> models.Job:
        """Queued members leave, running ones stop, unfinished tasks end cancelled."""
        return self._send(Call("POST", "/v1/jobs/{id}/cancel", {"id": job_id},
                               idempotency_key=False, decode=models.Job.from_dict))

    def _logs(self, job_id: str, task: int, rank: int, follow: Optional[bool] = None,
              timeout: Optional[float] = CLIENT_TIMEOUT) -> Call:
        return Call("GET", "/v1/jobs/{id}/logs", {"id": job_id},
                    query={"task": task, "rank": rank, "follow": follow}, accept="text/plain",
                    decode=lambda text: text or "", timeout=timeout)

    def logs(self, job_id: str, task: int = 0, rank: int = 0) -> str:
        """The log of one member: task `task` of the array, rank `rank` of its gang."""
        return self._send(self._logs(job_id, task, rank))

    def stream_logs(self, job_id: str, task: int = 0, rank: int = 0,
                    read_timeout: Optional[float] = None) -> Iterator[str]:
        """One member's log line by line until the member ends (as Instances.stream_logs)."""
        return self._lines(self._logs(job_id, task, rank, True, read_timeout))

    def task_logs(self, job_id: str, rank: int = 0) -> dict[int, str]:
        """Every task's log (of rank `rank`), by task index: an array's results when each
        task prints its own."""
        return self._run(self._task_logs_flow(job_id, rank))

    def _task_logs_flow(self, job_id: str, rank: int) -> Flow:
        job = yield from self._flow(self._get(job_id, tasks=True))
        logs = {}
        for task in job.tasks or []:
            logs[task.index] = yield from self._flow(self._logs(job_id, task.index, rank))
        return logs

    def instances(self, job_id: str, state: Optional[str] = None) -> Iterator[models.Instance]:
        """The job's member instances (every task's, every rank's)."""
        return self._client.instances.list(state=state, job=job_id)

    def wait_until(self, job_id: str, state: Union[str, Iterable[str]],
                   timeout: float = 300.0, poll: float = 0.5) -> models.Job:
        """Polls until the job is in `state` (or one of several: e.g. JOB_FINAL_STATES).
        Raises UnexpectedState when it ended otherwise and WaitTimeout after `timeout` s."""
        return self._run(_wait_flow(self, lambda: self._get(job_id), "job", job_id, state,
                                    JOB_FINAL_STATES, lambda _: False, timeout, poll))


class Reservations(_Group):
    """/v1/reservations: GPUs booked for a window or a reserved term."""

    def create(self, spec: Optional[models.ReservationCreate] = None,
               idempotency_key: Optional[str] = None, **fields: Any) -> models.Reservation:
        """Books and pays (gpu_type, gpu_count, start, end | term_days, payment). Sent with an
        Idempotency-Key: a retry books and pays once."""
        return self._send(Call("POST", "/v1/reservations",
                               body=_body(models.ReservationCreate, spec, fields),
                               idempotency_key=idempotency_key,
                               decode=models.Reservation.from_dict))

    def quote(self, spec: Optional[models.ReservationCreate] = None, **fields: Any
              ) -> models.Reservation:
        """The priced reservation create() would book; books and charges nothing."""
        return self._send(Call("POST", "/v1/reservations/quote",
                               body=_body(models.ReservationCreate, spec, fields),
                               idempotency_key=False, repeatable=True,
                               decode=models.Reservation.from_dict))

    def list(self) -> list[models.Reservation]:
        """The caller's reservations (operators: all)."""
        return self._all(Call("GET", "/v1/reservations", decode=models.Reservation.from_dict))

    def cancel(self, reservation_id: str) -> models.Reservation:
        """Cancels it: refunded before its window; from its start the payments still fall due."""
        return self._send(Call("DELETE", "/v1/reservations/{id}", {"id": reservation_id},
                               decode=models.Reservation.from_dict))


class Volumes(_Group):
    """/v1/volumes: persistent, node-local directories that instances and jobs mount."""

    def create(self, spec: Optional[models.VolumeCreate] = None,
               idempotency_key: Optional[str] = None, **fields: Any) -> models.Volume:
        """Creates a volume (name, size_gb; operators: node_id). Sent with an Idempotency-Key."""
        return self._send(Call("POST", "/v1/volumes",
                               body=_body(models.VolumeCreate, spec, fields),
                               idempotency_key=idempotency_key, decode=models.Volume.from_dict))

    def list(self, tenant: Optional[str] = None) -> list[models.Volume]:
        """The caller's volumes (operators: all, or `tenant`'s); deleted ones left out."""
        return self._all(Call("GET", "/v1/volumes", query={"tenant": tenant},
                              decode=models.Volume.from_dict))

    def get(self, volume_id: str) -> models.Volume:
        return self._send(Call("GET", "/v1/volumes/{id}", {"id": volume_id},
                               decode=models.Volume.from_dict))

    def delete(self, volume_id: str) -> None:
        """Deletes it and its data (409 volume_in_use while an instance mounts it)."""
        return self._send(Call("DELETE", "/v1/volumes/{id}", {"id": volume_id},
                               decode=_no_content))

    def copy_upload(self, volume_id: str, upload_id: str, path: str = "") -> models.CopyResult:
        """Unpacks a complete upload into a directory of the volume (`path` from its root), on
        its node."""
        return self._send(_copy_call("/v1/volumes/{id}/files", volume_id, upload_id, path))

    def copy(self, volume_id: str, source: str, path: str = "") -> models.CopyResult:
        """Packs a local file or directory, uploads it and unpacks it into the volume (as
        `gpurent cp SOURCE VOLUME:PATH`)."""
        return self._run(_copy_flow(self._client, "/v1/volumes/{id}/files", volume_id,
                                    source, path))


class Uploads(_Group):
    """/v1/uploads: resumable uploads of tar.gz archives, for workdirs and copies."""

    def _create(self, size: int, sha256: str) -> Call:
        # The same size and SHA-256 declared again is the same upload: safe to repeat.
        return Call("POST", "/v1/uploads", body={"size": size, "sha256": sha256},
                    idempotency_key=False, repeatable=True, decode=models.Upload.from_dict)

    def create(self, size: int, sha256: str) -> models.Upload:
        """Declares an upload of `size` bytes with this SHA-256 (hex); declaring the same again
        returns the tenant's upload of those bytes, where it stopped."""
        return self._send(self._create(size, sha256))

    def _get(self, upload_id: str) -> Call:
        return Call("GET", "/v1/uploads/{id}", {"id": upload_id},
                    decode=models.Upload.from_dict)

    def get(self, upload_id: str) -> models.Upload:
        """How much was received, and whether it is complete."""
        return self._send(self._get(upload_id))

    def _append(self, upload_id: str, offset: int, data: bytes) -> Call:
        return Call("PUT", "/v1/uploads/{id}", {"id": upload_id}, query={"offset": offset},
                    data=data, content_type="application/octet-stream",
                    decode=models.Upload.from_dict)

    def append(self, upload_id: str, offset: int, data: bytes) -> models.Upload:
        """Sends the next bytes (at most 1 MiB) at `offset`, which must be `received`."""
        return self._send(self._append(upload_id, offset, data))

    def upload(self, data: bytes) -> models.Upload:
        """Uploads `data` (a tar.gz) whole: declares it, then sends what the server lacks in
        1 MiB pieces (an interrupted upload goes on where it stopped; a complete one sends
        nothing). Returns the complete upload, whose id a launch's workdir or a copy names."""
        return self._run(self._upload_flow(data))

    def _upload_flow(self, data: bytes) -> Flow:
        upload = yield from self._flow(self._create(len(data), hashlib.sha256(data).hexdigest()))
        while not upload.complete:
            piece = data[upload.received:upload.received + UPLOAD_PIECE_BYTES]
            try:
                upload = yield from self._flow(self._append(upload.id, upload.received, piece))
            except Conflict as e:
                if e.code != "upload_offset_mismatch":
                    raise
                # A retried piece that had arrived: ask where the server is and go on from there.
                upload = yield from self._flow(self._get(upload.id))
        return upload

    @staticmethod
    def pack(source: str) -> bytes:
        """A tar.gz of a file or directory as `gpurent cp` packs it: under its own name, or,
        for "dir/" (a trailing slash), the directory's contents; group-readable and -writable."""
        contents = source.endswith(("/", os.sep)) and os.path.isdir(source)
        source = os.path.normpath(source)
        if not os.path.exists(source):
            raise FileNotFoundError(source)

        def shared(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.mode |= 0o060
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            return info

        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            if contents:
                for name in sorted(os.listdir(source)):
                    tar.add(os.path.join(source, name), arcname=name, filter=shared)
            else:
                tar.add(source, arcname=os.path.basename(source), filter=shared)
        return buffer.getvalue()


class Templates(_Group):
    """/v1/templates: the catalog launches and jobs start from (template="pytorch")."""

    def list(self) -> list[models.Template]:
        return self._all(Call("GET", "/v1/templates", decode=models.Template.from_dict))

    def get(self, name: str) -> models.Template:
        return self._send(Call("GET", "/v1/templates/{name}", {"name": name},
                               decode=models.Template.from_dict))

    def set(self, name: str, spec: Optional[models.TemplateSet] = None, **fields: Any
            ) -> models.Template:
        """Adds or replaces an operator's template (operators; built-in names are 409)."""
        return self._send(Call("PUT", "/v1/templates/{name}", {"name": name},
                               body=_body(models.TemplateSet, spec, fields),
                               decode=models.Template.from_dict))

    def delete(self, name: str) -> None:
        """Removes an operator's template; work made from it keeps its copy."""
        return self._send(Call("DELETE", "/v1/templates/{name}", {"name": name},
                               decode=_no_content))


class Billing(_Group):
    """/v1/billing: balance, usage, ledger transfers, top-ups, balance settings, invoices,
    revenue. `tenant` (operators) names another tenant by id or name."""

    def balance(self, tenant: Optional[str] = None) -> models.Balance:
        return self._send(Call("GET", "/v1/billing/balance", query={"tenant": tenant},
                               decode=models.Balance.from_dict))

    def usage(self, tenant: Optional[str] = None) -> models.Usage:
        """Charges per run and per stopped disk, and per volume, with their totals."""
        return self._send(Call("GET", "/v1/billing/usage", query={"tenant": tenant},
                               decode=models.Usage.from_dict))

    def transfers(self, tenant: Optional[str] = None) -> list[models.Transfer]:
        """The caller's ledger transfers."""
        return self._all(Call("GET", "/v1/billing/transfers", query={"tenant": tenant},
                              decode=models.Transfer.from_dict))

    def topup(self, tenant: str, amount_micros: int, reference: Optional[str] = None,
              idempotency_key: Optional[str] = None) -> models.TopupResult:
        """Credits a tenant's balance (operators). Sent with an Idempotency-Key: a retry
        credits once."""
        body = models.Topup(tenant_id=tenant, amount_micros=amount_micros, reference=reference)
        return self._send(Call("POST", "/v1/billing/topups", body=body,
                               idempotency_key=idempotency_key,
                               decode=models.TopupResult.from_dict))

    def settings(self, tenant: Optional[str] = None) -> models.BalanceSettings:
        """The warning threshold and credit limit of the balance guard."""
        return self._send(Call("GET", "/v1/billing/settings", query={"tenant": tenant},
                               decode=models.BalanceSettings.from_dict))

    def set_settings(self, tenant: str, warning_threshold_micros: Optional[int] = None,
                     credit_limit_micros: Optional[int] = None) -> models.BalanceSettings:
        """Sets a tenant's balance guard (operators); a value left out gets its default."""
        body = models.BalanceSettingsSet(tenant_id=tenant,
                                      warning_threshold_micros=warning_threshold_micros,
                                      credit_limit_micros=credit_limit_micros)
        return self._send(Call("PUT", "/v1/billing/settings", body=body,
                               decode=models.BalanceSettings.from_dict))

    def invoices(self, tenant: Optional[str] = None) -> list[models.InvoiceSummary]:
        """The months with movements of the balance."""
        return self._all(Call("GET", "/v1/billing/invoices", query={"tenant": tenant},
                              decode=models.InvoiceSummary.from_dict))

    def invoice(self, month: str, tenant: Optional[str] = None) -> models.Invoice:
        """One month's invoice ("YYYY-MM") with its lines."""
        return self._send(Call("GET", "/v1/billing/invoices/{id}", {"id": month},
                               query={"tenant": tenant}, decode=models.Invoice.from_dict))

    def invoice_csv(self, month: str, tenant: Optional[str] = None) -> str:
        """The same invoice as CSV text (for spreadsheets and accounting)."""
        return self._send(Call("GET", "/v1/billing/invoices/{id}", {"id": month},
                               query={"tenant": tenant, "format": "csv"}, accept="text/csv"))

    def revenue(self, from_: Time = None, to: Time = None) -> models.RevenueReport:
        """What moved into the platform's revenue in [from_, to) (operators)."""
        return self._send(Call("GET", "/v1/billing/revenue",
                               query={"from": _when(from_), "to": _when(to)},
                               decode=models.RevenueReport.from_dict))


class Packages(_Group):
    """/v1/packages: prepaid GPU-hour packages and the products they are bought from."""

    def products(self) -> list[models.PackageProduct]:
        return self._all(Call("GET", "/v1/packages/products",
                              decode=models.PackageProduct.from_dict))

    def set_product(self, spec: Optional[models.PackageProduct] = None, **fields: Any
                    ) -> models.PackageProduct:
        """Adds or replaces a product by name (operators); bought packages keep their terms."""
        return self._send(Call("PUT", "/v1/packages/products",
                               body=_body(models.PackageProduct, spec, fields),
                               decode=models.PackageProduct.from_dict))

    def buy(self, product: str, idempotency_key: Optional[str] = None) -> models.Package:
        """Buys a package of `product`; its price leaves the balance at once. Sent with an
        Idempotency-Key: a retry returns the same package and pays nothing."""
        return self._send(Call("POST", "/v1/packages", body=models.PackagePurchase(product),
                               idempotency_key=idempotency_key, decode=models.Package.from_dict))

    def list(self, tenant: Optional[str] = None) -> list[models.Package]:
        return self._all(Call("GET", "/v1/packages", query={"tenant": tenant},
                              decode=models.Package.from_dict))

    def get(self, package_id: str) -> models.Package:
        return self._send(Call("GET", "/v1/packages/{id}", {"id": package_id},
                               decode=models.Package.from_dict))


class Prices(_Group):
    """/v1/prices and /v1/spot-prices: the price book's versions and the spot market."""

    def get(self) -> models.Prices:
        """The price book: the version in force and those set to come."""
        return self._send(Call("GET", "/v1/prices", decode=models.Prices.from_dict))

    def set(self, change: Optional[models.PriceChange] = None, **fields: Any
            ) -> models.PriceVersion:
        """A new version from `effective_at` (default now; operators): the fields given replace
        those in force then, the rest carry over; a GPU type priced None loses its price."""
        return self._send(Call("PUT", "/v1/prices", body=_body(models.PriceChange, change, fields),
                               decode=models.PriceVersion.from_dict))

    def history(self) -> list[models.PriceVersion]:
        """Every version, in the order set."""
        return self._all(Call("GET", "/v1/prices/history",
                              decode=models.PriceVersion.from_dict))

    def spot(self, gpu_type: Optional[str] = None, from_: Time = None, to: Time = None
             ) -> models.SpotPrices:
        """Spot prices per priced type over [from_, to) (default the last day)."""
        return self._send(Call("GET", "/v1/spot-prices",
                               query={"gpu_type": gpu_type, "from": _when(from_),
                                      "to": _when(to)},
                               decode=models.SpotPrices.from_dict))


class Tenants(_Group):
    """/v1/tenants (operators) and their quotas."""

    def create(self, name: str) -> models.Tenant:
        """A new tenant (names are unique: the same name again is 409 tenant_name_taken)."""
        return self._send(Call("POST", "/v1/tenants", body=models.TenantCreate(name),
                               idempotency_key=False, decode=models.Tenant.from_dict))

    def list(self) -> list[models.TenantWithBalance]:
        """Every tenant with its balance."""
        return self._all(Call("GET", "/v1/tenants", decode=models.TenantWithBalance.from_dict))

    def quota(self, tenant: str) -> models.Quota:
        """A tenant's quota (tenants may read their own)."""
        return self._send(Call("GET", "/v1/tenants/{id}/quota", {"id": tenant},
                               decode=models.Quota.from_dict))

    def set_quota(self, tenant: str, quota: Optional[models.QuotaSet] = None, **fields: Any
                  ) -> models.Quota:
        """Replaces a tenant's whole quota (operators): a field left out is no limit."""
        return self._send(Call("PUT", "/v1/tenants/{id}/quota", {"id": tenant},
                               body=_body(models.QuotaSet, quota, fields),
                               decode=models.Quota.from_dict))


class Keys(_Group):
    """/v1/api-keys: a tenant admin's or an operator's keys."""

    def create(self, spec: Optional[models.ApiKeyCreate] = None, **fields: Any
               ) -> models.ApiKeyCreated:
        """A new key (tenant_id, role, name, scopes, expires_at), never more than the caller
        has. The answer's `key` is shown only here. Not retried once sent (the route takes no
        Idempotency-Key: a retry would make a second key)."""
        return self._send(Call("POST", "/v1/api-keys",
                               body=_body(models.ApiKeyCreate, spec, fields), idempotency_key=False,
                               decode=models.ApiKeyCreated.from_dict))

    def list(self, tenant: Optional[str] = None) -> list[models.ApiKey]:
        """The tenant's keys, without revoked keys and console sessions."""
        return self._all(Call("GET", "/v1/api-keys", query={"tenant": tenant},
                              decode=models.ApiKey.from_dict))

    def revoke(self, key_id: str) -> None:
        """Revokes a key; the console sessions made from it end too."""
        return self._send(Call("DELETE", "/v1/api-keys/{id}", {"id": key_id},
                               decode=_no_content))


class Audit(_Group):
    """/v1/audit: who changed what, oldest first (tenant admins: their tenant; operators)."""

    def list(self, tenant: Optional[str] = None, key: Optional[str] = None,
             after: Optional[int] = None, limit: Optional[int] = None
             ) -> Iterator[models.AuditEntry]:
        """Every entry (of `key`'s calls, of `tenant`), lazily over all pages; after: only
        entries with a higher seq."""
        return self._pages(Call("GET", "/v1/audit", decode=models.AuditEntry.from_dict,
                                query={"tenant": tenant, "key": key, "cursor": after,
                                       "limit": limit}))


class Nodes(_Group):
    """/v1/nodes (operators): the fleet, cordon, drain, quarantined GPUs."""

    def list(self, limit: Optional[int] = None) -> Iterator[models.Node]:
        """Every node in id order, lazily over all pages."""
        return self._pages(Call("GET", "/v1/nodes", query={"limit": limit},
                                decode=models.Node.from_dict))

    def get(self, node_id: str) -> models.Node:
        return self._send(Call("GET", "/v1/nodes/{id}", {"id": node_id},
                               decode=models.Node.from_dict))

    def _action(self, node_id: str, action: str) -> models.Node:
        # Setting a node's state twice leaves it as once: repeatable.
        return self._send(Call("POST", "/v1/nodes/{id}/" + action, {"id": node_id},
                               idempotency_key=False, repeatable=True,
                               decode=models.Node.from_dict))

    def cordon(self, node_id: str) -> models.Node:
        """No new work is placed on it; what runs there stays."""
        return self._action(node_id, "cordon")

    def uncordon(self, node_id: str) -> models.Node:
        return self._action(node_id, "uncordon")

    def drain(self, node_id: str) -> models.Node:
        """Cordons it and moves its work elsewhere."""
        return self._action(node_id, "drain")

    def release_gpu(self, node_id: str, index: int) -> models.Node:
        """Puts a quarantined GPU (by device index) back in service."""
        return self._send(Call("POST", "/v1/nodes/{id}/gpus/{index}/release",
                               {"id": node_id, "index": index}, idempotency_key=False,
                               decode=models.Node.from_dict))

    def benchmark(self, node_id: str) -> models.BenchmarkRequest:
        """Asks the node to measure its idle GPUs; they take no work until it answers."""
        return self._send(Call("POST", "/v1/nodes/{id}/benchmark", {"id": node_id},
                               idempotency_key=False, decode=models.BenchmarkRequest.from_dict))

    def benchmarks(self, node_id: str) -> list[models.GpuBenchmarkHistory]:
        """What the node's GPUs measured: each GPU's runs and training runs, oldest first."""
        return self._all(Call("GET", "/v1/nodes/{id}/benchmarks", {"id": node_id},
                              decode=models.GpuBenchmarkHistory.from_dict))

    def record_training(self, instance_id: str) -> models.TrainingRecord:
        """Records a finished resnet50-bench instance's images/s against the GPU it ran on (read
        from its log by the server); its type's figures then show in offers and estimates."""
        return self._send(Call("POST", "/v1/training-benchmarks",
                               body={"instance_id": instance_id}, idempotency_key=False,
                               repeatable=True, decode=models.TrainingRecord.from_dict))


class JoinTokens(_Group):
    """/v1/join-tokens (operators): how new nodes' agents join."""

    def create(self, description: Optional[str] = None, ttl_s: Optional[int] = None
               ) -> models.JoinToken:
        """A token that admits any number of nodes until it expires (default 24 h)."""
        return self._send(Call("POST", "/v1/join-tokens",
                               body=models.JoinTokenCreate(description=description, ttl_s=ttl_s),
                               idempotency_key=False, decode=models.JoinToken.from_dict))


class Metrics(_Group):
    """/v1/metrics/query: a GPU metric over time."""

    def query(self, metric: str, gpu: Optional[str] = None, node: Optional[str] = None,
              instance: Optional[str] = None, from_: Time = None, to: Time = None,
              step: Union[int, str, None] = None, agg: Optional[str] = None,
              resolution: Optional[str] = None) -> models.MetricSeries:
        """`metric` (gpu_util, gpu_temp, ... or a DCGM name) of exactly one of a GPU (UUID), a
        node (operators) or an instance, over [from_, to) (default the last hour) in steps
        (seconds, or "5m"), aggregated by agg (avg, max, min, sum)."""
        return self._send(Call("GET", "/v1/metrics/query", decode=models.MetricSeries.from_dict,
                               query={"metric": metric, "gpu": gpu, "node": node,
                                      "instance": instance, "from": _when(from_),
                                      "to": _when(to), "step": step, "agg": agg,
                                      "resolution": resolution}))


class Alerts(_Group):
    """/v1/alerts: pending and firing alerts, acknowledgements, rules (operators)."""

    def list(self, history: Optional[int] = None) -> models.AlertList:
        """Pending and firing alerts, and the `history` most recent transitions."""
        return self._send(Call("GET", "/v1/alerts", query={"history": history},
                               decode=models.AlertList.from_dict))

    def ack(self, alert_id: str) -> models.AlertAcknowledged:
        """Acknowledges a pending or firing alert (id "<rule>:<subject>")."""
        return self._send(Call("POST", "/v1/alerts/{id}/ack", {"id": alert_id},
                               idempotency_key=False, repeatable=True,
                               decode=models.AlertAcknowledged.from_dict))

    def rules(self) -> list[models.AlertRule]:
        """Every rule in force: built-in, config file, API (operators)."""
        return self._all(Call("GET", "/v1/alerts/rules", decode=models.AlertRule.from_dict))

    def set_rule(self, rule: Optional[models.AlertRuleCreate] = None, **fields: Any
                 ) -> models.AlertRule:
        """Creates or replaces an API rule by name (operators)."""
        # Replacing a rule by the same rule changes nothing: repeatable.
        return self._send(Call("POST", "/v1/alerts/rules",
                               body=_body(models.AlertRuleCreate, rule, fields),
                               idempotency_key=False,
                               repeatable=True, decode=models.AlertRule.from_dict))

    def delete_rule(self, name: str) -> None:
        return self._send(Call("DELETE", "/v1/alerts/rules/{name}", {"name": name},
                               decode=_no_content))


class Events(_Group):
    """/v1/events: what happened that an object's state alone does not tell."""

    def list(self, object: Optional[str] = None, kind: Optional[str] = None,
             tenant: Optional[str] = None, after: Optional[int] = None,
             limit: Optional[int] = None) -> Iterator[models.Event]:
        """Every event, oldest first, lazily over all pages; object/kind/tenant filter;
        after: only events with a higher seq (what came after one seen before)."""
        return self._pages(Call("GET", "/v1/events", decode=models.Event.from_dict,
                                query={"object": object, "kind": kind, "tenant": tenant,
                                       "cursor": after, "limit": limit}))


class Api(BaseClient):
    """The routes: the groups below and the platform-wide ones (whoami, offers, estimate, ...).
    Client and AsyncClient add how requests travel."""

    _GROUPS: dict[str, type] = {
        "instances": Instances, "jobs": Jobs, "reservations": Reservations, "volumes": Volumes,
        "uploads": Uploads, "templates": Templates, "billing": Billing, "packages": Packages,
        "prices": Prices, "tenants": Tenants, "keys": Keys, "audit": Audit, "nodes": Nodes,
        "join_tokens": JoinTokens, "metrics": Metrics, "alerts": Alerts, "events": Events,
    }

    instances: Instances
    jobs: Jobs
    reservations: Reservations
    volumes: Volumes
    uploads: Uploads
    templates: Templates
    billing: Billing
    packages: Packages
    prices: Prices
    tenants: Tenants
    keys: Keys
    audit: Audit
    nodes: Nodes
    join_tokens: JoinTokens
    metrics: Metrics
    alerts: Alerts
    events: Events

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for name, group in self._GROUPS.items():
            setattr(self, name, group(self))

    def _send(self, call: Call) -> Any:
        return self._run(self._call_flow(call))

    def health(self) -> models.Health:
        """The server's health (no key needed): status "ok", or "standby" naming the leader."""
        return self._send(Call("GET", "/healthz", decode=models.Health.from_dict))

    def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI 3.1 description, as this server has it."""
        return self._send(Call("GET", "/v1/openapi.json"))

    def whoami(self) -> models.Whoami:
        """The caller: tenant, key, role and scopes."""
        return self._send(Call("GET", "/v1/whoami", decode=models.Whoami.from_dict))

    def gpu_types(self) -> list[models.GpuType]:
        """Every known GPU type with its price and capacity."""
        return self._run(self._all_flow(Call("GET", "/v1/gpu-types",
                                             decode=models.GpuType.from_dict)))

    def offers(self, sort: Optional[str] = None) -> list[models.Offer]:
        """The GPU types with capacity, with what they measure. sort: "price",
        "perf_per_price", "spot_perf_per_price" or "images_per_price" (default: by GPU type)."""
        return self._run(self._all_flow(Call("GET", "/v1/offers", query={"sort": sort},
                                             decode=models.Offer.from_dict)))

    def estimate(self, spec: Optional[models.EstimateCreate] = None, **fields: Any
                 ) -> models.Estimate:
        """The hourly price of a launch (the body of instances.create); creates nothing. With
        work={"model": "resnet50", "epochs": N}, also how long N epochs take on it and what they
        cost, from the type's measured figures (Conflict not_measured before any)."""
        return self._send(Call("POST", "/v1/estimate",
                               body=_body(models.EstimateCreate, spec, fields),
                               idempotency_key=False, repeatable=True,
                               decode=models.Estimate.from_dict))

    def balance(self, tenant: Optional[str] = None) -> models.Balance:
        """The caller's balance (operators: `tenant`'s); the same as billing.balance."""
        return self.billing.balance(tenant)

    def wait_until(self, instance_id: str, state: Union[str, Iterable[str]],
                   timeout: float = 300.0, poll: float = 0.5) -> models.Instance:
        """instances.wait_until: polls until the instance is in `state`."""
        return self.instances.wait_until(instance_id, state, timeout, poll)
