"""VM instances end to end (docs/vm-runtime.md): a second agent with --vm-kernel (the test image of
scripts/vm-test-image.sh, under TCG: a nested KVM guest hangs on the machines this runs on) states
what it can do with VMs; `gpurent launch --runtime vm` lands there and nowhere else; the command
runs in the guest with its env, its /workspace and a volume, and reaches the node's network but
not its loopback; its service answers through the server's proxy (a port forwarded into the
guest); `gpurent exec` runs in the guest through its agent, and `gpurent cp` unpacks there; its log
is the serial console; stop and start keep /workspace and the volume; an agent killed with SIGKILL
adopts the running VM; delete ends it and the node deletes its files.
An agent with --vm-image boots a cloud image (scripts/vm-cloud-image.sh: Debian with its cloud
kernel and cloud-init; its folders over virtio-fs):
the tenant's SSH key reaches the VM's user, who logs in with `gpurent ssh` (a tunnel through the
server and the node); the command runs at each boot on the instance's own root disk, which a stop
and start keep and a delete deletes.
"""
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading

import pytest

from conftest import BINARY, assert_exec_in_workspace, http, problem, wait_for

VM_TIMEOUT_S = 90  # a TCG boot takes about 6 s; a loaded CI machine, more
CLOUD_TIMEOUT_S = 300  # a full Debian with cloud-init under TCG boots in about a minute
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICwa4sBUcPlIif1WN+56sNJou2Z1eM/g65b0pLsYOSty"


@pytest.fixture
def image():
    path = os.environ.get("GPURENT_TEST_VM_IMAGE", "")
    if not os.path.exists(os.path.join(path, "vmlinuz")):
        if os.environ.get("GPURENT_REQUIRE_VM"):
            pytest.fail("GPURENT_TEST_VM_IMAGE is not set (scripts/vm-test-image.sh)")
        pytest.skip("no VM test image: GPURENT_TEST_VM_IMAGE=$(scripts/vm-test-image.sh)")
    return path


@pytest.fixture
def cloud_image():
    path = os.environ.get("GPURENT_TEST_VM_CLOUD_IMAGE", "")
    if not os.path.isfile(path):
        if os.environ.get("GPURENT_REQUIRE_VM"):
            pytest.fail("GPURENT_TEST_VM_CLOUD_IMAGE is not set (scripts/vm-cloud-image.sh)")
        pytest.skip("no cloud image: GPURENT_TEST_VM_CLOUD_IMAGE=$(scripts/vm-cloud-image.sh)")
    return path


@pytest.fixture
def agent_dir():
    # Short: a VM's monitor socket lives under the agent's data directory (108 bytes at most).
    path = tempfile.mkdtemp(prefix="gvm-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start_vm_agent(platform, image, agent_dir, name="vms"):
    """An agent whose VMs boot the test image (a directory) or a cloud image (a qcow2 file)."""
    token = platform.call("POST", "/v1/join-tokens", body={"description": "vms"})
    assert token.status == 201
    # The cloud image's kernel is Debian's cloud kernel, without virtio-9p: its folders go over
    # virtio-fs. The test image's go over 9p, the agent's default.
    guest = (["--vm-image", image, "--vm-shares", "virtiofs"] if os.path.isfile(image) else
             ["--vm-kernel", os.path.join(image, "vmlinuz"),
              "--vm-initrd", os.path.join(image, "initrd.gz")])
    return platform.start_process(
        ["agent", "--server", platform.url, "--join-token", token.json()["token"],
         "--sim-gpus", "1xa100-80g", "--data-dir", os.path.join(agent_dir, "a"), "--name", name,
         # A TCG guest's systemd may take long to shut down on a loaded machine.
         *guest, "--vm-accelerator", "tcg", "--vm-stop-grace", "120"], name)


def node_nameservers():
    """The resolvers the agent gives guests (agent/vm/passt.h, guest_nameservers)."""
    def usable(path):
        found = []
        try:
            lines = open(path).read().splitlines()
        except OSError:
            return found
        for line in lines:
            words = line.split()
            if len(words) < 2 or words[0] != "nameserver" or len(found) == 3:
                continue
            try:
                address = ipaddress.ip_address(words[1])
            except ValueError:
                continue
            if address.version == 4 and not address.is_loopback and not address.is_unspecified:
                found.append(words[1])
        return found
    return usable("/etc/resolv.conf") or usable("/run/systemd/resolve/resolv.conf")


class LineCatcher:
    """A TCP listener on the node's network address (not its loopback) that keeps the first line
    of each connection: where a guest's outbound traffic is seen arriving."""

    def __init__(self):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("192.0.2.1", 9))  # no packet is sent: it picks the outgoing address
        self.address = probe.getsockname()[0]
        probe.close()
        self.server = socket.create_server((self.address, 0))
        self.port = self.server.getsockname()[1]
        self.lines = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            with client:
                self.lines.append(client.makefile().readline().strip())

    def close(self):
        self.server.close()


