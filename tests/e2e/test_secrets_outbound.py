"""Secrets at rest and outbound restrictions, end to end: the session key in the data directory is
sealed under the secrets key file (made at first start, 0600), a key file written before sealing is
sealed in place, a server given another key file refuses to start, saying why."""

import os
import stat
import subprocess

from conftest import BINARY, Platform


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
