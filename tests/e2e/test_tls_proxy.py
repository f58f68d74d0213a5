"""Agents and the CLI behind a TLS-terminating proxy: nginx serves https in front of `gpurent dev`;
an agent joins and reports over https, the CLI works over https, and both refuse a proxy whose
certificate they have no reason to trust."""

import os
import shutil
import socket
import subprocess
import time

import pytest

from conftest import BINARY, wait_for


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def certificate(tmp_path):
    cert, key = tmp_path / "proxy.crt", tmp_path / "proxy.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", "/CN=gpurent test proxy",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key),
         "-out", str(cert)],
        check=True, capture_output=True)
    return cert, key


@pytest.fixture
def proxy(platform, certificate, tmp_path):
    """nginx on a free port: https in, http to the platform; returns the https URL."""
    if not shutil.which("nginx"):
        pytest.skip("nginx is not installed (scripts/install-deps.sh test)")
    workdir = tmp_path / "nginx"
    (workdir / "tmp").mkdir(parents=True)
    port = free_port()
    cert, key = certificate
    conf = workdir / "nginx.conf"
    conf.write_text(f"""worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {workdir}/tmp; proxy_temp_path {workdir}/tmp;
  fastcgi_temp_path {workdir}/tmp; uwsgi_temp_path {workdir}/tmp; scgi_temp_path {workdir}/tmp;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    location / {{
      proxy_pass http://127.0.0.1:{platform.port};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 120s;
    }}
  }}
}}
""")
    nginx = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(workdir)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "nginx did not start"
                time.sleep(0.05)
        yield f"https://127.0.0.1:{port}"
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


def test_an_agent_and_the_cli_work_through_a_tls_proxy(platform, proxy, certificate, tmp_path):
    trusted = dict(platform.env, SSL_CERT_FILE=str(certificate[0]))
    token = platform.call("POST", "/v1/join-tokens", body={"description": "tls"})
    assert token.status == 201, token.body
    platform.start_process(
        ["agent", "--server", proxy, "--join-token", token.json()["token"], "--sim-gpus",
         "2xa100-80g", "--data-dir", str(tmp_path / "agent"), "--name", "behind-tls",
         "--telemetry-interval", "1"],
        "agent-tls", env=trusted)
    # Registered, and reporting (with telemetry) over https through the proxy.
    wait_for(lambda: platform.offers().get("a100-80g", {}).get("total") == 2,
             what="the agent's GPUs, registered through the proxy")

    def node():
        items = platform.call("GET", "/v1/nodes").json()["items"]
        found = [n for n in items if n["name"] == "behind-tls"]
        return found[0] if found and found[0]["gpus"][0]["telemetry"] else None
    assert wait_for(node, what="telemetry reported through the proxy")["state"] == "ready"

    def cli(*args, env):
        return subprocess.run([BINARY, "--url", proxy, *args], capture_output=True, text=True,
                              env=dict(env, GPURENT_API_KEY=platform.admin_key), timeout=60)
    listed = cli("nodes", "ls", env=trusted)
    assert listed.returncode == 0, listed.stderr
    assert "behind-tls" in listed.stdout

    # Without the proxy's CA the CLI refuses to talk, and says why.
    untrusted = {k: v for k, v in platform.env.items() if k != "SSL_CERT_FILE"}
    refused = cli("nodes", "ls", env=untrusted)
    assert refused.returncode != 0
    assert "certificate verify failed" in refused.stderr, refused.stderr