def qemu_processes(instance_id):
    found = subprocess.run(["pgrep", "-f", f"gpurent-vm-{instance_id}"], capture_output=True,
                           text=True)
    return found.stdout.split()


def logs(platform, instance_id, key):
    return platform.cli("logs", instance_id, key=key).stdout


def test_a_vm_instance_boots_serves_keeps_its_disk_and_survives_an_agent_kill(
        platform, image, agent_dir, tmp_path):
    agent = start_vm_agent(platform, image, agent_dir)
    wait_for(lambda: platform.offers().get("a100-80g", {}).get("total") == 1,
             what="the VM node's GPU")
    [node] = [n for n in platform.call("GET", "/v1/nodes").json()["items"] if n["name"] == "vms"]
    assert node["vm"]["accelerator"] == "tcg" and node["vm"]["gpu_passthrough"] is True, node
    assert "--vm-accelerator tcg" in node["vm"]["note"], node
    shown = platform.cli("nodes", "show", node["id"]).stdout
    assert "yes, tcg" in shown, shown

    _, key = platform.new_tenant("guarded")
    volume = platform.call("POST", "/v1/volumes", key, body={"name": "data", "size_gb": 1})
    assert volume.status == 201, volume.body
    volume_id = volume.json()["id"]
    catcher = LineCatcher()
    script = (
        "echo \"hello $GPURENT_INSTANCE_ID in $(pwd) on $(cat /proc/cmdline | grep -o "
        "gpurent.shares)\"; echo \"before: $(cat note 2>/dev/null) $(cat /data/count 2>/dev/null)\"; "
        "echo kept > note; echo \"$(cat /data/count 2>/dev/null)x\" > /data/count; "
        "printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' | nc -w 3 10.0.2.2 \"$SERVER_PORT\" | "
        "grep -q ' 200 ' && echo host-reached || echo host-unreachable; "
        "echo \"out-$GPURENT_INSTANCE_ID\" | nc -w 10 \"$OUT_ADDRESS\" \"$OUT_PORT\" && echo outbound-sent; "
        "mkdir -p \"i/$GPURENT_INSTANCE_ID/web\"; echo served > \"i/$GPURENT_INSTANCE_ID/web/page\"; "
        "echo ready; exec httpd -f -p \"$GPURENT_PORT_WEB\" -h /workspace")
    created = json.loads(platform.cli(
        "launch", "--runtime", "vm", "--gpu", "a100-80g", "--volume", f"{volume_id}:/data",
        "--env", f"SERVER_PORT={platform.port}",
        "--env", f"OUT_ADDRESS={catcher.address}", "--env", f"OUT_PORT={catcher.port}",
        "--service", "web", "-o", "json", "--", "sh", "-c", script, key=key).stdout)
    instance_id = created["id"]
    assert created["runtime"] == "vm", created
    platform.wait_state(instance_id, "running", key)
    assert platform.instance(instance_id, key)["node_id"] == node["id"]
    wait_for(lambda: "ready" in logs(platform, instance_id, key), VM_TIMEOUT_S,
             "the guest to run its command")
    text = logs(platform, instance_id, key)
    assert f"hello {instance_id} in /workspace on gpurent.shares" in text, text
    assert "before:  \n" in text, text
    # The guest reaches the node's network (passt, the agent's default --vm-network outbound), but
    # not the node's loopback (the server, the node API, other tenants' services) through its
    # gateway.
    assert "host-unreachable" in text, text
    assert "outbound-sent" in text, text
    assert catcher.lines == [f"out-{instance_id}"], catcher.lines
    catcher.close()

    # The service listens in the guest; the node forwards its port there and the server proxies.
    page = wait_for(lambda: (lambda r: r if r.status == 200 else None)(
        http(platform.url, path=f"/i/{instance_id}/web/page", key=key)), VM_TIMEOUT_S,
        "the guest's service through the proxy")
    assert page.body == b"served\n"

    # gpurent exec runs in the guest through its agent (qemu-ga): the run's env, /workspace, both
    # streams, the status; a program the guest lacks is 127; another tenant cannot.
    assert_exec_in_workspace(platform, instance_id, key)

    # gpurent cp unpacks into the guest through its agent: relative to /workspace, or anywhere in
    # the guest (the VM is the tenant's alone).
    local = tmp_path / "local"
    (local / "data" / "sub").mkdir(parents=True)
    (local / "data" / "x.txt").write_text("the data\n")
    (local / "data" / "sub" / "y.txt").write_text("deeper\n")
    copied = json.loads(platform.cli("cp", str(local / "data"), f"{instance_id}:inputs", "-o",
                                     "json", key=key, timeout=120).stdout)
    assert copied["path"] == "/workspace/inputs", copied
    assert copied["files"] == 2 and copied["directories"] == 2, copied
    assert copied["bytes"] == len("the data\n") + len("deeper\n"), copied
    platform.cli("cp", str(local / "data") + "/", f"{instance_id}:/opt/flat", key=key, timeout=120)
    seen = platform.cli("exec", instance_id, "--", "sh", "-c",
                        "cat inputs/data/x.txt inputs/data/sub/y.txt /opt/flat/sub/y.txt; "
                        "ls /tmp | grep -c gpurent-copy", key=key, check=False)
    assert seen.stdout == "the data\ndeeper\ndeeper\n0\n", (seen.stdout, seen.stderr)

    # Stop and start: a new VM, the same /workspace and volume.
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status == 202
    platform.wait_state(instance_id, "stopped", key)
    wait_for(lambda: not qemu_processes(instance_id), what="QEMU to end")
    assert platform.call("POST", f"/v1/instances/{instance_id}/start", key).status == 202
    platform.wait_state(instance_id, "running", key)
    wait_for(lambda: "before: kept x" in logs(platform, instance_id, key), VM_TIMEOUT_S,
             "the second run to read the first run's files")

    # The agent dies hard and comes back: the VM is adopted, not booted again.
    [qemu] = qemu_processes(instance_id)
    agent.stop(signal.SIGKILL)
    agent = start_vm_agent(platform, image, agent_dir)
    wait_for(lambda: f"workload_adopted instance={instance_id} run=2" in agent.output(),
             what="the restarted agent to adopt the VM")
    wait_for(lambda: http(platform.url, path=f"/i/{instance_id}/web/page", key=key).status == 200,
             VM_TIMEOUT_S, "the adopted VM's service")
    assert platform.instance(instance_id, key)["state"] == "running"
    assert qemu_processes(instance_id) == [qemu]

    # Delete ends the VM, and the node deletes the instance's files; the volume's data stays.
    home = os.path.join(agent_dir, "a-instances", instance_id)
    assert os.path.exists(os.path.join(home, "note"))
    assert platform.call("DELETE", f"/v1/instances/{instance_id}", key).status in (200, 202)
    platform.wait_state(instance_id, "terminated", key)
    wait_for(lambda: not qemu_processes(instance_id), what="QEMU to end")
    wait_for(lambda: not os.path.exists(home), what="the instance's files to be deleted")
    with open(os.path.join(agent_dir, "a", "volumes", volume_id, "count")) as f:
        assert f.read() == "xx\n"


