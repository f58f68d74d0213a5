"""The examples in sdk/python/examples, run as a user runs them (a subprocess, the URL and key in
the environment) against a `gpurent dev` of their own with 2 simulated H100s; the spot example
is really preempted, by on-demand work that needs its GPUs."""
import os
import re
import subprocess
import sys
import threading

import pytest

from devserver import SDK, DevServer, find_binary, wait_for

EXAMPLES = os.path.join(SDK, "examples")
TIMEOUT = 60

pytestmark = pytest.mark.skipif(find_binary() is None, reason="no gpurent binary (set GPURENT_BIN)")


@pytest.fixture(scope="module")
def platform():
    server = DevServer(sim_gpus="2xh100-80g").start()
    _, key = server.new_tenant("examples", topup_micros=1_000_000_000)
    yield server, key
    server.stop()


class Example:
    """An example script running in the background; its output collected line by line."""

    def __init__(self, platform, name, *args):
        server, key = platform
        env = dict(server.env, GPURENT_URL=server.url, GPURENT_API_KEY=key, PYTHONPATH=SDK)
        self.proc = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, name), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)
        self.lines = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def output(self):
        return "".join(self.lines)

    def finish(self, timeout=TIMEOUT):
        """Waits for it to exit 0 and returns its output."""
        try:
            self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        assert self.proc.returncode == 0, self.output()
        return self.output()


def test_pytorch_instance(platform):
    out = Example(platform, "pytorch_instance.py", "--timeout", str(TIMEOUT)).finish()
    assert re.search(r"^  \| (torch \S+ on (cpu|cuda)|torch is not installed here)", out, re.M), out
    assert re.findall(r"^  \| epoch (\d) loss", out, re.M) == ["1", "2", "3", "4", "5"], out
    instance_id = re.search(r"^(i-\w+) is running", out, re.M).group(1)
    assert f"{instance_id} is stopped\n{instance_id} deleted\n" in out
    server, key = platform
    assert server.client(key).instances.get(instance_id).state == "terminated"


def test_array_job(platform):
    out = Example(platform, "array_job.py", "--tasks", "3", "--timeout", str(TIMEOUT)).finish()
    assert re.search(r"^j-\w+ succeeded", out, re.M), out
    assert sorted(re.findall(r"^task (\d): lr", out, re.M)) == ["0", "1", "2"], out
    assert re.search(r"^best learning rate: [\d.]+ \(task \d\)$", out, re.M), out


def test_spot_job_resubmits_itself_after_preemption(platform):
    server, key = platform
    tenant = server.client(key)
    admin = server.client()
    example = Example(platform, "spot_job.py", "--gpu-count", "2", "--steps", "12",
                      "--timeout", str(TIMEOUT))
    try:
        first = wait_for(lambda: next((j for j in tenant.jobs.list(state="running")
                                       if j.name == "spot-train"), None), TIMEOUT,
                         "the spot job to run")
        wait_for(lambda: "step 2\n" in tenant.jobs.logs(first.id), TIMEOUT, "two steps done")
        # On-demand work that needs the spot job's GPUs preempts it.
        blocker = admin.instances.create(gpu_type="h100-80g", gpu_count=2, command="sleep 600")
        wait_for(lambda: "resubmitting" in example.output(), TIMEOUT, "the resubmission")
        admin.instances.wait_until(blocker.id, "running", timeout=TIMEOUT)
        admin.instances.delete(blocker.id)  # its GPUs free, the new job runs
        out = example.finish()
    finally:
        if example.proc.poll() is None:
            example.proc.kill()
    jobs = [j for j in tenant.jobs.list() if j.name == "spot-train"]
    assert [j.state for j in jobs] == ["preempted", "succeeded"], out
    assert f"attempt 1: {jobs[0].id} preempted (preempted by on_demand work)" in out
    resumed = int(re.search(r"resuming at step (\d+) of 12", out).group(1))
    assert resumed >= 2, out  # from the checkpoint the first run left
    steps = re.findall(r"^  \| step (\d+)$", out, re.M)
    assert steps == [str(s) for s in range(resumed + 1, 13)], out
    assert "finished after 12 steps" in out
