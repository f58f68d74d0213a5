#!/usr/bin/env python3
"""What an idle fleet costs: the CPU of each thread of the server and of the simulated fleet, in %
of a core, over a window after N simulated nodes have registered, with nothing running.

A fresh `gpurent dev` (bench/devserver.py) and one `gpurent agent --sim-nodes N --sim-gpus
8xh100-80g` (its default telemetry: a sample per GPU per second, sent with each report about every
3 s), started as bench/fleet_bench.py starts them. Once every node's GPUs are offered, it waits
--settle seconds, then reads every thread's CPU time from /proc at the start and the end of a
--seconds window. --perf FILE records the server meanwhile (`perf record --call-graph fp`: use a
build with frame pointers).

Usage: bench/fleet_idle.py [--binary build/gpurent] [--nodes 5000] [--seconds 10] [--settle 5]
                           [--perf FILE]
"""

import argparse
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time

from devserver import start_dev
from fleet_bench import Client, cpu_delta, h100_offer, start_fleet, stop, thread_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--perf")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="fleet-idle-")
    key = "gpk_" + secrets.token_hex(16)
    dev, port = start_dev(args.binary, work, key)
    fleet = None
    try:
        client = Client(port, key)
        token = client.json("POST", "/v1/join-tokens", {"description": "idle"},
                            expect=(201,))["token"]
        fleet = start_fleet(args.binary, work, port, token, args.nodes)
        deadline = time.monotonic() + 300
        while h100_offer(client)[0] < 8 * (args.nodes + 1):
            if time.monotonic() > deadline:
                sys.exit("the fleet did not register within 300 s")
            time.sleep(0.5)
        time.sleep(args.settle)
        recorder = None
        if args.perf:
            recorder = subprocess.Popen(
                ["perf", "record", "-q", "-F", "999", "--call-graph", "fp", "-o", args.perf,
                 "-p", str(dev.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # attached to every thread before the window opens
        server_before, fleet_before = thread_cpu(dev.pid), thread_cpu(fleet.pid)
        time.sleep(args.seconds)
        server_after, fleet_after = thread_cpu(dev.pid), thread_cpu(fleet.pid)
        if recorder:
            recorder.send_signal(signal.SIGINT)
            recorder.wait()

        def percent(before, after):
            return ", ".join(f"{name} {100 * cpu / args.seconds:.1f}"
                             for name, cpu in sorted(cpu_delta(before, after).items()))

        print(f"{args.nodes} idle nodes, % of a core over {args.seconds:g} s: "
              f"server ({percent(server_before, server_after)}); "
              f"fleet ({percent(fleet_before, fleet_after)})")
    finally:
        if fleet:
            stop(fleet)
        stop(dev)


if __name__ == "__main__":
    main()
