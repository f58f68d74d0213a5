"""Both clients over https (a scripted server with a certificate made here by openssl): the
server's certificate checked against the ssl_context given, kept-alive connections and chunked
streams through TLS, and an untrusted certificate refused."""
import asyncio
import shutil
import ssl
import subprocess

import pytest

import gpurent
from scripted import Answer, ScriptedServer

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1: (cert file, key file)."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


@pytest.fixture
def https(certificate):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server = ScriptedServer([Answer(200, b'{"status": "ok"}'), Answer(200, b'{"status": "ok"}'),
                             Answer(200, [b"one\ntw", b"o\n"], {"Content-Type": "text/plain"})],
                            tls=context)
    yield server
    server.close()


def trusting(certificate):
    return ssl.create_default_context(cafile=certificate[0])


def test_client_over_https(https, certificate):
    with gpurent.Client(url=https.url, api_key="k", ssl_context=trusting(certificate)) as c:
        assert c.health().status == "ok" and c.health().status == "ok"
        assert list(c.instances.stream_logs("i-1")) == ["one\n", "two\n"]
    assert https.connections == 2  # one kept alive for both calls, one for the stream


def test_async_client_over_https(https, certificate):
    async def main():
        async with gpurent.AsyncClient(url=https.url, api_key="k",
                                       ssl_context=trusting(certificate)) as c:
            assert (await c.health()).status == "ok" and (await c.health()).status == "ok"
            return [line async for line in c.instances.stream_logs("i-1")]
    assert asyncio.run(main()) == ["one\n", "two\n"]
    assert https.connections == 2


def test_untrusted_certificate_refused(https):
    with pytest.raises(gpurent.ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
        gpurent.Client(url=https.url, api_key="k", retries=0).health()

    async def main():
        async with gpurent.AsyncClient(url=https.url, api_key="k", retries=0) as c:
            await c.health()
    with pytest.raises(gpurent.ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(main())
    assert https.requests == []
