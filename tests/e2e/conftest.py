"""Fixtures for the end-to-end tests: the real `gpurent` binary, started on a free port in a
temporary directory, driven over real HTTP and through the real CLI."""

import json
import os
import re
import secrets
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

BINARY = os.environ.get("GPURENT_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "gpurent")

# Bounds for every wait in these tests: nothing waits forever.
STARTUP_TIMEOUT_S = 30
STATE_TIMEOUT_S = 30


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)


def http(url, method="GET", path="/", key=None, body=None, headers=None, raw=None, timeout=30,
         context=None):
    """One request; `context`: the ssl.SSLContext of an https:// URL (whom it trusts, what
    certificate it presents)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", "Bearer " + key)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return Response(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, dict(error.headers), error.read())


def problem(response, status, code=None):
    """The response is a problem+json error with this status (and code): returns its body."""
    assert response.status == status, (response.status, response.body)
    assert response.headers.get("Content-Type", "").startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    if code:
        assert body["code"] == code, body
    return body


def wait_for(predicate, timeout=STATE_TIMEOUT_S, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def assert_exec_in_workspace(platform, instance_id, key):
    """`gpurent exec` in a running instance whose /workspace holds `note` ("kept"): the run's env
    and directory, both streams and the status; a program it lacks is 127; another tenant is
    refused."""
    ran = platform.cli("exec", instance_id, "--", "sh", "-c",
                       "echo in $GPURENT_INSTANCE_ID $(pwd); cat note; echo oops >&2; exit 3",
                       key=key, check=False)
    assert ran.returncode == 3, (ran.stdout, ran.stderr)
    assert ran.stdout == f"in {instance_id} /workspace\nkept\n", ran.stdout
    assert ran.stderr == "oops\n", ran.stderr
    missing = platform.cli("exec", instance_id, "--", "no-such-program", key=key, check=False)
    assert missing.returncode == 127, (missing.stdout, missing.stderr)
    _, other = platform.new_tenant("nosy")
    assert platform.cli("exec", instance_id, "--", "true", key=other, check=False).returncode != 0


class Process:
    """A gpurent process whose output is collected in a file (so a full pipe never blocks it)."""

    def __init__(self, args, workdir, env, name):
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([BINARY, *args], stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, cwd=workdir, start_new_session=True)

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


class Platform:
    """`gpurent dev` in a temp dir: the URL, the admin key, and helpers to drive it."""

    def __init__(self, workdir, sim_gpus="8xh100-80g", extra_args=()):
        self.workdir = workdir
        self.extra_args = list(extra_args)  # more flags for `gpurent dev`, e.g. --config
        self.data_dir = os.path.join(workdir, "data")
        self.admin_key = "gpr_" + secrets.token_urlsafe(32)
        self.sim_gpus = sim_gpus
        self.env = dict(os.environ)
        self.env["XDG_CONFIG_HOME"] = os.path.join(workdir, "config")
        # The controller's invariants are checked after every command and tick (common/assert.h).
        self.env["GPURENT_EXPENSIVE_CHECKS"] = "1"
        self.env.pop("GPURENT_URL", None)
        self.env.pop("GPURENT_API_KEY", None)
        self.server = None
        self.url = None
        self.port = 0
        self.starts = 0
        self.extra = []

    def start(self):
        listen = f"127.0.0.1:{self.port}"
        self.starts += 1  # each start logs to its own file, so an old URL is never read back
        self.server = Process(["dev", "--listen", listen, "--data-dir", self.data_dir,
                               "--admin-key", self.admin_key, "--sim-gpus", self.sim_gpus,
                               *self.extra_args],
                              self.workdir, self.env, f"dev-{self.starts}")
        match = wait_for(lambda: self._ready(), STARTUP_TIMEOUT_S, "gpurent dev to print its URL")
        self.url = match
        self.port = int(match.rsplit(":", 1)[1])
        wait_for(lambda: http(self.url, path="/healthz").status == 200, what="/healthz")
        # The local agent has joined once its GPUs are offered.
        wait_for(lambda: self.offers().get("h100-80g", {}).get("total", 0) > 0 or
                 "h100" not in self.sim_gpus, what="the local agent's GPUs")
        return self

    def _ready(self):
        if self.server.proc.poll() is not None:
            raise AssertionError("gpurent dev exited:\n" + self.server.output())
        found = re.search(r"http://127\.0\.0\.1:(\d+)", self.server.output())
        return found.group(0) if found else None

    def restart(self):
        self.server.stop()
        self.start()

    def call(self, method, path, key=None, body=None, **kwargs):
        return http(self.url, method, path, key if key is not None else self.admin_key, body,
                    **kwargs)

    def offers(self):
        response = self.call("GET", "/v1/offers")
        assert response.status == 200, response.body
        return {o["gpu_type"]: o for o in response.json()["items"]}

    def instance(self, instance_id, key=None):
        response = self.call("GET", f"/v1/instances/{instance_id}", key)
        assert response.status == 200, response.body
        return response.json()

    def wait_state(self, instance_id, states, key=None, timeout=STATE_TIMEOUT_S):
        states = {states} if isinstance(states, str) else set(states)
        return wait_for(lambda: (lambda i: i if i["state"] in states else None)(
            self.instance(instance_id, key)), timeout, f"{instance_id} to be {states}")

    def new_tenant(self, name, topup_micros=100_000_000):
        tenant = self.call("POST", "/v1/tenants", body={"name": name})
        assert tenant.status == 201, tenant.body
        tenant_id = tenant.json()["id"]
        key = self.call("POST", "/v1/api-keys", body={"tenant_id": tenant_id, "role": "tenant"})
        assert key.status == 201, key.body
        if topup_micros:
            topup = self.call("POST", "/v1/billing/topups",
                              body={"tenant_id": tenant_id, "amount_micros": topup_micros})
            assert topup.status == 201, topup.body
        return tenant_id, key.json()["key"]

    def cli_env(self, key=None):
        env = dict(self.env)
        env["GPURENT_URL"] = self.url
        env["GPURENT_API_KEY"] = key or self.admin_key
        return env

    def cli(self, *args, key=None, check=True, timeout=60):
        result = subprocess.run([BINARY, *args], capture_output=True, text=True,
                                env=self.cli_env(key), timeout=timeout)
        if check:
            assert result.returncode == 0, f"gpurent {' '.join(args)}: {result.stderr}"
        return result

    def start_process(self, args, name, env=None):
        process = Process(args, self.workdir, env or self.env, name)
        self.extra.append(process)
        return process

    def shutdown(self):
        # Remove every instance so that no workload outlives the test.
        if self.server and self.server.proc.poll() is None:
            listing = self.call("GET", "/v1/instances?limit=500")
            if listing.status == 200:
                for item in listing.json()["items"]:
                    if item["state"] != "terminated":
                        self.call("DELETE", f"/v1/instances/{item['id']}")
                for item in listing.json()["items"]:
                    self.wait_state(item["id"], "terminated", timeout=20)
        for process in self.extra:
            process.stop()
        if self.server:
            self.server.stop()


@pytest.fixture
def platform(tmp_path):
    p = Platform(str(tmp_path)).start()
    yield p
    p.shutdown()
