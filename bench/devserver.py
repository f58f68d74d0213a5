"""Starting and driving `gpurent dev` for the benchmarks (bench/api_bench.py, bench/fleet_bench.py,
bench/container_bench.py, bench/runtime_overhead.py)."""

import contextlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time


# The rate limits a benchmark's server runs with (server/rate_limiter.h): every request still goes
# through its key's buckets, so their cost is measured, but none is refused: one key drives
# thousands of requests a second here, far past the defaults meant for a tenant.
UNREFUSED_LIMITS = ("[rate_limits]\n"
                    "per_key = { per_second = 1000000, burst = 1000000 }\n"
                    "creations_per_key = { per_second = 1000000, burst = 1000000 }\n")


def bench_config(workdir, limits=UNREFUSED_LIMITS):
    """A server config file under workdir with these rate limits; returns ["--config", path]."""
    path = os.path.join(workdir, "bench-server.toml")
    with open(path, "w") as out:
        out.write(limits)
    return ["--config", path]


def start_server(binary, workdir, key, store, port):
    """`gpurent server --store STORE` on `port` (no local node), once it leads; returns the
    process."""
    out = open(os.path.join(workdir, "dev.log"), "wb")
    proc = subprocess.Popen([binary, "server", "--listen", f"127.0.0.1:{port}", "--data-dir",
                             os.path.join(workdir, "data"), "--admin-key", key, "--store", store,
                             *bench_config(workdir)],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("gpurent server exited:\n" +
                             open(os.path.join(workdir, "dev.log"), errors="replace").read())
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if json.loads(conn.getresponse().read()).get("status") == "ok":
                return proc
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise SystemExit("gpurent server did not lead")


def start_dev(binary, workdir, key, limits=UNREFUSED_LIMITS):
    """`gpurent dev` on a free port with its data under workdir; returns (process, port)."""
    path = os.path.join(workdir, "dev.log")
    out = open(path, "wb")
    proc = subprocess.Popen([binary, "dev", "--listen", "127.0.0.1:0", "--data-dir",
                             os.path.join(workdir, "data"), "--admin-key", key,
                             "--sim-gpus", "8xh100-80g", "--no-cli-config",
                             *bench_config(workdir, limits)],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = open(path, errors="replace").read()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", text)
        if found:
            return proc, int(found.group(1))
        if proc.poll() is not None:
            raise SystemExit("gpurent dev exited:\n" + text)
        time.sleep(0.05)
    raise SystemExit("gpurent dev did not start")


class Client:
    def __init__(self, port, key):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.key = key

    def call(self, method, path, body=None):
        headers = {"Authorization": "Bearer " + self.key}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        return response.status, response.read()

    def expect(self, method, path, body=None, status=200):
        """The decoded JSON answer of a call that must answer `status` (else the benchmark stops)."""
        got, data = self.call(method, path, body)
        if got != status:
            raise SystemExit(f"{method} {path}: {got} {data!r}")
        return json.loads(data) if data else None


def all_items(get_json, path):
    """Every item of a paged listing: get_json(path) is one decoded page; pages are followed by
    their next_cursor, 500 items at a time."""
    items, cursor = [], None
    while True:
        separator = "&" if "?" in path else "?"
        page = get_json(f"{path}{separator}limit=500" + (f"&cursor={cursor}" if cursor else ""))
        items += page["items"]
        cursor = page.get("next_cursor")
        if not cursor:
            return items


def wait_state(client, instance_id, state, poll_s=0.001, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = client.call("GET", f"/v1/instances/{instance_id}")
        if status == 200 and json.loads(body)["state"] == state:
            return
        time.sleep(poll_s)
    raise SystemExit(f"{instance_id} never became {state}")


def launch_latencies(client, body, count):
    """Launches `count` instances one after the other; for each, the milliseconds from before the
    POST until GET says running (polled every millisecond). Each is removed before the next, not
    timed. Returns the latencies sorted."""
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        status, answer = client.call("POST", "/v1/instances", body)
        assert status == 201, answer
        instance_id = json.loads(answer)["id"]
        wait_state(client, instance_id, "running")
        latencies.append((time.perf_counter() - start) * 1000)
        client.call("DELETE", f"/v1/instances/{instance_id}")
        wait_state(client, instance_id, "terminated")
    return sorted(latencies)


def median_and_p99(sorted_values):
    middle = len(sorted_values) // 2
    median = (sorted_values[middle] if len(sorted_values) % 2
              else (sorted_values[middle - 1] + sorted_values[middle]) / 2)
    return median, sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * 0.99))]


def wait_for(predicate, what, timeout=60):
    """Polls predicate every 0.1 s until it holds; exits the benchmark after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {what}")


def offers_total(client, gpu_type):
    """How many GPUs of the type the offers count (0 before the first answer)."""
    status, body = client.call("GET", "/v1/offers")
    if status != 200:
        return 0
    return next((o["total"] for o in json.loads(body)["items"] if o["gpu_type"] == gpu_type), 0)


@contextlib.contextmanager
def dev_with_container_node(binary, prefix, container_gpus=8, before_agent=None):
    """`gpurent dev` (8 simulated H100s on its own node) and a second agent, "containers", with
    --container-socket on a Podman service of its own (tests/e2e/podman_service.py: vfs, runc, the
    busybox image in its store) and `container_gpus` simulated A100s. The server allows the node's
    own image store (localhost/), which the default [outbound] policy refuses as a registry.
    before_agent(podman, workdir) runs before the agent joins (to import another image). Yields
    (client, podman, workdir) once both nodes are offered; stops all of it afterwards, on SIGTERM
    too (a timeout, Ctrl-C from a wrapper)."""
    from podman_service import Podman  # tests/e2e, on the caller's path
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    workdir = tempfile.mkdtemp(prefix=prefix)
    key = "gpr_" + secrets.token_urlsafe(32)
    podman = Podman()
    dev, port = start_dev(binary, workdir, key,
                          UNREFUSED_LIMITS + '[outbound]\nallow = ["localhost"]\n')
    agent = None
    try:
        if before_agent:
            before_agent(podman, workdir)
        client = Client(port, key)
        token = client.expect("POST", "/v1/join-tokens", {"description": "bench"}, 201)["token"]
        agent_log = open(os.path.join(workdir, "agent.log"), "wb")
        agent = subprocess.Popen(
            [binary, "agent", "--server", f"http://127.0.0.1:{port}", "--join-token", token,
             "--sim-gpus", f"{container_gpus}xa100-80g", "--data-dir",
             os.path.join(workdir, "agent"), "--name", "containers", "--container-socket",
             podman.socket],
            stdout=agent_log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: offers_total(client, "a100-80g") == container_gpus,
                 "the container node's GPUs")
        wait_for(lambda: offers_total(client, "h100-80g") > 0, "the dev node's GPUs")
        yield client, podman, workdir
    finally:
        if agent:
            agent.send_signal(signal.SIGTERM)
            agent.wait(timeout=30)
        dev.send_signal(signal.SIGTERM)
        dev.wait(timeout=30)
        podman.close()
        shutil.rmtree(workdir, ignore_errors=True)
