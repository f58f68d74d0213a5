"""Native TLS on `gpurent server` ([tls] in its config): the API over https, agents joining with
client certificates (mutual TLS) and refused without one, the CLI over https, console cookies
marked Secure, and a renewed certificate taken on SIGHUP (a broken renewal keeps the old one)."""

import json
import os
import signal
import socket
import ssl
import subprocess

import pytest

from conftest import BINARY, Process, http, problem, wait_for


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(directory, name):
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-days", "1", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert))
    return cert, key


def make_signed(directory, name, ca, alt_names=None):
    """A certificate for `name` signed by `ca` (cert, key); alt_names: its subjectAltName."""
    cert, key, csr = (directory / f"{name}.pem", directory / f"{name}.key",
                      directory / f"{name}.csr")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(csr))
    extensions = directory / f"{name}.ext"
    extensions.write_text(f"subjectAltName={alt_names}\n" if alt_names else "")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
            "-CAcreateserial", "-days", "1", "-extfile", str(extensions), "-out", str(cert))
    return cert, key


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TlsServer:
    """`gpurent server` with [tls]: its certificate from `ca`, agents' certificates from
    `agents_ca`."""

    def __init__(self, tmp_path, ca, agents_ca):
        self.dir = tmp_path
        self.cert, self.key = make_signed(tmp_path, "server", ca, "DNS:localhost,IP:127.0.0.1")
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.admin_key = "gpr_" + "t" * 40
        config = tmp_path / "server.toml"
        config.write_text(f"""[tls]
cert_file = "{self.cert}"
key_file = "{self.key}"
client_ca_file = "{agents_ca[0]}"
""")
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
        self.process = Process(
            ["server", "--listen", f"127.0.0.1:{self.port}", "--admin-key", self.admin_key,
             "--data-dir", str(tmp_path / "data"), "--config", str(config)],
            str(tmp_path), self.env, "server")

    def call(self, method, path, context, key=None, body=None):
        return http(self.url, method, path, key if key is not None else self.admin_key, body,
                    context=context)


def trusting(ca, client=None):
    context = ssl.create_default_context(cafile=str(ca[0]))
    if client:
        context.load_cert_chain(str(client[0]), str(client[1]))
    return context


def answers(server, context):
    try:
        return server.call("GET", "/healthz", context).status == 200
    except OSError:
        return False


@pytest.fixture
def pki(tmp_path):
    return make_ca(tmp_path, "server-ca"), make_ca(tmp_path, "agents-ca")


