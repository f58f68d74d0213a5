#!/usr/bin/env python3
"""The highly available control plane's benchmarks (issue 26), in one run on this machine, on a
durable throwaway PostgreSQL (scripts/test-postgres.sh with fsync on) beside the SQLite default:

1. Durable creations per second (POST /v1/instances, queued 8-GPU requests) with 1 and 32
   connections, on SQLite and on PostgreSQL: one server and one simulated 8-GPU agent each.
2. Failover: three servers on one PostgreSQL database and an agent given all three URLs; the
   leader is SIGKILLed --kills times, and the time from the kill to the first launch acknowledged
   (201) by the new leader is measured, the client trying the servers in turn every 10 ms. The
   killed server comes back as a standby before the next kill.

Usage: bench/ha_bench.py [--binary build/gpurent] [--kills 20] [--seconds 10]
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
import tempfile
import time
import urllib.error
import urllib.request

from api_bench import creation_rates, free_port
from devserver import bench_config, median_and_p99

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def call(url, method, path, key, body=None, timeout=5):
    request = urllib.request.Request(url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": "Bearer " + key,
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def wait(predicate, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        time.sleep(0.02)
    raise SystemExit(f"timed out waiting for {what}")


class Servers:
    def __init__(self, binary, workdir, key, store, count):
        self.binary, self.workdir, self.key, self.store = binary, workdir, key, store
        self.ports = [free_port() for _ in range(count)]
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.procs = [None] * count
        self.agent = None

    def start(self, i):
        args = [self.binary, "server", "--listen", f"127.0.0.1:{self.ports[i]}", "--data-dir",
                os.path.join(self.workdir, f"server{i}"), "--admin-key", self.key]
        if self.store:
            args += ["--store", self.store]
        args += bench_config(self.workdir)
        log = open(os.path.join(self.workdir, f"server{i}.log"), "ab")
        self.procs[i] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        wait(lambda: call(self.urls[i], "GET", "/healthz", self.key)[0] == 200, "a server")

    def leader(self):
        for i, url in enumerate(self.urls):
            if self.procs[i] and self.procs[i].poll() is None:
                try:
                    if call(url, "GET", "/healthz", self.key, timeout=1)[1].get("status") == "ok":
                        return i
                except (OSError, urllib.error.URLError):
                    pass
        return None

    def start_agent(self):
        wait(lambda: self.leader() is not None, "a leader")
        status, token = call(self.urls[self.leader()], "POST", "/v1/join-tokens", self.key,
                             {"description": "bench"})
        assert status == 201, token
        log = open(os.path.join(self.workdir, "agent.log"), "ab")
        self.agent = subprocess.Popen(
            [self.binary, "agent", "--server", ",".join(self.urls), "--join-token",
             token["token"], "--sim-gpus", "8xh100-80g", "--data-dir",
             os.path.join(self.workdir, "agent")], stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        wait(lambda: b'"free":8' in json.dumps(
            call(self.urls[self.leader()], "GET", "/v1/offers", self.key)[1],
            separators=(",", ":")).encode(), "the agent's GPUs")
        # The admin's own tenant pays for the launches.
        url = self.urls[self.leader()]
        tenant = call(url, "GET", "/v1/whoami", self.key)[1]["tenant_id"]
        status, body = call(url, "POST", "/v1/billing/topups", self.key,
                            {"tenant_id": tenant, "amount_micros": 10**12})
        assert status == 201, body

    def stop(self):
        for proc in [self.agent, *self.procs]:
            if proc and proc.poll() is None:
                proc.terminate()
                proc.wait()


def creations(binary, workdir, store, seconds):
    key = "gpr_" + secrets.token_urlsafe(32)
    servers = Servers(binary, workdir, key, store, 1)
    try:
        servers.start(0)
        servers.start_agent()
        # One GPU held: the 8-GPU requests stay queued.
        status, _ = call(servers.urls[0], "POST", "/v1/instances", key,
                         {"gpu_type": "h100-80g", "command": "sleep 600"})
        assert status == 201, _
        return creation_rates(servers.ports[0], key, seconds, workdir)
    finally:
        servers.stop()


def failovers(binary, workdir, store, kills):
    key = "gpr_" + secrets.token_urlsafe(32)
    servers = Servers(binary, workdir, key, store, 3)
    times = []
    try:
        for i in range(3):
            servers.start(i)
        servers.start_agent()
        for _ in range(kills):
            leader = servers.leader()
            servers.procs[leader].send_signal(signal.SIGKILL)
            killed = time.monotonic()
            servers.procs[leader].wait()
            n = 0
            while True:
                url = servers.urls[n % 3]
                n += 1
                try:
                    status, body = call(url, "POST", "/v1/instances", key,
                                        {"gpu_type": "h100-80g", "command": "true"}, timeout=2)
                    if status == 201:
                        times.append(time.monotonic() - killed)
                        call(url, "DELETE", f"/v1/instances/{body['id']}", key)
                        break
                except (OSError, urllib.error.URLError):
                    pass
                time.sleep(0.01)
            servers.start(leader)  # back as a standby
            time.sleep(1)
        return times
    finally:
        servers.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()

    env = dict(os.environ, GPURENT_PG_DIR="/tmp/gpurent-bench-pg", GPURENT_PG_DURABLE="1")
    server = subprocess.run([os.path.join(ROOT, "scripts", "test-postgres.sh")], env=env,
                            check=True, capture_output=True, text=True).stdout.strip()
    results = {}
    workdir = tempfile.mkdtemp(prefix="gpurent-ha-bench-")
    try:
        for name in ("sqlite", "postgres", "failover"):
            database = ""
            if name != "sqlite":
                database_name = f"bench_{name}_{secrets.token_hex(4)}"
                subprocess.run(["psql", server, "-qc", f"CREATE DATABASE {database_name}"],
                               check=True)
                database = server.rsplit("/", 1)[0] + "/" + database_name
            run_dir = os.path.join(workdir, name)
            os.makedirs(run_dir)
            results[name] = (failovers(args.binary, run_dir, database, args.kills)
                             if name == "failover"
                             else creations(args.binary, run_dir, database, args.seconds))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    sqlite_1, sqlite_32 = results["sqlite"]
    pg_1, pg_32 = results["postgres"]
    p50, p99 = median_and_p99(sorted(t * 1000 for t in results["failover"]))
    print(f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"date {time.strftime('%Y-%m-%d')}; command: bench/ha_bench.py --kills {args.kills} "
          f"--seconds {args.seconds}\n")
    print("| benchmark | PostgreSQL | SQLite | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| durable creations, 1 connection | {pg_1[0]:.0f}/s (p99 {pg_1[1]:.1f} ms) | "
          f"{sqlite_1[0]:.0f}/s (p99 {sqlite_1[1]:.1f} ms) | {pg_1[0] / sqlite_1[0]:.2f} |")
    print(f"| durable creations, 32 connections | {pg_32[0]:.0f}/s (p99 {pg_32[1]:.1f} ms) | "
          f"{sqlite_32[0]:.0f}/s (p99 {sqlite_32[1]:.1f} ms) | {pg_32[0] / sqlite_32[0]:.2f} |")
    print(f"\nFailover, SIGKILL of the leader to the first launch acknowledged by the new one, "
          f"{len(results['failover'])} kills: p50 {p50:.0f} ms, p99 {p99:.0f} ms, "
          f"max {max(results['failover']) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
