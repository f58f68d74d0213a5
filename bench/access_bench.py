#!/usr/bin/env python3
"""What the access gate costs (docs/architecture.md, "Who may call"), in one run:

1. Reads: GET /v1/instances/{id} under wrk (keep-alive, 32 connections), against `gpurent dev`
   with every rate limit off, and with limits on that refuse nothing (every request goes through
   its address's and its key's buckets and carries the RateLimit headers).
2. Writes: durable creations per second (POST /v1/instances, 1 and 32 connections), each with its
   audit entry committed before the answer, as api_bench.py measures them.

The two servers run alternately, `--rounds` times each, and the medians are compared.

Usage: bench/access_bench.py [--binary build/gpurent] [--seconds 8] [--rounds 2]
Prints a Markdown block for bench/RESULTS.md.
"""

import argparse
import json
import os
import platform
import secrets
import shutil
import signal
import statistics
import tempfile

from api_bench import creation_rates, run_wrk, wait_for_agent
from devserver import UNREFUSED_LIMITS, Client, start_dev

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMITS = {
    "limits off": "[rate_limits]\nenabled = false\n",
    "limits on, none refused": UNREFUSED_LIMITS + "limit_loopback = true\n"
                               "per_address = { per_second = 1000000, burst = 1000000 }\n",
}


def measure(binary, limits, seconds):
    workdir = tempfile.mkdtemp(prefix="gpurent-access-bench-")
    key = "gpr_" + secrets.token_urlsafe(32)
    dev, port = start_dev(binary, workdir, key, limits)
    try:
        client = Client(port, key)
        wait_for_agent(client)
        status, body = client.call("POST", "/v1/instances",
                                   {"gpu_type": "h100-80g", "command": "sleep 600"})
        assert status == 201, body
        url = f"http://127.0.0.1:{port}/v1/instances/{json.loads(body)['id']}"
        reads = run_wrk(url, seconds, 32, [f"Authorization: Bearer {key}"])
        assert reads[2] == 0, f"{reads[2]} answers were not 2xx"
        writes_1, writes_32 = creation_rates(port, key, seconds, workdir)
        return reads[0], writes_1[0], writes_32[0]
    finally:
        os.killpg(dev.pid, signal.SIGTERM)
        dev.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    runs = {name: [] for name in LIMITS}
    for _ in range(args.rounds):
        for name, limits in LIMITS.items():
            runs[name].append(measure(args.binary, limits, args.seconds))
    medians = {name: [statistics.median(r[i] for r in rs) for i in range(3)]
               for name, rs in runs.items()}
    off, on = medians["limits off"], medians["limits on, none refused"]
    print(f"{platform.node()}, {os.cpu_count()} cores; {args.rounds} rounds of {args.seconds} s, "
          "medians")
    print("| | limits off | limits on, none refused | on / off |")
    print("| --- | --- | --- | --- |")
    for i, what in enumerate(["GET /v1/instances/{id}, 32 connections",
                              "durable creations (audited), 1 connection",
                              "durable creations (audited), 32 connections"]):
        print(f"| {what} | {off[i]:.0f}/s | {on[i]:.0f}/s | {on[i] / off[i]:.2f} |")


if __name__ == "__main__":
    main()
