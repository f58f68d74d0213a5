#!/usr/bin/env python3
"""The agent's footprint with telemetry (issue 5, "Benchmarks", last bullet).

A fresh `gpurent dev` (its own temp data dir), a join token, and one `gpurent agent` with
--sim-gpus 8xh100-80g sampling at 1 Hz (--telemetry-interval 1, the default) and reporting every
second. The dev's own node is cordoned and one 4-GPU workload (`sleep`) is placed on the agent's
node, so that half its GPUs are busy. After a warm-up, the agent's CPU time (utime + stime from
/proc/PID/stat) and resident set (VmRSS) are measured over DURATION seconds; the node view is
checked to carry the agent's telemetry. Prints a Markdown block for bench/RESULTS.md.

Usage: bench/agent_footprint.py [--binary build/gpurent] [--duration 60] [--warmup 10]
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
from devserver import Client, start_dev, wait_state  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                         "gpurent"))
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=10)
    args = parser.parse_args()
    key = "gpr_" + secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as workdir:
        dev, port = start_dev(args.binary, workdir, key)
        agent = None
        instance = None
        try:
            client = Client(port, key)

            call = client.expect

            local = call("GET", "/v1/nodes")["items"][0]["id"]
            call("POST", f"/v1/nodes/{local}/cordon")
            token = call("POST", "/v1/join-tokens", {"description": "footprint"}, 201)["token"]
            log = open(os.path.join(workdir, "agent.log"), "wb")
            agent = subprocess.Popen(
                [args.binary, "agent", "--server", f"http://127.0.0.1:{port}", "--join-token",
                 token, "--sim-gpus", "8xh100-80g", "--data-dir", os.path.join(workdir, "agent"),
                 "--name", "footprint", "--telemetry-interval", "1"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            created = call("POST", "/v1/instances", {"gpu_type": "h100-80g", "gpu_count": 4,
                                                     "command": "sleep 3600"}, 201)
            instance = created["id"]
            wait_state(client, instance, "running", poll_s=0.05)
            node = call("GET", f"/v1/instances/{created['id']}")["node_id"]
            time.sleep(args.warmup)
            cpu0, t0 = cpu_seconds(agent.pid), time.monotonic()
            rss_peak = rss_mb(agent.pid)
            while time.monotonic() - t0 < args.duration:
                time.sleep(1)
                rss_peak = max(rss_peak, rss_mb(agent.pid))
            cpu1, t1 = cpu_seconds(agent.pid), time.monotonic()
            rss_end = rss_mb(agent.pid)
            gpus = call("GET", f"/v1/nodes/{node}")["gpus"]
            busy = [g for g in gpus if g["instance_id"] and (g["telemetry"] or {}).get(
                "gpu_util_pct", 0) >= 90]
            if len(busy) != 4 or any(not g["telemetry"] for g in gpus):
                raise SystemExit(f"the node view lacks the agent's telemetry: {gpus}")
            cpu_pct = 100 * (cpu1 - cpu0) / (t1 - t0)
            print(f"""### Agent footprint with telemetry (issue 5)

`bench/agent_footprint.py --duration {args.duration:g} --warmup {args.warmup:g}`: one
`gpurent agent --sim-gpus 8xh100-80g --telemetry-interval 1` (reports every 1 s, 4 of its 8 GPUs
held by a `sleep` workload) against a `gpurent dev` on the same machine, measured over
{t1 - t0:.0f} s after a {args.warmup:g} s warm-up (8 GPUs at 1 Hz: about {8 * (t1 - t0):.0f} samples).

| metric | value | target |
|---|---|---|
| agent CPU | {cpu_pct:.2f} % of a core ({cpu1 - cpu0:.2f} s in {t1 - t0:.0f} s) | < 1 % |
| agent RSS | {rss_end:.1f} MB at the end, {rss_peak:.1f} MB peak | < 20 MB |
""")
        finally:
            if instance:  # the workload outlives its agent otherwise (it is re-adopted)
                client.call("POST", f"/v1/instances/{instance}/stop")
                wait_state(client, instance, "stopped", poll_s=0.05)
            if agent:
                agent.send_signal(signal.SIGTERM)
                agent.wait(timeout=30)
            dev.send_signal(signal.SIGTERM)
            dev.wait(timeout=30)


if __name__ == "__main__":
    main()
