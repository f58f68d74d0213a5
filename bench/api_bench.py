#!/usr/bin/env python3
"""The foundation's benchmarks, in one run on this machine:

1. API throughput: GET /v1/instances/{id} with keep-alive under wrk, side by side with nginx
   serving a static JSON body of the same size (both on one worker thread/process).
2. Launch latency: POST /v1/instances to `running` on the dev agent, p50/p99 over N launches.
3. Durable writes: instance creations per second (SQLite, synchronous=FULL, group commit) with
   1 and 32 concurrent connections.

Usage: bench/api_bench.py [--binary build/gpurent] [--launches 200] [--seconds 10]
Prints a Markdown block for bench/RESULTS.md.
"""

import argparse
import json
import os
import platform
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time

from devserver import Client, launch_latencies, median_and_p99, start_dev, wait_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_wrk(url, seconds, connections, headers=(), script=None):
    args = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for header in headers:
        args += ["-H", header]
    if script:
        args += ["-s", script]
    out = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rate, float(p99.group(1)) * scale, int(non2xx.group(1)) if non2xx else 0


def start_nginx(workdir, body):
    # Run as root, nginx serves from its workers' user (nobody): mkdtemp's 0700 would answer
    # every request 403, and the benchmark would compare against an error page.
    os.chmod(workdir, 0o755)
    root = os.path.join(workdir, "www")
    os.makedirs(root)
    with open(os.path.join(root, "instance.json"), "wb") as f:
        f.write(body)
    port = free_port()
    conf = os.path.join(workdir, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  default_type application/json;
  keepalive_requests 1000000;
  client_body_temp_path {workdir}/tmp; proxy_temp_path {workdir}/tmp;
  fastcgi_temp_path {workdir}/tmp; uwsgi_temp_path {workdir}/tmp; scgi_temp_path {workdir}/tmp;
  server {{ listen 127.0.0.1:{port}; root {root}; }}
}}
""")
    proc = subprocess.Popen(["nginx", "-c", conf, "-p", workdir], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start")


def wait_for_agent(client):
    deadline = time.monotonic() + 30
    while client.call("GET", "/v1/offers")[1].count(b'"free":8') == 0:
        if time.monotonic() > deadline:
            raise SystemExit("the dev agent did not join")
        time.sleep(0.05)


def creation_rates(port, key, seconds, workdir):
    """Durable creations per second under wrk with 1, then 32 connections: queued 8-GPU
    requests, which stay queued while anything holds a GPU of the dev agent's eight, so the
    queue grows by every creation. Returns run_wrk's (rate, p99 ms, non-2xx) for each."""
    script = os.path.join(workdir, "post.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\n'
                'wrk.body = \'{"gpu_type": "h100-80g", "gpu_count": 8, "command": "true"}\'\n'
                'wrk.headers["Content-Type"] = "application/json"\n')
    url = f"http://127.0.0.1:{port}/v1/instances"
    auth = [f"Authorization: Bearer {key}"]
    return (run_wrk(url, seconds, 1, auth, script), run_wrk(url, seconds, 32, auth, script))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="gpurent-bench-")
    key = "gpr_" + secrets.token_urlsafe(32)
    dev, port = start_dev(args.binary, workdir, key)
    nginx = None
    try:
        client = Client(port, key)
        wait_for_agent(client)

        # 2. Launch latency.
        latencies = launch_latencies(client, {"gpu_type": "h100-80g", "command": "sleep 600"},
                                     args.launches)
        p50, p99 = median_and_p99(latencies)

        # 1. API throughput against nginx.
        status, body = client.call("POST", "/v1/instances",
                                   {"gpu_type": "h100-80g", "command": "sleep 600"})
        instance_id = json.loads(body)["id"]
        wait_state(client, instance_id, "running")
        _, instance_body = client.call("GET", f"/v1/instances/{instance_id}")
        api = run_wrk(f"http://127.0.0.1:{port}/v1/instances/{instance_id}", args.seconds, 16,
                      [f"Authorization: Bearer {key}"])
        nginx, nginx_port = start_nginx(workdir, instance_body)
        static = run_wrk(f"http://127.0.0.1:{nginx_port}/instance.json", args.seconds, 16)
        if api[2] or static[2]:
            raise SystemExit(f"non-2xx answers: {api[2]} from gpurent, {static[2]} from nginx")

        # 3. Durable creations per second (queued: the instance above holds one GPU).
        writes_1, writes_32 = creation_rates(port, key, args.seconds, workdir)
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        dev.terminate()
        dev.wait()

    print(f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}; "
          f"date {time.strftime('%Y-%m-%d')}; command: bench/api_bench.py "
          f"--launches {args.launches} --seconds {args.seconds}\n")
    print("| benchmark | gpurent | peer | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| GET /v1/instances/{{id}}, keep-alive, wrk -t1 -c16, {len(instance_body)} B body "
          f"| {api[0]:.0f} req/s, p99 {api[1]:.2f} ms | nginx (1 worker, same body): "
          f"{static[0]:.0f} req/s, p99 {static[1]:.2f} ms | {api[0] / static[0]:.2f} |")
    print(f"| launch -> running, dev agent, {args.launches} launches | p50 {p50:.1f} ms, "
          f"p99 {p99:.1f} ms | | |")
    print(f"| durable creations (POST /v1/instances, synchronous=FULL), 1 connection | "
          f"{writes_1[0]:.0f}/s (non-2xx {writes_1[2]}) | | |")
    print(f"| durable creations, 32 connections (group commit) | {writes_32[0]:.0f}/s "
          f"(non-2xx {writes_32[2]}) | 1 connection: {writes_1[0]:.0f}/s | "
          f"{writes_32[0] / writes_1[0]:.2f} |")
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
