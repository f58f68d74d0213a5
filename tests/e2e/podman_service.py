"""A Podman service of its own for the tests and benchmarks that run containers: `podman system
service` on a socket in a temp dir with its own vfs storage, cgroupfs and runc, explicit default
ulimits (this project's machines refuse the host's), and a one-binary image built from the static
busybox. The same set-up as src/agent/runtime/podman_test_env.h, for Python.

Podman is installed by scripts/install-deps.sh (test and bench profiles).
"""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile

from conftest import wait_for

IMAGE = "localhost/gpurent-e2e:busybox"


class Podman:
    def __init__(self):
        if shutil.which("podman") is None or not os.path.exists("/bin/busybox"):
            raise AssertionError("podman or /bin/busybox is missing: scripts/install-deps.sh test "
                                 "installs them")
        # Podman's locks are host-wide: one service at a time (the unit tests take the same lock).
        self.lock = open("/tmp/gpurent-podman.lock", "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.dir = tempfile.mkdtemp(prefix="gpurent-e2e-podman-", dir="/tmp")
        self.socket = os.path.join(self.dir, "podman.sock")
        with open(os.path.join(self.dir, "storage.conf"), "w") as f:
            f.write(f'[storage]\ndriver = "vfs"\nrunroot = "{self.dir}/run"\n'
                    f'graphroot = "{self.dir}/root"\n')
        with open(os.path.join(self.dir, "containers.conf"), "w") as f:
            f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n'
                    '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                    f'runtime = "runc"\ntmp_dir = "{self.dir}/tmp"\n'
                    f'volume_path = "{self.dir}/volumes"\n')
        self.env = dict(os.environ)
        self.env["CONTAINERS_CONF"] = os.path.join(self.dir, "containers.conf")
        self.env["CONTAINERS_STORAGE_CONF"] = os.path.join(self.dir, "storage.conf")
        rootfs = os.path.join(self.dir, "rootfs")
        os.makedirs(os.path.join(rootfs, "bin"))
        for sub in ("tmp", "proc", "dev", "sys", "etc"):
            os.makedirs(os.path.join(rootfs, sub))
        shutil.copy("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
        for tool in ("sh", "sleep", "echo", "cat", "env", "ls"):
            os.symlink("busybox", os.path.join(rootfs, "bin", tool))
        tar = os.path.join(self.dir, "rootfs.tar")
        subprocess.run(["tar", "-C", rootfs, "-cf", tar, "."], check=True)
        self.podman("import", "--change", "ENV PATH=/bin", tar, IMAGE)
        self.log = open(os.path.join(self.dir, "service.log"), "ab")
        self.service = subprocess.Popen(
            ["podman", "system", "service", "--time", "0", "unix://" + self.socket],
            stdout=self.log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        wait_for(lambda: self.podman("version", check=False).returncode == 0 and
                 os.path.exists(self.socket), what="podman system service")

    def podman(self, *args, check=True):
        result = subprocess.run(["podman", *args], capture_output=True, text=True, env=self.env,
                                timeout=120)
        if check:
            assert result.returncode == 0, f"podman {' '.join(args)}: {result.stderr}"
        return result

    def containers(self, instance_id):
        out = self.podman("ps", "-a", "--filter", f"label=gpurent.instance={instance_id}",
                          "--format", "json").stdout
        return json.loads(out or "[]")

    def close(self):
        self.podman("rm", "--all", "--force", "--time", "0", check=False)
        self.service.send_signal(signal.SIGTERM)
        self.service.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.lock.close()
