#!/usr/bin/env python3
"""What the runtimes cost a workload (issue 30, "Compare"): the same kernel run bare, as a process
instance and as a container instance, its figures compared with the bare ones.

The kernel (bench/overhead_kernel.c, built static here with cc -O3) multiplies FP32 matrices on
one thread (GFLOPS) and copies memory (GB/s, read plus write), and prints one line that this
script reads from the instance's log. A fresh `gpurent dev` (bench/devserver.py) runs the process
instances on its own node; a second agent with --container-socket on a Podman service of its own
(tests/e2e/podman_service.py) runs the container instances from a busybox image with the kernel
in it. Rounds alternate the three ways (bare, process, container) so that a slow spell of the
machine falls on all of them; each figure is the median over --rounds. The instance's time to
start is not in the figures: the kernel times itself.

This machine has no GPU, so the kernel is the CPU's: it measures what the runtimes' isolation
(namespaces, cgroups, runc, seccomp) costs computation and memory traffic. A GPU's GEMM and
bandwidth through the same runtimes need a GPU machine (gpurent-gpubench in place of the kernel).

Usage: bench/runtime_overhead.py [--binary build/gpurent] [--rounds 15]
Prints a Markdown block for bench/RESULTS.md.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from devserver import dev_with_container_node  # noqa: E402

PREFIX = "GPURENT_OVERHEAD "
KERNEL_IMAGE = "localhost/gpurent-overhead:kernel"


def figures_in(text):
    for line in text.splitlines():
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX):])
    raise SystemExit(f"no {PREFIX.strip()} line in:\n{text[-2000:]}")


def build_kernel():
    # Not under /tmp: a sandboxed process run has a /tmp (and /var/tmp) of its own.
    kernel = os.path.join(ROOT, "build", "overhead-kernel")
    os.makedirs(os.path.dirname(kernel), exist_ok=True)
    subprocess.run(["cc", "-O3", "-static", "-o", kernel,
                    os.path.join(ROOT, "bench", "overhead_kernel.c")], check=True)
    return kernel


def import_kernel_image(podman, kernel, workdir):
    """A busybox image with the kernel at /bin/overhead-kernel, imported into the test store."""
    rootfs = os.path.join(workdir, "rootfs")
    os.makedirs(os.path.join(rootfs, "bin"))
    for sub in ("tmp", "proc", "dev", "sys", "etc"):
        os.makedirs(os.path.join(rootfs, sub))
    shutil.copy("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
    os.symlink("busybox", os.path.join(rootfs, "bin", "sh"))
    shutil.copy(kernel, os.path.join(rootfs, "bin", "overhead-kernel"))
    tar = os.path.join(workdir, "kernel-rootfs.tar")
    subprocess.run(["tar", "-C", rootfs, "-cf", tar, "."], check=True)
    podman.podman("import", "--change", "ENV PATH=/bin", tar, KERNEL_IMAGE)


def run_instance(client, body):
    """Runs one instance to its end; its log's figures."""
    created = client.expect("POST", "/v1/instances", dict(body, restart_policy="never"), 201)
    instance_id = created["id"]
    deadline = time.monotonic() + 300
    while True:
        state = client.expect("GET", f"/v1/instances/{instance_id}")
        if state["state"] in ("stopped", "failed"):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{instance_id} did not finish")
        time.sleep(0.05)
    if state["exit_code"] != 0:
        raise SystemExit(f"{instance_id} ended {state['state']} ({state['exit_code']})")
    # The log reaches the server shortly after the end is reported.
    for _ in range(100):
        status, log = client.call("GET", f"/v1/instances/{instance_id}/logs")
        if status == 200 and PREFIX.encode() in log:
            break
        time.sleep(0.05)
    client.call("DELETE", f"/v1/instances/{instance_id}")
    return figures_in(log.decode(errors="replace"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()

    kernel = build_kernel()
    results = {"bare": [], "process": [], "container": []}
    with dev_with_container_node(
            args.binary, "gpurent-overhead-bench-", container_gpus=1,
            before_agent=lambda podman, workdir: import_kernel_image(podman, kernel, workdir)) as (
                client, _, _):
        ways = {
            "bare": lambda: figures_in(subprocess.run([kernel], capture_output=True, text=True,
                                                      check=True).stdout),
            "process": lambda: run_instance(client, {"gpu_type": "h100-80g",
                                                     "command": [kernel]}),
            "container": lambda: run_instance(client, {"gpu_type": "a100-80g",
                                                       "image": KERNEL_IMAGE,
                                                       "command": ["/bin/overhead-kernel"]}),
        }
        for way in ways.values():  # warm-up: the engine's first container, page caches
            way()
        for round_ in range(args.rounds):
            order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
            for name in order:
                results[name].append(ways[name]())

    def median(name, figure):
        return statistics.median(r[figure] for r in results[name])

    print(f"Runtime overhead on the CPU — {platform.node()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}, `bench/runtime_overhead.py --rounds {args.rounds}`\n")
    print("| run | FP32 GEMM, one thread (median) | vs bare | memory copy (median) | vs bare |")
    print("| --- | --- | --- | --- | --- |")
    for name in results:
        gemm, copy = median(name, "gemm_gflops"), median(name, "memory_gbps")
        print(f"| {name} | {gemm:.2f} GFLOPS | {gemm / median('bare', 'gemm_gflops'):.3f} | "
              f"{copy:.2f} GB/s | {copy / median('bare', 'memory_gbps'):.3f} |")
    spread = {name: (min(r["gemm_gflops"] for r in rs), max(r["gemm_gflops"] for r in rs))
              for name, rs in results.items()}
    print("\nGEMM range per run (min..max GFLOPS): " +
          ", ".join(f"{n} {lo:.2f}..{hi:.2f}" for n, (lo, hi) in spread.items()))


if __name__ == "__main__":
    main()