def test_the_api_and_agents_over_native_tls(tmp_path, pki):
    server_ca, agents_ca = pki
    server = TlsServer(tmp_path, server_ca, agents_ca)
    try:
        trusted = trusting(server_ca)
        wait_for(lambda: answers(server, trusted), what="the server over https")
        assert "https://127.0.0.1" in server.process.output()
        assert server.call("GET", "/v1/whoami", trusted).json()["role"] == "admin"

        # Plain HTTP on the TLS port gets no answer; nor does a client that does not trust it.
        with pytest.raises(OSError):
            http(f"http://127.0.0.1:{server.port}", path="/healthz", timeout=5)
        with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
            server.call("GET", "/healthz", ssl.create_default_context())

        # A browser signing in over TLS gets a Secure cookie.
        session = server.call("POST", "/v1/session", trusted, key="",
                              body={"key": server.admin_key})
        assert session.status == 201, session.body
        assert "; Secure" in session.headers["Set-Cookie"]

        # Agents need a certificate from the agents' CA: without one, refused with a reason.
        token = server.call("POST", "/v1/join-tokens", trusted, body={"description": "tls"})
        assert token.status == 201, token.body
        refused = server.call("POST", "/v1/agent/register", trusted,
                              key=token.json()["token"], body={})
        problem(refused, 401, "client_certificate_required")

        # With one, the agent joins and reports over https.
        agent_cert = make_signed(tmp_path, "node-a", agents_ca)
        agent = Process(
            ["agent", "--server", server.url, "--join-token", token.json()["token"],
             "--ca-file", str(server_ca[0]), "--client-cert", str(agent_cert[0]),
             "--client-key", str(agent_cert[1]), "--sim-gpus", "2xh100-80g",
             "--data-dir", str(tmp_path / "agent"), "--name", "node-a"],
            str(tmp_path), server.env, "agent")
        try:
            def ready():
                nodes = server.call("GET", "/v1/nodes", trusted).json()["items"]
                return [n for n in nodes if n["name"] == "node-a" and n["state"] == "ready"]
            wait_for(ready, what="the agent to join over mutual TLS")
            # Its credential alone is not enough without the certificate.
            identity = json.loads((tmp_path / "agent" / "identity.json").read_text())
            problem(server.call("GET", "/v1/agent/desired", trusted, key=identity["credential"]),
                    401, "client_certificate_required")
            with_certificate = trusting(server_ca, agent_cert)
            assert server.call("GET", "/v1/agent/desired", with_certificate,
                               key=identity["credential"]).status == 200

            # A tenant's exec is forwarded from the TLS connection to the node and back.
            tenant = server.call("POST", "/v1/tenants", trusted, body={"name": "over-tls"})
            tenant_key = server.call("POST", "/v1/api-keys", trusted,
                                     body={"tenant_id": tenant.json()["id"]}).json()["key"]
            assert server.call("POST", "/v1/billing/topups", trusted,
                               body={"tenant_id": tenant.json()["id"],
                                     "amount_micros": 50_000_000}).status == 201
            created = server.call("POST", "/v1/instances", trusted, key=tenant_key,
                                  body={"gpu_type": "h100-80g", "command": "sleep 600"})
            assert created.status == 201, created.body
            instance = f"/v1/instances/{created.json()['id']}"
            wait_for(lambda: server.call("GET", instance, trusted, key=tenant_key)
                     .json()["state"] == "running", what="the instance to run")
            ran = server.call("POST", instance + "/exec", trusted, key=tenant_key,
                              body={"command": ["echo", "over tls"], "timeout_s": 10})
            assert ran.status == 200 and b"over tls" in ran.body, ran.body
            assert server.call("DELETE", instance, trusted, key=tenant_key).status in (200, 202)
        finally:
            agent.stop()

        # The CLI over https, trusting the server's CA through SSL_CERT_FILE.
        listed = subprocess.run(
            [BINARY, "--url", server.url, "nodes", "ls"], capture_output=True, text=True,
            timeout=60, env=dict(server.env, SSL_CERT_FILE=str(server_ca[0]),
                                 GPURENT_API_KEY=server.admin_key))
        assert listed.returncode == 0, listed.stderr
        assert "node-a" in listed.stdout
    finally:
        server.process.stop()


def test_a_renewed_certificate_is_taken_on_sighup(tmp_path, pki):
    server_ca, agents_ca = pki
    server = TlsServer(tmp_path, server_ca, agents_ca)
    try:
        old_trust = trusting(server_ca)
        wait_for(lambda: answers(server, old_trust), what="the server over https")

        # A broken renewal (a half-copied file) is refused; the certificate in use stays.
        good_cert = server.cert.read_bytes()
        server.cert.write_text("-----BEGIN CERTIFICATE-----\ntruncated\n")
        server.process.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "tls_reload_failed" in server.process.output(), what="the failed reload")
        assert answers(server, old_trust)
        server.cert.write_bytes(good_cert)

        # A renewal from another CA: new connections take it once the server is told.
        new_ca = make_ca(tmp_path, "new-ca")
        renewed = make_signed(tmp_path, "renewed", new_ca, "DNS:localhost,IP:127.0.0.1")
        server.cert.write_bytes(renewed[0].read_bytes())
        server.key.write_bytes(renewed[1].read_bytes())
        new_trust = trusting(new_ca)
        assert not answers(server, new_trust)
        server.process.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: answers(server, new_trust), what="the renewed certificate")
        assert not answers(server, old_trust)
        assert server.process.proc.poll() is None, "SIGHUP must not stop the server"
    finally:
        assert server.process.stop() == 0
