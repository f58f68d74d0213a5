#!/usr/bin/env python3
"""Fails `make bench` (exit 1) when durable instance creations regress: api_bench's creation
measurement (queued 8-GPU requests, 1 then 32 connections) on a fresh `gpurent dev`, checked
against the figures bench/baselines.json records for this machine kind.

It fails when 32 connections do not create more per second than one (group commit must pay
off), or when either rate is more than 20 % below the recorded one. Both happened once already:
the scheduler retried the whole queue of unplaceable requests on every command (RESULTS.md).

Usage: bench/creation_guard.py [--binary build/gpurent] [--seconds 8]
"""

import argparse
import json
import os
import platform
import secrets
import shutil
import sys
import tempfile

from api_bench import ROOT, creation_rates, wait_for_agent
from devserver import Client, start_dev, wait_state

BASELINES = os.path.join(ROOT, "bench", "baselines.json")
TOLERANCE = 0.20  # the shared 2-core machines move absolute figures by about this much


def machine_kind():
    """Distribution, release and core count, e.g. "debian-12, 2 cores": figures are recorded
    per kind, since a faster machine's figures say nothing about a slower one's."""
    release = platform.freedesktop_os_release()
    return f"{release.get('ID', 'unknown')}-{release.get('VERSION_ID', '')}, {os.cpu_count()} cores"


def measure(binary, seconds):
    workdir = tempfile.mkdtemp(prefix="gpurent-guard-")
    key = "gpr_" + secrets.token_urlsafe(32)
    dev, port = start_dev(binary, workdir, key)
    try:
        client = Client(port, key)
        wait_for_agent(client)
        # One GPU taken, as in api_bench (its API benchmark's instance): every creation queues.
        held = client.expect("POST", "/v1/instances",
                             {"gpu_type": "h100-80g", "command": "sleep 600"}, status=201)
        wait_state(client, held["id"], "running")
        return creation_rates(port, key, seconds, workdir)
    finally:
        dev.terminate()
        dev.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--seconds", type=int, default=8)
    args = parser.parse_args()

    (one, _, one_failed), (many, _, many_failed) = measure(args.binary, args.seconds)
    kind = machine_kind()
    print(f"creation guard ({kind}): {one:.0f}/s with 1 connection, {many:.0f}/s with 32 "
          f"({many / one:.2f}x)")
    failures = []
    if one_failed or many_failed:
        failures.append(f"{one_failed} + {many_failed} creations were refused (non-2xx)")
    if many <= one:
        failures.append(f"32 connections ({many:.0f}/s) are not faster than 1 ({one:.0f}/s)")
    with open(BASELINES) as f:
        recorded = json.load(f)["creations_per_s"].get(kind)
    if recorded is None:
        print(f"creation guard: no figures recorded for '{kind}' in {BASELINES}; only the "
              "1-vs-32 check ran", file=sys.stderr)
    else:
        for label, rate, baseline in (("1 connection", one, recorded["one_connection"]),
                                      ("32 connections", many, recorded["32_connections"])):
            if rate < (1 - TOLERANCE) * baseline:
                failures.append(f"{label}: {rate:.0f}/s is more than {TOLERANCE:.0%} below the "
                                f"recorded {baseline}/s ({recorded['recorded']})")
    if failures:
        print("\n*** CREATION BENCHMARK REGRESSED ***", file=sys.stderr)
        for failure in failures:
            print(f"  - {failure}", file=sys.stderr)
        sys.exit(1)
    print("creation guard: passed")


if __name__ == "__main__":
    main()
