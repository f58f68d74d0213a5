"""A real `gpurent dev` for the SDK's tests (as tests/e2e/conftest.py starts it), and the record
of which routes the SDK's typed methods reached.

The binary is $GPURENT_BIN (make test sets it; then it must exist), else the repository's
build/gpurent; without either the integration tests are skipped.
"""
from __future__ import annotations

import collections
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(SDK))
SPEC = os.path.join(REPO, "docs", "openapi.json")
if SDK not in sys.path:
    sys.path.insert(0, SDK)

import gpurent  # noqa: E402

STARTUP_TIMEOUT_S = 30


def find_binary() -> Optional[str]:
    """$GPURENT_BIN (then it must be there), else the repository's build, else None."""
    named = os.environ.get("GPURENT_BIN")
    if named:
        if not os.access(named, os.X_OK):
            raise RuntimeError(f"GPURENT_BIN={named} is not an executable")
        return named
    built = os.path.join(REPO, "build", "gpurent")
    return built if os.access(built, os.X_OK) else None


def wait_for(predicate: Callable[[], Any], timeout: float = 30, what: str = "condition",
             interval: float = 0.05) -> Any:
    """Polls until predicate() is truthy and returns it; AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


# ---- which routes the SDK reached ---------------------------------------------------------------
def spec_routes() -> set[tuple[str, str]]:
    """Every (method, path template) of docs/openapi.json."""
    with open(SPEC, encoding="utf-8") as f:
        paths = json.load(f)["paths"]
    return {(method.upper(), path) for path, ops in paths.items() for method in ops
            if method in ("get", "put", "post", "delete", "patch")}


def template_pattern(route: str) -> re.Pattern:
    """A path template as a regex: each {param} one non-empty segment."""
    parts = re.split(r"(\{[^}]+\})", route)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts))


class RouteRecorder:
    """An on_request hook: counts the answers each (method, route) got, by status class, and
    keeps every exchange whose sent path does not fit the route it claims."""

    def __init__(self) -> None:
        self.answers: collections.Counter = collections.Counter()  # (method, route, ok)
        self.mismatches: list[tuple[str, str, str]] = []

    def __call__(self, info: gpurent.RequestInfo) -> None:
        if info.route is None or info.status is None:
            return  # Client.request() calls name no route; a failed exchange reached nothing
        if not template_pattern(info.route).fullmatch(info.path):
            self.mismatches.append((info.method, info.route, info.path))
        self.answers[(info.method, info.route, info.status < 400)] += 1

    def succeeded(self) -> set[tuple[str, str]]:
        return {(m, r) for (m, r, ok), n in self.answers.items() if ok and n}

    def called(self) -> set[tuple[str, str]]:
        return {(m, r) for (m, r, _), n in self.answers.items() if n}


RECORDER = RouteRecorder()


# ---- gpurent dev ---------------------------------------------------------------------------------
class DevServer:
    """`gpurent dev` in a temporary directory on a free port, with simulated GPUs."""

    def __init__(self, sim_gpus: str = "8xh100-80g"):
        binary = find_binary()
        if binary is None:
            raise RuntimeError("no gpurent binary (set GPURENT_BIN)")
        self.binary = binary
        self.sim_gpus = sim_gpus
        self.dir = tempfile.TemporaryDirectory(prefix="gpurent-sdk-")
        self.data_dir = os.path.join(self.dir.name, "data")
        self.admin_key = "gpr_" + secrets.token_urlsafe(30)[:40]
        self.env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.dir.name, "config"))
        # Workloads run the python3 found first: Debian's, which has PyTorch (resnet50-bench).
        self.env["PATH"] = "/usr/bin:" + self.env.get("PATH", "")
        self.env.pop("GPURENT_URL", None)
        self.env.pop("GPURENT_API_KEY", None)
        self.log_path = os.path.join(self.dir.name, "dev.log")
        self.extra: list[subprocess.Popen] = []
        self.url = ""
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "DevServer":
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [self.binary, "dev", "--listen", "127.0.0.1:0", "--data-dir", self.data_dir,
                 "--admin-key", self.admin_key, "--sim-gpus", self.sim_gpus, "--no-cli-config"],
                stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.dir.name,
                start_new_session=True)
        try:
            self.url = wait_for(self._printed_url, STARTUP_TIMEOUT_S, "gpurent dev's URL")
            admin = self.client()
            wait_for(lambda: any(o.total > 0 for o in admin.offers()), STARTUP_TIMEOUT_S,
                     "the local agent's GPUs")
            admin.close()
        except BaseException:
            self.stop()
            raise
        return self

    def _printed_url(self) -> Optional[str]:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError("gpurent dev exited:\n" + self.output())
        found = re.search(r"URL:\s+(http://127\.0\.0\.1:\d+)", self.output())
        return found.group(1) if found else None

    def output(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def _options(self, api_key: Optional[str], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Client options: this server, the admin key by default, and an on_request hook that
        feeds the route record (and then the caller's own hook, if any)."""
        own = kwargs.pop("on_request", None)

        def record(info: gpurent.RequestInfo) -> None:
            RECORDER(info)
            if own is not None:
                own(info)
        options: dict[str, Any] = dict(url=self.url, api_key=api_key or self.admin_key,
                                       timeout=20)
        options.update(kwargs, on_request=record)
        return options

    def client(self, api_key: Optional[str] = None, **kwargs: Any) -> gpurent.Client:
        """A Client of this server whose exchanges the route record counts."""
        return gpurent.Client(**self._options(api_key, kwargs))

    def async_client(self, api_key: Optional[str] = None, **kwargs: Any) -> gpurent.AsyncClient:
        return gpurent.AsyncClient(**self._options(api_key, kwargs))

    def new_tenant(self, name: str, topup_micros: int = 100_000_000,
                   role: str = "tenant-admin") -> tuple[str, str]:
        """A tenant with a key of `role` and a balance: (tenant id, key)."""
        admin = self.client()
        tenant = admin.tenants.create(name)
        key = admin.keys.create(tenant_id=tenant.id, role=role, name=f"{name}-key")
        if topup_micros:
            admin.billing.topup(tenant.id, topup_micros, reference="sdk tests")
        admin.close()
        return tenant.id, key.key

    def start_process(self, args: list[str], name: str) -> subprocess.Popen:
        """Another gpurent process (an agent) that stop() ends."""
        with open(os.path.join(self.dir.name, f"{name}.log"), "wb") as log:
            proc = subprocess.Popen([self.binary, *args], stdout=log, stderr=subprocess.STDOUT,
                                    env=self.env, cwd=self.dir.name, start_new_session=True)
        self.extra.append(proc)
        return proc

    def _remove_work(self) -> None:
        """Cancels every job and removes every instance, so no workload outlives the tests."""
        c = gpurent.Client(url=self.url, api_key=self.admin_key, timeout=10, retries=1)
        try:
            for job in c.jobs.list():
                if job.state not in gpurent.JOB_FINAL_STATES:
                    c.jobs.cancel(job.id)
            live = [i for i in c.instances.list() if i.state != "terminated"]
            for job in c.jobs.list():
                live += [i for i in c.instances.list(job=job.id) if i.state != "terminated"]
            for inst in live:
                if inst.job_id is None:
                    c.instances.delete(inst.id)
            for inst in live:
                c.instances.wait_until(inst.id, ("terminated", "stopped", "failed", "preempted"),
                                       timeout=20)
        finally:
            c.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self._remove_work()
            finally:
                for proc in [*self.extra, self.proc]:
                    _terminate(proc)
        self.dir.cleanup()


def _terminate(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_SHARED: Optional[DevServer] = None


def shared_dev() -> DevServer:
    """The session's one `gpurent dev` (8 simulated H100s), started on first use; conftest
    stops it when the session ends."""
    global _SHARED
    if _SHARED is None:
        _SHARED = DevServer().start()
    return _SHARED


def stop_shared() -> None:
    global _SHARED
    if _SHARED is not None:
        server, _SHARED = _SHARED, None
        server.stop()
