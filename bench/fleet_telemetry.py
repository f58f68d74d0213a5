#!/usr/bin/env python3
"""The cost of telemetry in a simulated fleet (issue 5, "Benchmarks"): a fresh `gpurent dev` and
one `gpurent agent --sim-nodes N --sim-gpus 8xh100-80g` with --telemetry-interval I; once every
node is registered and started (the fleet logs sim_fleet_ready) and after a settle, measured over
DURATION seconds (the window):
- the CPU time (utime + stime, as a share of one core) and resident set (at the end, and the peak
  VmHWM) of the fleet and of the server;
- the GPU samples the server ingested per second: for SAMPLE_NODES nodes drawn at random, the
  raw gpu_util samples of their 8 GPUs inside the window (GET /v1/metrics/query, 1 s buckets:
  each bucket says how many series had data), scaled to the fleet;
- with --scrape, also gpurent_telemetry_samples_total from GET /metrics before and after the
  window (over the time between the midpoints of the two calls; one GPU sample of a simulated
  H100 is 12 series values). Off by default: at 10,000 nodes /metrics is ~140 MB and renders on
  the controller's thread for seconds, long enough to hold up the fleet's heartbeats;
- the latency of a few read endpoints while it runs (a client that calls them one after another,
  with a pause between rounds): p50, p99 and max per endpoint;
- how many nodes were down at the end, and the node.down events of the window (a node whose
  reports stop reaching the server for 10 s; any means the pair does not keep up);
- the load average of the machine at the end (the machine is shared).
Running it with I = 0 (no telemetry) and I = 1 gives the cost of 1 Hz telemetry. With --perf S,
`perf record -g` samples the server (and the fleet) for S seconds in the middle of the window and
leaves perf-server.data and perf-fleet.data in the current directory.

Usage: bench/fleet_telemetry.py [--binary build/gpurent] [--nodes 2000] [--interval 1]
                                [--duration 30] [--settle 5] [--perf 0] [--scrape]
"""

import argparse
import http.client
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from agent_footprint import cpu_seconds, rss_mb  # noqa: E402
from devserver import Client, all_items, start_dev  # noqa: E402

