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
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from devserver import dev_with_container_node, launch_latencies, median_and_p99  # noqa: E402
from podman_service import IMAGE  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--launches", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    with dev_with_container_node(args.binary, "gpurent-container-bench-") as (client, podman, _):
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
