#!/usr/bin/env python3
"""The cost of telemetry in a simulated fleet (issue 5, "Benchmarks"): a fresh `gpurent dev` and
one `gpurent agent --sim-nodes N --sim-gpus 8xh100-80g` with --telemetry-interval I; once every
node is ready (GET /v1/offers shows 8 x (N + 1) GPUs) and after a settle, the CPU time (utime +
stime) and resident set of the fleet and of the server are measured over DURATION seconds.
Running it with I = 0 (no telemetry) and I = 1 gives the cost of 1 Hz telemetry.

Usage: bench/fleet_telemetry.py [--binary build/gpurent] [--nodes 2000] [--interval 1]
                                [--duration 30] [--settle 5]
"""

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from agent_footprint import cpu_seconds, rss_mb  # noqa: E402
from devserver import Client, start_dev  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                         "gpurent"))
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--interval", type=float, default=1)
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--settle", type=float, default=5)
    args = parser.parse_args()
    key = "gpr_" + secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as workdir:
        dev, port = start_dev(args.binary, workdir, key)
        fleet = None
        try:
            client = Client(port, key)

            call = client.expect

            token = call("POST", "/v1/join-tokens", {"description": "fleet"}, 201)["token"]
            log = open(os.path.join(workdir, "fleet.log"), "wb")
            fleet = subprocess.Popen(
                [args.binary, "agent", "--server", f"http://127.0.0.1:{port}", "--join-token",
                 token, "--sim-nodes", str(args.nodes), "--sim-gpus", "8xh100-80g", "--data-dir",
                 os.path.join(workdir, "fleet"), "--name", "bench",
                 "--telemetry-interval", f"{args.interval:g}"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            want = 8 * (args.nodes + 1)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                offers = call("GET", "/v1/offers")["items"]
                if sum(o["total"] for o in offers if o["gpu_type"] == "h100-80g") >= want:
                    break
                time.sleep(0.5)
            else:
                raise SystemExit("the fleet did not become ready")
            time.sleep(args.settle)
            f0, s0, t0 = cpu_seconds(fleet.pid), cpu_seconds(dev.pid), time.monotonic()
            time.sleep(args.duration)
            f1, s1, t1 = cpu_seconds(fleet.pid), cpu_seconds(dev.pid), time.monotonic()
            nodes = call("GET", "/v1/nodes")["items"]
            with_telemetry = sum(1 for n in nodes if any(g.get("telemetry") for g in n["gpus"]))
            span = t1 - t0
            print(f"| {args.nodes} | {args.interval:g} s | {100 * (f1 - f0) / span:.1f} % | "
                  f"{rss_mb(fleet.pid):.0f} MB | {100 * (s1 - s0) / span:.1f} % | "
                  f"{rss_mb(dev.pid):.0f} MB | {with_telemetry} / {len(nodes)} |")
        finally:
            if fleet:
                fleet.send_signal(signal.SIGTERM)
                fleet.wait(timeout=60)
            dev.send_signal(signal.SIGTERM)
            dev.wait(timeout=60)


if __name__ == "__main__":
    main()