def test_a_cloud_image_vm_has_the_tenants_key_and_keeps_its_root_disk(
        platform, cloud_image, agent_dir, tmp_path):
    start_vm_agent(platform, cloud_image, agent_dir)
    wait_for(lambda: platform.offers().get("a100-80g", {}).get("total") == 1,
             what="the VM node's GPU")
    _, key = platform.new_tenant("cloudy")
    # The tenant's own key pair; the private half stays here.
    identity = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tenant@laptop", "-f",
                    str(identity)], check=True)
    key_file = tmp_path / "id_ed25519.pub"
    public_key = key_file.read_text().strip()
    volume = platform.call("POST", "/v1/volumes", key, body={"name": "sets", "size_gb": 1})
    assert volume.status == 201, volume.body
    volume_id = volume.json()["id"]
    script = ("echo \"keys: $(cat /home/gpurent/.ssh/authorized_keys)\"; "
              "echo \"dns: $(sed -n 's/.*option domain-name-servers \\([^;]*\\);.*/\\1/p' "
              "/var/lib/dhcp/*.leases | tail -n 1)\"; "
              "echo \"$(cat /var/tmp/boots 2>/dev/null)x\" > /var/tmp/boots; "
              "echo \"boots: $(cat /var/tmp/boots)\"; echo kept > note; echo ready; exec sleep 600")
    created = json.loads(platform.cli(
        "launch", "--runtime", "vm", "--gpu", "a100-80g", "--ssh-key", str(key_file),
        "--volume", f"{volume_id}:/data", "-o", "json", "--", "sh", "-c", script, key=key).stdout)
    instance_id = created["id"]
    assert created["ssh_keys"] == [public_key], created
    wait_for(lambda: "ready" in logs(platform, instance_id, key), CLOUD_TIMEOUT_S,
             "the cloud image to boot and run the command")
    text = logs(platform, instance_id, key)
    assert f"keys: {public_key}" in text, text
    # DHCP gave the guest the node's resolvers (passt's --dns; systemd-resolved's upstreams where
    # the node's resolv.conf names only its stub).
    assert f"dns: {','.join(node_nameservers())}\n" in text, text
    assert "boots: x\n" in text, text
    assert_exec_in_workspace(platform, instance_id, key)

    # The volume goes over virtio-fs: what the guest writes there is the tenant's guest ids' (its
    # guests' root: the first of them, 1200000, as the node's first tenant with a VM), and a copy
    # into the volume while the VM runs is written as the guest's root and leaves the VM its
    # access.
    (tmp_path / "corpus.txt").write_text("tokens\n")
    platform.cli("cp", str(tmp_path / "corpus.txt"), f"{volume_id}:sets", key=key, timeout=120)
    seen = platform.cli("exec", instance_id, "--", "sh", "-c",
                        "cat /data/sets/corpus.txt && stat -c %u /data/sets/corpus.txt && "
                        "echo more > /data/sets/more.txt && echo written", key=key, check=False)
    assert seen.stdout == "tokens\n0\nwritten\n", (seen.stdout, seen.stderr)
    more = os.path.join(agent_dir, "a", "volumes", volume_id, "sets", "more.txt")
    assert os.stat(more).st_uid == 1200000
    with open(os.path.join(agent_dir, "a", "workload-users.log")) as log:
        blocks = [line.split()[2] for line in log if line.startswith("guests ")]
    assert blocks == ["1200000"], blocks

    # SSH through the server: `gpurent ssh`, and plain ssh with `gpurent ssh-proxy` as its
    # ProxyCommand. The tenant logs in as gpurent with the key, and may sudo.
    ssh_options = ["-i", str(identity), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                   "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
    logged_in = wait_for(lambda: (lambda r: r if r.returncode == 0 else None)(platform.cli(
        "ssh", instance_id, "--", *ssh_options, "echo \"$(whoami) in $(hostname)\"; sudo -n id -u",
        key=key, check=False, timeout=120)), CLOUD_TIMEOUT_S, "sshd to let the tenant in")
    assert logged_in.stdout == f"gpurent in {instance_id}\n0\n", logged_in.stdout
    proxied = subprocess.run(
        ["ssh", *ssh_options, "-o", f"ProxyCommand={BINARY} ssh-proxy %h",
         f"gpurent@{instance_id}", "cat /workspace/note"],
        capture_output=True, text=True, env=platform.cli_env(key), timeout=120)
    assert (proxied.returncode, proxied.stdout) == (0, "kept\n"), proxied.stderr
    # Another tenant gets no tunnel; a request that is no upgrade gets none either.
    _, other = platform.new_tenant("cloud-neighbour")
    problem(http(platform.url, path=f"/v1/instances/{instance_id}/ssh", key=other,
                 headers={"Connection": "Upgrade", "Upgrade": "ssh"}), 404)
    problem(http(platform.url, path=f"/v1/instances/{instance_id}/ssh", key=key), 400,
            "upgrade_required")

    # Stop (the guest shuts down) and start: the same root disk, booted again.
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status == 202
    platform.wait_state(instance_id, "stopped", key, timeout=CLOUD_TIMEOUT_S)
    wait_for(lambda: not qemu_processes(instance_id), what="QEMU to end")
    assert platform.call("POST", f"/v1/instances/{instance_id}/start", key).status == 202
    wait_for(lambda: "boots: xx" in logs(platform, instance_id, key), CLOUD_TIMEOUT_S,
             "the second boot to find the first one's file on the root disk")

    # Delete: the guest ends, and the node deletes its root disk.
    root_disk = os.path.join(agent_dir, "a", "vm-disks", f"{instance_id}.qcow2")
    assert os.path.exists(root_disk)
    assert platform.call("DELETE", f"/v1/instances/{instance_id}", key).status in (200, 202)
    platform.wait_state(instance_id, "terminated", key, timeout=CLOUD_TIMEOUT_S)
    wait_for(lambda: not qemu_processes(instance_id), what="QEMU to end")
    wait_for(lambda: not os.path.exists(root_disk), what="the root disk to be deleted")


def test_vm_work_goes_only_where_vms_run_and_is_refused_in_shapes_a_vm_cannot_take(
        platform, image, agent_dir):
    _, key = platform.new_tenant("picky")
    # Before any node runs VMs: the dev node's H100s do not, so it could never be placed.
    never = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "h100-80g", "runtime": "vm", "command": "true"})
    problem(never, 422, "never_fits")
    assert "gpurent.io/vm-runtime" in never.json()["detail"], never.body
    problem(platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "any", "runtime": "vm", "image": "docker.io/library/busybox:1"}),
        422, "vm_image_unsupported")
    problem(platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "any", "runtime": "vm", "gpu_milli": 500, "command": "true"}),
        422, "vm_gpu_share_unsupported")
    problem(platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "any", "runtime": "hypervisor", "command": "true"}), 400, "invalid_field")
    # SSH keys are for a VM's user, and must be public keys; only a VM has an SSH server.
    sleeper = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "h100-80g", "command": "sleep 600"})
    assert sleeper.status == 201, sleeper.body
    problem(http(platform.url, path=f"/v1/instances/{sleeper.json()['id']}/ssh", key=key,
                 headers={"Connection": "Upgrade", "Upgrade": "ssh"}), 422, "ssh_unavailable")
    problem(platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "any", "command": "true", "ssh_keys": [SSH_KEY]}), 422, "ssh_keys_need_vm")
    bad_key = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "any", "runtime": "vm", "command": "true",
        "ssh_keys": [SSH_KEY, "-----BEGIN OPENSSH PRIVATE KEY-----"]})
    problem(bad_key, 400, "invalid_field")
    assert "ssh_keys[1]" in bad_key.json()["detail"], bad_key.body

    start_vm_agent(platform, image, agent_dir)
    wait_for(lambda: platform.offers().get("a100-80g", {}).get("total") == 1,
             what="the VM node's GPU")
    # "any" type: of the nine GPUs only the VM node's may take it. The base template's process
    # form runs in the guest.
    created = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "any", "runtime": "vm", "template": "base",
        "command": ["sh", "-c", "echo $GPURENT_INSTANCE_ID; exit 3"]})
    assert created.status == 201, created.body
    instance = created.json()
    assert instance["runtime"] == "vm" and instance["template"] == "base", instance
    ended = platform.wait_state(instance["id"], ("stopped", "failed"), key, timeout=VM_TIMEOUT_S)
    assert ended["exit_code"] == 3, ended
    assert ended["gpu_type"] == "a100-80g", ended
    assert instance["id"] in logs(platform, instance["id"], key)
