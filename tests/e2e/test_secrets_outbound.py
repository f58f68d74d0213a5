"""Secrets at rest and outbound restrictions, end to end: the session key in the data directory is
sealed under the secrets key file (made at first start, 0600), a session key written before sealing
is sealed in place, a server given another key file refuses to start, saying why; tenants' images
from a registry the operator did not allow are refused with 422."""

import os
import stat
import subprocess

import pytest

from conftest import BINARY, Platform, problem


def key_file_mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_session_key_is_sealed_under_a_key_file_that_must_stay_the_same(tmp_path):
    p = Platform(str(tmp_path)).start()
    try:
        key_file = os.path.join(p.data_dir, "secrets.key")
        session_key = os.path.join(p.data_dir, "session.key")
        assert os.path.getsize(key_file) == 32
        assert key_file_mode(key_file) == 0o600
        with open(session_key, "rb") as f:
            sealed = f.read()
        assert sealed.startswith(b"sealed:v1:")
        p.restart()  # the same key file opens it again
        with open(session_key, "rb") as f:
            assert f.read() == sealed
    finally:
        p.shutdown()

    # Another key file (lost, or not copied with the data): the server stops at start, saying which
    # file and what to do, and leaves the sealed key as it was.
    with open(key_file, "wb") as f:
        f.write(os.urandom(32))
    result = subprocess.run(
        [BINARY, "dev", "--listen", "127.0.0.1:0", "--data-dir", p.data_dir, "--sim-gpus",
         "1xh100-80g"], capture_output=True, text=True, timeout=60, env=p.env)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "cannot be opened with the key in " + key_file in output, output
    assert "or delete " + session_key in output, output
    with open(session_key, "rb") as f:
        assert f.read() == sealed


def test_a_session_key_written_before_sealing_is_sealed_in_place(tmp_path):
    p = Platform(str(tmp_path))
    os.makedirs(p.data_dir, mode=0o700)
    session_key = os.path.join(p.data_dir, "session.key")
    legacy = os.urandom(32)
    with open(session_key, "wb") as f:
        f.write(legacy)
    os.chmod(session_key, 0o600)
    # A key file set in the config, outside the data directory.
    key_file = tmp_path / "keys" / "gpurent.key"
    key_file.parent.mkdir()
    config = tmp_path / "server.toml"
    config.write_text(f'[secrets]\nkey_file = "{key_file}"\n')
    p.extra_args = ["--config", str(config)]
    p.start()
    try:
        assert key_file_mode(key_file) == 0o600
        assert not os.path.exists(os.path.join(p.data_dir, "secrets.key"))
        with open(session_key, "rb") as f:
            sealed = f.read()
        assert sealed.startswith(b"sealed:v1:") and legacy not in sealed
    finally:
        p.shutdown()


@pytest.fixture
def restricted(tmp_path):
    config = tmp_path / "server.toml"
    config.write_text('[outbound]\nregistries = ["docker.io", "registry.internal:5000"]\n')
    p = Platform(str(tmp_path), extra_args=["--config", str(config)]).start()
    yield p
    p.shutdown()


def test_images_from_registries_the_operator_did_not_allow_are_422(restricted):
    p = restricted
    _, key = p.new_tenant("acme")
    for image in ["ghcr.io/acme/env:3", "registry.internal:5001/team/x", "quay.io/x/y@sha256:ab"]:
        for path, extra in [("/v1/instances", {}), ("/v1/jobs", {"command": "true"}),
                            ("/v1/estimate", {})]:
            body = problem(p.call("POST", path, key=key,
                                  body={"gpu_type": "h100-80g", "image": image, **extra}),
                           422, "image_registry_not_allowed")
            assert image in body["detail"] and "registry.internal:5000" in body["detail"], body
    for image in ["pytorch/pytorch:2.5.1", "registry.internal:5000/team/x:1"]:
        estimate = p.call("POST", "/v1/estimate", key=key,
                          body={"gpu_type": "h100-80g", "image": image})
        assert estimate.status == 200, estimate.body
    # A template's image is the operator's: the request names none of its own.
    estimate = p.call("POST", "/v1/estimate", key=key,
                      body={"gpu_type": "h100-80g", "template": "pytorch"})
    assert estimate.status == 200, estimate.body


def test_by_default_images_from_registries_inside_the_network_are_422(platform):
    _, key = platform.new_tenant("acme")
    for image in ["127.0.0.1:5000/x", "localhost:5000/x", "10.0.0.5/x:1",
                  "169.254.169.254/latest"]:
        problem(platform.call("POST", "/v1/instances", key=key,
                              body={"gpu_type": "h100-80g", "image": image}),
                422, "image_registry_not_allowed")
    estimate = platform.call("POST", "/v1/estimate", key=key,
                             body={"gpu_type": "h100-80g", "image": "ghcr.io/acme/env:3"})
    assert estimate.status == 200, estimate.body
