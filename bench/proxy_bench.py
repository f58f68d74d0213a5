#!/usr/bin/env python3
"""Proxy overhead: Jupyter through the server's /i/<id>/jupyter/ (server -> the node's agent ->
Jupyter on loopback) against the same Jupyter asked directly on its loopback port, under wrk.

1. GET api/status (a small JSON answer): requests/s and p99, keep-alive, wrk -t1 -c8.
2. GET files/big.bin (a 4 MiB file): MiB/s and p99 (the proxy streams bodies in 64 KiB pieces).

Usage: bench/proxy_bench.py [--binary build/gpurent] [--seconds 10]
Prints a Markdown block for bench/RESULTS.md. Needs jupyter-notebook and wrk
(scripts/install-deps.sh bench).
"""

import argparse
import json
import os
import secrets
import shutil
import tempfile
import time

from api_bench import run_wrk
from devserver import Client, start_dev, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIG_FILE_BYTES = 4 << 20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="gpurent-proxy-bench-")
    key = "gpr_" + secrets.token_urlsafe(32)
    proc, port = start_dev(args.binary, workdir, key)
    client = Client(port, key)
    instance_id = None
    try:
        status, body = client.call("POST", "/v1/instances",
                                   {"gpu_type": "h100-80g", "template": "jupyter"})
        assert status == 201, body
        instance = json.loads(body)
        instance_id = instance["id"]
        base = f"/i/{instance_id}/jupyter"
        wait_for(lambda: client.call("GET", f"{base}/api/status")[0] == 200, "Jupyter to answer")
        run = json.loads(client.call("GET", f"/v1/instances/{instance_id}")[1])["run"]
        # On the node: where Jupyter listens and its token (what the agent keeps).
        with open(os.path.join(workdir, "data", "agent", "services",
                               f"{instance_id}.{run}.json")) as f:
            service = json.load(f)
        jupyter_port, token = service["ports"]["jupyter"], service["token"]
        with open(os.path.join(workdir, "data", "agent", "instances", instance_id, "big.bin"),
                  "wb") as f:
            f.write(os.urandom(BIG_FILE_BYTES))

        direct = f"http://127.0.0.1:{jupyter_port}{base}"
        proxied = f"http://127.0.0.1:{port}{base}"
        direct_auth = [f"Authorization: token {token}"]
        proxied_auth = [f"Authorization: Bearer {key}"]
        c, s = args.connections, args.seconds
        results = {}
        for name, url, auth in (("direct", direct, direct_auth), ("proxied", proxied, proxied_auth)):
            results[name, "status"] = run_wrk(f"{url}/api/status", s, c, auth)
            results[name, "file"] = run_wrk(f"{url}/files/big.bin", s, c, auth)
        for (name, what), (_, _, non2xx) in results.items():
            assert non2xx == 0, f"{name} {what}: {non2xx} non-2xx answers"
    finally:
        if instance_id:
            client.call("DELETE", f"/v1/instances/{instance_id}")
            time.sleep(2)  # the agent stops Jupyter before the server goes
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)

    mib = BIG_FILE_BYTES / (1 << 20)
    print(f"| benchmark (wrk -t1 -c{c}, {s} s) | through /i/{{id}}/jupyter/ | direct to Jupyter "
          "| ratio |")
    print("| --- | --- | --- | --- |")
    (pr, pp, _), (dr, dp, _) = results["proxied", "status"], results["direct", "status"]
    print(f"| GET api/status | {pr:,.0f} req/s, p99 {pp:.2f} ms | {dr:,.0f} req/s, p99 {dp:.2f} ms "
          f"| {pr / dr:.2f} |")
    (pr, pp, _), (dr, dp, _) = results["proxied", "file"], results["direct", "file"]
    print(f"| GET files/big.bin ({mib:.0f} MiB) | {pr * mib:,.0f} MiB/s, p99 {pp:.1f} ms "
          f"| {dr * mib:,.0f} MiB/s, p99 {dp:.1f} ms | {pr / dr:.2f} |")


if __name__ == "__main__":
    main()
