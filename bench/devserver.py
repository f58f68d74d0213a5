"""Starting `gpurent dev` for the benchmarks (bench/api_bench.py, bench/fleet_bench.py)."""

import os
import re
import subprocess
import time


def start_dev(binary, workdir, key):
    """`gpurent dev` on a free port with its data under workdir; returns (process, port)."""
    path = os.path.join(workdir, "dev.log")
    out = open(path, "wb")
    proc = subprocess.Popen([binary, "dev", "--listen", "127.0.0.1:0", "--data-dir",
                             os.path.join(workdir, "data"), "--admin-key", key,
                             "--sim-gpus", "8xh100-80g", "--no-cli-config"],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = open(path, errors="replace").read()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", text)
        if found:
            return proc, int(found.group(1))
        if proc.poll() is not None:
            raise SystemExit("gpurent dev exited:\n" + text)
        time.sleep(0.05)
    raise SystemExit("gpurent dev did not start")
