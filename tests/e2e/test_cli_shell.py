"""The CLI in a real shell: completion scripts that bash, zsh and fish load and answer with, and
`--watch` redrawing a listing until interrupted."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BINARY


def completed_by_bash(words):
    """What `_gpurent` puts in COMPREPLY for the words typed so far (the last is being typed)."""
    script = subprocess.run([BINARY, "completion", "bash"], capture_output=True, text=True,
                            check=True).stdout
    program = (f"{script}\nCOMP_WORDS=(gpurent {' '.join(words)})\n"
               f"COMP_CWORD={len(words)}\n_gpurent\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    bin_dir = os.path.dirname(BINARY)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": "/tmp"}
    result = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True,
                            env=env, check=True)
    return [line for line in result.stdout.splitlines() if line]


def test_bash_completes_commands_verbs_and_flags():
    assert completed_by_bash(["ins"]) == ["instances"]
    assert completed_by_bash(["job", "su"]) == ["submit"]
    assert "--wait-for-capacity" in completed_by_bash(["launch", "--gpu", "h100-80g", "--wa"])
    assert completed_by_bash(["launch", "--gpu", "h100-80g", "--", "py"]) == []


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_are_valid_for_their_shells(shell):
    script = subprocess.run([BINARY, "completion", shell], capture_output=True, text=True,
                            check=True).stdout
    assert "__complete" in script
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    check = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_fish_completes_from_the_same_tree():
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed")
    bin_dir = os.path.dirname(BINARY)
    result = subprocess.run(
        ["fish", "--no-config", "-c",
         "gpurent completion fish | source; complete -C'gpurent ins'; complete -C'gpurent job su'"],
        capture_output=True, text=True, env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": "/tmp"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["instances", "submit"]


def test_watch_redraws_a_listing_until_interrupted(platform):
    process = subprocess.Popen([BINARY, "ps", "--watch=1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=platform.cli_env())
    time.sleep(2.5)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=10)
    frames = out.count("Every 1s: ")
    assert frames >= 2, out
    assert out.count("NAME") == frames, out  # the table's header, drawn once per frame
    # Not a terminal: no screen-clearing codes between frames.
    assert "\x1b[" not in out
    # Under -o json: one JSON document after another, nothing else.
    process = subprocess.Popen([BINARY, "ps", "--watch=1", "-o", "json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=platform.cli_env())
    time.sleep(2.5)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=10)
    decoder, rest, documents = json.JSONDecoder(), out.strip(), 0
    while rest:
        _, end = decoder.raw_decode(rest)
        rest, documents = rest[end:].strip(), documents + 1
    assert documents >= 2, out
    bad = subprocess.run([BINARY, "ps", "--watch=0"], capture_output=True, text=True,
                         env=platform.cli_env())
    assert bad.returncode == 2, bad.stderr
