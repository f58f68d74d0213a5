#!/usr/bin/env python3
"""The server's own TLS against nginx's, in one run on this machine (issue 27: goal >= 0.5x).

`gpurent server` with [tls] answers GET /v1/whoami (a keyed route: the key is looked up, the
answer built, every request); nginx (1 worker process) serves the same bytes as a static file,
over TLS with the same certificate (ECDSA P-256), TLS 1.3 for both. Both also run without TLS,
to show what TLS itself costs each. Under wrk (1 thread):

1. keep-alive: 16 connections, each handshakes once and then sends requests back to back;
2. a handshake per request: `Connection: close`, so every request is a new TCP connection and a
   full TLS handshake (what a client without keep-alive costs the server).

The servers run alternately, `--rounds` times each; medians are compared.

Usage: bench/tls_bench.py [--binary build/gpurent] [--seconds 8] [--rounds 2]
Prints a Markdown block for bench/RESULTS.md.
"""

import argparse
import os
import platform
import secrets
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import tempfile
import time
import urllib.request

from api_bench import free_port, run_wrk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_certificate(workdir):
    cert, key = os.path.join(workdir, "server.pem"), os.path.join(workdir, "server.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", "/CN=gpurent bench",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
        check=True, capture_output=True)
    return cert, key


def wait_listening(port, proc):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"a server exited at start ({proc.args[0]})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def start_gpurent(binary, workdir, key, cert, tls):
    port = free_port()
    config = os.path.join(workdir, f"server-{tls}.toml")
    with open(config, "w") as f:
        f.write("[rate_limits]\nenabled = false\n")
        if tls:
            f.write(f'[tls]\ncert_file = "{cert[0]}"\nkey_file = "{cert[1]}"\n')
    proc = subprocess.Popen(
        [binary, "server", "--listen", f"127.0.0.1:{port}", "--admin-key", key, "--data-dir",
         os.path.join(workdir, f"data-{tls}"), "--config", config],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_listening(port, proc)
    return proc, port


def start_nginx(workdir, body, cert, tls):
    # nginx's workers run as nobody: the files they serve must be readable by it.
    os.chmod(workdir, 0o755)
    root = os.path.join(workdir, "www")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "whoami.json"), "wb") as f:
        f.write(body)
    port = free_port()
    ssl_lines = (f"ssl_certificate {cert[0]}; ssl_certificate_key {cert[1]}; "
                 "ssl_protocols TLSv1.2 TLSv1.3;" if tls else "")
    conf = os.path.join(workdir, f"nginx-{tls}.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
daemon off;
pid {workdir}/nginx-{tls}.pid;
error_log {workdir}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  default_type application/json;
  keepalive_requests 1000000;
  client_body_temp_path {workdir}/tmp; proxy_temp_path {workdir}/tmp;
  fastcgi_temp_path {workdir}/tmp; uwsgi_temp_path {workdir}/tmp; scgi_temp_path {workdir}/tmp;
  server {{ listen 127.0.0.1:{port}{" ssl" if tls else ""}; root {root}; {ssl_lines} }}
}}
""")
    proc = subprocess.Popen(["nginx", "-c", conf, "-p", workdir], stderr=subprocess.DEVNULL,
                            start_new_session=True)
    wait_listening(port, proc)
    return proc, port


def stop(proc):
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def whoami_body(port, key, cert):
    context = ssl.create_default_context(cafile=cert[0])
    request = urllib.request.Request(f"https://127.0.0.1:{port}/v1/whoami",
                                     headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return response.read()


def measure(url, seconds, headers):
    """(keep-alive rate, handshake-per-request rate) under wrk."""
    kept = run_wrk(url, seconds, 16, headers)
    fresh = run_wrk(url, seconds, 16, [*headers, "Connection: close"])
    for result in (kept, fresh):
        if result[2]:
            raise SystemExit(f"{result[2]} answers from {url} were not 2xx")
    return kept[0], fresh[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "gpurent"))
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="gpurent-tls-bench-")
    key = "gpr_" + secrets.token_urlsafe(32)
    cert = make_certificate(workdir)
    auth = [f"Authorization: Bearer {key}"]
    runs = {}
    try:
        body = None
        for _ in range(args.rounds):
            for tls in (True, False):
                scheme = "https" if tls else "http"
                server, port = start_gpurent(args.binary, workdir, key, cert, tls)
                try:
                    if body is None and tls:
                        body = whoami_body(port, key, cert)
                    runs.setdefault(("gpurent", tls), []).append(
                        measure(f"{scheme}://127.0.0.1:{port}/v1/whoami", args.seconds, auth))
                finally:
                    stop(server)
                nginx, port = start_nginx(workdir, body, cert, tls)
                try:
                    runs.setdefault(("nginx", tls), []).append(
                        measure(f"{scheme}://127.0.0.1:{port}/whoami.json", args.seconds, []))
                finally:
                    stop(nginx)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    median = {k: [statistics.median(r[i] for r in v) for i in range(2)] for k, v in runs.items()}
    print(f"Machine: {platform.node()}, {os.cpu_count()} cores; date {time.strftime('%Y-%m-%d')}; "
          f"command: bench/tls_bench.py --seconds {args.seconds} --rounds {args.rounds}; "
          f"medians of {args.rounds} rounds; {len(body)} B body; wrk -t1 -c16\n")
    print("| | gpurent | nginx (1 worker) | gpurent / nginx |")
    print("| --- | --- | --- | --- |")
    for i, what in enumerate(["keep-alive", "a handshake per request (Connection: close)"]):
        for tls in (True, False):
            ours, theirs = median[("gpurent", tls)][i], median[("nginx", tls)][i]
            print(f"| {what}, {'https' if tls else 'http'} | {ours:.0f}/s | {theirs:.0f}/s | "
                  f"{ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