# Read endpoints probed while the fleet runs (GET /v1/nodes lists every node: its cost grows with
# the fleet, so it is probed too, but less often).
SAMPLE_NODES = 20
PROBES = ["/v1/offers", "/v1/alerts", "/v1/nodes/{node}", "/v1/metrics/query?metric=gpu_util&node={node}"]


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def accepted_refused(client):
    """gpurent_telemetry_samples_total by outcome, and how long GET /metrics took."""
    start = time.monotonic()
    status, body = client.call("GET", "/metrics")
    took = time.monotonic() - start
    # The counter is read somewhere inside the call: its midpoint is the best guess.
    at = start + took / 2
    if status != 200:
        raise SystemExit(f"GET /metrics: {status}")
    found = dict(re.findall(rb'^gpurent_telemetry_samples_total\{outcome="(\w+)"\} (\S+)$', body,
                            re.MULTILINE))
    return (float(found.get(b"accepted", 0)), float(found.get(b"refused", 0)), at, took,
            len(body))


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class Prober(threading.Thread):
    """Calls the PROBES in turn on its own connection until stopped; latencies by endpoint."""

    def __init__(self, port, key, node):
        super().__init__(daemon=True)
        self.client = Client(port, key)
        self.node = node
        self.latencies = {p: [] for p in PROBES}
        self.errors = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for probe in PROBES:
                start = time.monotonic()
                try:
                    status, _ = self.client.call("GET", probe.format(node=self.node))
                except (OSError, http.client.HTTPException):
                    status = 0
                    self.client = Client(self.client.conn.port, self.client.key)
                if status != 200:
                    self.errors += 1
                self.latencies[probe].append(time.monotonic() - start)
            self.stop.wait(0.2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                         "gpurent"))
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--interval", type=float, default=1)
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--settle", type=float, default=5)
    parser.add_argument("--perf", type=float, default=0)
    parser.add_argument("--scrape", action="store_true")
    args = parser.parse_args()
    key = "gpr_" + secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as workdir:
        dev, port = start_dev(args.binary, workdir, key)
        fleet = None
        prober = None
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
            # Ready: every node registered and started (the fleet says so); at 10,000 nodes on a
            # loaded machine some are down at any moment, so the offers never show them all.
            fleet_log = os.path.join(workdir, "fleet.log")
            started = time.monotonic()
            deadline = started + 600
            while "sim_fleet_ready" not in open(fleet_log, errors="replace").read():
                if fleet.poll() is not None:
                    raise SystemExit("the fleet exited:\n" + open(fleet_log).read()[-3000:])
                if time.monotonic() > deadline:
                    raise SystemExit("the fleet did not become ready")
                time.sleep(1)
            ready_s = time.monotonic() - started
            # The first connection has been idle past the server's keep-alive timeout.
            client = Client(port, key)
            call = client.expect
            time.sleep(args.settle)
            node_ids = [n["id"] for n in all_items(lambda p: call("GET", p), "/v1/nodes")]
            prober = Prober(port, key, node_ids[-1])
            if args.scrape:
                a0, r0, at0, metrics0_s, metrics_bytes = accepted_refused(client)
            dev_log = os.path.join(workdir, "dev.log")
            downs0 = open(dev_log, errors="replace").read().count("kind=node.down")
            f0, s0, t0 = cpu_seconds(fleet.pid), cpu_seconds(dev.pid), time.monotonic()
            wall0 = time.time()
            prober.start()
            perf = []
            if args.perf > 0:
                time.sleep(max(0.0, (args.duration - args.perf) / 2))
                for name, pid in (("server", dev.pid), ("fleet", fleet.pid)):
                    perf.append(subprocess.Popen(
                        ["perf", "record", "-g", "-F", "499", "-o", f"perf-{name}.data", "-p",
                         str(pid), "--", "sleep", f"{args.perf:g}"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(max(0.0, t0 + args.duration - time.monotonic()))
            f1, s1, t1 = cpu_seconds(fleet.pid), cpu_seconds(dev.pid), time.monotonic()
            wall1 = time.time()
            downs = open(dev_log, errors="replace").read().count("kind=node.down") - downs0
            prober.stop.set()
            prober.join()
            for p in perf:
                p.wait()
            client = Client(port, key)  # the last one sat idle through the window
            call = client.expect
            # Whole seconds inside the window (samples are stamped on a 1 s grid; reports carry
            # them up to ~3 s later).
            first, last = int(wall0) + 1, int(wall1) - 5  # the last reports are on their way
            counted = 0
            for node in random.sample(node_ids, min(SAMPLE_NODES, len(node_ids))):
                points = call("GET", f"/v1/metrics/query?metric=gpu_util&node={node}&from={first}"
                                     f"&to={last}&step=1s&resolution=raw")["points"]
                counted += sum(p["series"] for p in points)
            per_node = counted / min(SAMPLE_NODES, len(node_ids)) / (last - first)
            gpu_samples = per_node * len(node_ids)
            if args.scrape:
                a1, r1, at1, metrics1_s, _ = accepted_refused(client)
                rate = (a1 - a0) / (at1 - at0)
            t_metrics = time.monotonic()
            nodes = all_items(lambda p: call("GET", p), "/v1/nodes")
            nodes_s = time.monotonic() - t_metrics
            with_telemetry = sum(1 for n in nodes if any(g.get("telemetry") for g in n["gpus"]))
            down = sum(1 for n in nodes if n["status"] == "down")
            span = t1 - t0
            load = open("/proc/loadavg").read().split()[:3]
            print(f"nodes ready after {ready_s:.0f} s; window {span:.1f} s; load average "
                  f"{' '.join(load)}")
            print("| nodes | interval | fleet CPU | fleet RSS (peak) | server CPU | server RSS (peak) "
                  "| GPU samples/s ingested | nodes with telemetry | down at the end | node.down events |")
            print(f"| {args.nodes} | {args.interval:g} s | {100 * (f1 - f0) / span:.1f} % | "
                  f"{rss_mb(fleet.pid):.0f} ({peak_rss_mb(fleet.pid):.0f}) MB | "
                  f"{100 * (s1 - s0) / span:.1f} % | "
                  f"{rss_mb(dev.pid):.0f} ({peak_rss_mb(dev.pid):.0f}) MB | "
                  f"{gpu_samples:,.0f} ({per_node:.2f}/node/s) | "
                  f"{with_telemetry} / {len(nodes)} | {down} | {downs} |")
            if args.scrape:
                print(f"gpurent_telemetry_samples_total: {rate:,.0f} values/s accepted "
                      f"({rate / 12:,.0f} GPU samples/s), {r1 - r0:.0f} refused")
            print("| endpoint | calls | p50 | p99 | max |")
            for probe, values in prober.latencies.items():
                if values:
                    print(f"| GET {probe.split('?')[0]} | {len(values)} | "
                          f"{1000 * percentile(values, 50):.1f} ms | "
                          f"{1000 * percentile(values, 99):.1f} ms | {1000 * max(values):.1f} ms |")
            if args.scrape:
                print(f"| GET /metrics ({metrics_bytes / 1e6:.1f} MB) | 2 | "
                      f"{1000 * metrics0_s:.0f} / {1000 * metrics1_s:.0f} ms | | |")
            print(f"| GET /v1/nodes ({len(nodes)} nodes) | 1 | {1000 * nodes_s:.0f} ms | | |")
            print(f"probe errors: {prober.errors}")
        finally:
            if prober:
                prober.stop.set()
            if fleet:
                fleet.send_signal(signal.SIGTERM)
                try:
                    fleet.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    fleet.kill()
            dev.send_signal(signal.SIGTERM)
            try:
                dev.wait(timeout=60)
            except subprocess.TimeoutExpired:
                dev.kill()


if __name__ == "__main__":
    main()
