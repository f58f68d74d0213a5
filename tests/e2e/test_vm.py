"""VM instances end to end (docs/vm-runtime.md): a second agent with --vm-kernel (the test image of
scripts/vm-test-image.sh, under TCG: a nested KVM guest hangs on the machines this runs on) states
what it can do with VMs; `gpurent launch --runtime vm` lands there and nowhere else; the command
runs in the guest with its env, its /workspace and a volume, and cannot reach the host; its
service answers through the server's proxy (a port forwarded into the guest); `gpurent exec` runs
in the guest through its agent; its log is the serial console; stop and start
keep /workspace and the volume; an agent killed with SIGKILL adopts the running VM; delete ends it.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import assert_exec_in_workspace, http, problem, wait_for

VM_TIMEOUT_S = 90  # a TCG boot takes about 6 s; a loaded CI machine, more


@pytest.fixture
def image():
    path = os.environ.get("GPURENT_TEST_VM_IMAGE", "")
    if not os.path.exists(os.path.join(path, "vmlinuz")):
        if os.environ.get("GPURENT_REQUIRE_VM"):
            pytest.fail("GPURENT_TEST_VM_IMAGE is not set (scripts/vm-test-image.sh)")
        pytest.skip("no VM test image: GPURENT_TEST_VM_IMAGE=$(scripts/vm-test-image.sh)")
    return path


@pytest.fixture
def agent_dir():
    # Short: a VM's monitor socket lives under the agent's data directory (108 bytes at most).
    path = tempfile.mkdtemp(prefix="gvm-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start_vm_agent(platform, image, agent_dir, name="vms"):
    token = platform.call("POST", "/v1/join-tokens", body={"description": "vms"})
    assert token.status == 201
    return platform.start_process(
        ["agent", "--server", platform.url, "--join-token", token.json()["token"],
         "--sim-gpus", "1xa100-80g", "--data-dir", os.path.join(agent_dir, "a"), "--name", name,
         "--vm-kernel", os.path.join(image, "vmlinuz"),
         "--vm-initrd", os.path.join(image, "initrd.gz"), "--vm-accelerator", "tcg"], name)


def qemu_processes(instance_id):
    found = subprocess.run(["pgrep", "-f", f"gpurent-vm-{instance_id}"], capture_output=True,
                           text=True)
    return found.stdout.split()


def logs(platform, instance_id, key):
    return platform.cli("logs", instance_id, key=key).stdout


def test_a_vm_instance_boots_serves_keeps_its_disk_and_survives_an_agent_kill(
        platform, image, agent_dir):
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
    script = (
        "echo \"hello $GPURENT_INSTANCE_ID in $(pwd) on $(cat /proc/cmdline | grep -o "
        "gpurent.shares)\"; echo \"before: $(cat note 2>/dev/null) $(cat /data/count 2>/dev/null)\"; "
        "echo kept > note; echo \"$(cat /data/count 2>/dev/null)x\" > /data/count; "
        "printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' | nc -w 3 10.0.2.2 \"$SERVER_PORT\" | "
        "grep -q ' 200 ' && echo host-reached || echo host-unreachable; "
        "mkdir -p \"i/$GPURENT_INSTANCE_ID/web\"; echo served > \"i/$GPURENT_INSTANCE_ID/web/page\"; "
        "echo ready; exec httpd -f -p \"$GPURENT_PORT_WEB\" -h /workspace")
    created = json.loads(platform.cli(
        "launch", "--runtime", "vm", "--gpu", "a100-80g", "--volume", f"{volume_id}:/data",
        "--env", f"SERVER_PORT={platform.port}",
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
    # The guest's network is restricted: the host's loopback (the server, the node API, other
    # tenants' services) is not reachable from inside.
    assert "host-unreachable" in text, text

    # The service listens in the guest; the node forwards its port there and the server proxies.
    page = wait_for(lambda: (lambda r: r if r.status == 200 else None)(
        http(platform.url, path=f"/i/{instance_id}/web/page", key=key)), VM_TIMEOUT_S,
        "the guest's service through the proxy")
    assert page.body == b"served\n"

    # gpurent exec runs in the guest through its agent (qemu-ga): the run's env, /workspace, both
    # streams, the status; a program the guest lacks is 127; another tenant cannot.
    assert_exec_in_workspace(platform, instance_id, key)

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

    # Delete ends the VM; the volume's data stays on the node.
    assert platform.call("DELETE", f"/v1/instances/{instance_id}", key).status in (200, 202)
    platform.wait_state(instance_id, "terminated", key)
    wait_for(lambda: not qemu_processes(instance_id), what="QEMU to end")
    with open(os.path.join(agent_dir, "a", "volumes", volume_id, "count")) as f:
        assert f.read() == "xx\n"


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
