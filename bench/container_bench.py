#!/usr/bin/env python3
"""Container instance start on a real Podman (issue 6, "Benchmarks", first bullet).

A fresh `gpurent dev` (bench/devserver.py) and a second agent with --container-socket on a Podman
service of its own (tests/e2e/podman_service.py: vfs storage, cgroupfs, runc, a busybox image
already in the store, so nothing is pulled). Then, one after the other, --launches instances of
the image with a shell waiting on `sleep 1000`, CPU and memory limits: for each, the time from before
POST /v1/instances until GET says `running` (polled every millisecond; the agent reports running
once the engine has started the container). Each is removed before the next (not timed). The
first --warmup launches are not counted (the engine's first container pays for its caches).

For comparison, the same launches without an image on the dev node's process runtime, and
`podman run --rm --network none IMAGE sh -c :` through the CLI (a container's whole life in the engine alone).

Usage: bench/container_bench.py [--binary build/gpurent] [--launches 50] [--warmup 3]
Prints a Markdown block for bench/RESULTS.md.
"""

import argparse
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from devserver import (UNREFUSED_LIMITS, Client, launch_latencies, median_and_p99,  # noqa: E402
                       start_dev, wait_for)
from podman_service import IMAGE, Podman  # noqa: E402


def has_gpus(client, gpu_type, count):
    status, body = client.call("GET", "/v1/offers")
    return status == 200 and any(offer["gpu_type"] == gpu_type and offer["total"] == count
                                 for offer in json.loads(body)["items"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--launches", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    # A SIGTERM (a timeout, Ctrl-C from a wrapper) still stops the server, agent and Podman.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    workdir = tempfile.mkdtemp(prefix="gpurent-container-bench-")
    key = "gpr_" + secrets.token_urlsafe(32)
    podman = Podman()
    # The image lives in the node's own store (Podman's localhost/), which the default [outbound]
    # policy refuses as a registry.
    dev, port = start_dev(args.binary, workdir, key,
                          UNREFUSED_LIMITS + '[outbound]\nallow = ["localhost"]\n')
    agent = None
    try:
        client = Client(port, key)
        status, body = client.call("POST", "/v1/join-tokens", {"description": "bench"})
        assert status == 201, body
        token = json.loads(body)["token"]
        agent_log = open(os.path.join(workdir, "agent.log"), "wb")
        agent = subprocess.Popen(
            [args.binary, "agent", "--server", f"http://127.0.0.1:{port}", "--join-token", token,
             "--sim-gpus", "8xa100-80g", "--data-dir", os.path.join(workdir, "agent"),
             "--name", "containers", "--container-socket", podman.socket],
            stdout=agent_log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(lambda: has_gpus(client, "a100-80g", 8), "the container node's 8 GPUs")

        # PID 1 of a container gets no default signal handlers: without the trap, each removal
        # (not timed) would wait out the stop grace period before SIGKILL.
        container = {"gpu_type": "a100-80g", "image": IMAGE,
                     "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 1000 & wait"],
                     "cpu": 1, "memory_gb": 1}
        launch_latencies(client, container, args.warmup)
        in_container = launch_latencies(client, container, args.launches)
        as_process = launch_latencies(client, {"gpu_type": "h100-80g", "command": "sleep 1000"},
                                      args.launches)
        engine_alone = []
        for _ in range(min(args.launches, 20)):
            start = time.perf_counter()
            podman.podman("run", "--rm", "--network", "none", IMAGE, "sh", "-c", ":")
            engine_alone.append((time.perf_counter() - start) * 1000)
        engine_alone.sort()
    finally:
        if agent:
            agent.send_signal(signal.SIGTERM)
            agent.wait(timeout=30)
        dev.send_signal(signal.SIGTERM)
        dev.wait(timeout=30)
        podman.close()
        shutil.rmtree(workdir, ignore_errors=True)

    def row(name, values):
        p50, p99 = median_and_p99(values)
        return f"| {name} | {len(values)} | {p50:.0f} ms | {p99:.0f} ms | {values[-1]:.0f} ms |"

    print(f"Container instance start — {platform.node()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}, `bench/container_bench.py --launches {args.launches}`\n")
    print("| path | launches | p50 | p99 | max |")
    print("| --- | --- | --- | --- | --- |")
    print(row("POST /v1/instances with an image -> running (Podman, runc, vfs)", in_container))
    print(row("POST /v1/instances without an image -> running (process runtime)", as_process))
    print(row("`podman run --rm --network none IMAGE sh -c :` (the engine alone, CLI)",
              engine_alone))


if __name__ == "__main__":
    main()
