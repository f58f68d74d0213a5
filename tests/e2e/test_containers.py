"""Container instances end to end on a real Podman: a second agent with --container-socket, an
instance that names an image, its env and limits in the engine, logs, stop/start with its
/workspace kept, an agent killed with SIGKILL and restarted (the container is adopted, not
started twice), and removal.

Podman is installed by `make test` (scripts/install-deps.sh); the service runs on a socket in a
temp dir with storage of its own, as src/agent/runtime/podman_test_env.h does for the unit tests.
"""
import json
import signal

import pytest

from conftest import Platform, assert_exec_in_workspace, problem, wait_for
from podman_service import IMAGE, Podman

@pytest.fixture
def platform(tmp_path):
    """`gpurent dev` whose tenants may name the test's image, which lives in the nodes' own store
    (Podman's localhost/): the default [outbound] policy refuses the registry "localhost"."""
    config = tmp_path / "server.toml"
    config.write_text('[outbound]\nallow = ["localhost"]\n')
    p = Platform(str(tmp_path), extra_args=["--config", str(config)]).start()
    yield p
    p.shutdown()


@pytest.fixture
def podman():
    engine = Podman()
    yield engine
    engine.close()


def start_container_agent(platform, podman, tmp_path, name="containers"):
    token = platform.call("POST", "/v1/join-tokens", body={"description": "containers"})
    assert token.status == 201
    return platform.start_process(
        ["agent", "--server", platform.url, "--join-token", token.json()["token"],
         "--sim-gpus", "1xa100-80g", "--data-dir", str(tmp_path / "agent-c"), "--name", name,
         "--container-socket", podman.socket], name)


def test_a_container_instance_runs_in_its_image_keeps_its_disk_and_survives_an_agent_kill(
        platform, podman, tmp_path):
    agent = start_container_agent(platform, podman, tmp_path)
    wait_for(lambda: platform.offers().get("a100-80g", {}).get("total") == 1,
             what="the container node's GPU")
    _, key = platform.new_tenant("boxed")
    script = ("echo hello $GPURENT_INSTANCE_ID from $(pwd); cat /workspace/note 2>/dev/null; "
              "grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; "
              "echo kept > /workspace/note; exec sleep 1000")
    created = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "a100-80g", "image": IMAGE, "command": ["sh", "-c", script],
        "cpu": 1, "memory_gb": 1})
    assert created.status == 201, created.body
    instance = created.json()
    assert instance["image"] == IMAGE
    instance_id = instance["id"]
    platform.wait_state(instance_id, "running", key)
    logs = wait_for(lambda: (lambda text: text if "NoNewPrivs" in text else None)(
        platform.cli("logs", instance_id, key=key).stdout), what="the container's output")
    assert f"hello {instance_id} from /workspace" in logs
    # Hardened (docs/runtime.md): no new privileges, seven capabilities (no NET_RAW, no SYS_ADMIN).
    assert "CapEff:\t00000000000000fb\nNoNewPrivs:\t1\n" in logs, logs
    # Simulated GPUs reach no container: the toolkit is not checked, image work runs there.
    [node] = [n for n in platform.call("GET", "/v1/nodes").json()["items"]
              if n["name"] == "containers"]
    assert node["container_runtime"] is True and node["container_toolkit"] is None, node

    # gpurent exec runs in the container: its environment, /workspace, both streams, the status.
    assert_exec_in_workspace(platform, instance_id, key)

    # In the engine: one container, labelled, with the limits asked for.
    [container] = podman.containers(instance_id)
    inspected = json.loads(podman.podman("inspect", container["Id"]).stdout)[0]
    assert inspected["HostConfig"]["Memory"] == 1 << 30
    assert inspected["HostConfig"]["NanoCpus"] == 1_000_000_000
    assert "GPURENT_INSTANCE_ID=" + instance_id in inspected["Config"]["Env"]

    # Stop and start: a new run, a new container, the same /workspace.
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status == 202
    platform.wait_state(instance_id, "stopped", key)
    assert platform.call("POST", f"/v1/instances/{instance_id}/start", key).status == 202
    platform.wait_state(instance_id, "running", key)
    wait_for(lambda: "kept" in platform.cli("logs", instance_id, key=key).stdout,
             what="the second run to read the first run's file")

    # The agent dies hard and comes back: the running container is adopted, not started again.
    running = [c for c in podman.containers(instance_id) if c["State"] == "running"]
    assert len(running) == 1
    agent.stop(signal.SIGKILL)
    agent = start_container_agent(platform, podman, tmp_path, name="containers")
    wait_for(lambda: "workload_adopted" in agent.output(), what="the restarted agent to adopt")
    assert platform.instance(instance_id, key)["state"] == "running"
    after = [c for c in podman.containers(instance_id) if c["State"] == "running"]
    assert [c["Id"] for c in after] == [c["Id"] for c in running]

    # Removal stops it and the engine forgets it.
    assert platform.call("DELETE", f"/v1/instances/{instance_id}", key).status in (200, 202)
    platform.wait_state(instance_id, "terminated", key)
    wait_for(lambda: podman.containers(instance_id) == [], what="the containers to be removed")


def test_a_volume_is_bind_mounted_into_the_container_and_outlives_it(platform, podman, tmp_path):
    start_container_agent(platform, podman, tmp_path)
    wait_for(lambda: platform.offers().get("a100-80g", {}).get("total") == 1,
             what="the container node's GPU")
    _, key = platform.new_tenant("boxed")
    volume = platform.call("POST", "/v1/volumes", key, body={"name": "data", "size_gb": 1})
    assert volume.status == 201, volume.body
    volume_id = volume.json()["id"]
    script = ('echo "volumes=$GPURENT_VOLUMES found=$(cat /data/note 2>/dev/null)"; '
              'echo "from run $GPURENT_RUN" > /data/note; exec sleep 1000')
    created = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "a100-80g", "image": IMAGE, "command": ["sh", "-c", script],
        "volumes": [{"volume_id": volume_id, "mount_path": "/data"}]})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running", key)
    wait_for(lambda: f"volumes={volume_id}=/data found=\n" in platform.cli(
        "logs", instance_id, key=key).stdout, what="the first run's output")
    data = tmp_path / "agent-c" / "volumes" / volume_id
    [container] = podman.containers(instance_id)
    inspected = json.loads(podman.podman("inspect", container["Id"]).stdout)[0]
    # Podman adds its options (":rw,rprivate,rbind") to the bind it reports.
    assert any(b.startswith(f"{data}:/data") for b in inspected["HostConfig"]["Binds"]), inspected


    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status == 202
    platform.wait_state(instance_id, "stopped", key)
    assert platform.call("POST", f"/v1/instances/{instance_id}/start", key).status == 202
    platform.wait_state(instance_id, "running", key)
    wait_for(lambda: "found=from run 1" in platform.cli("logs", instance_id, key=key).stdout,
             what="the second run to read the first run's file")

    assert platform.call("DELETE", f"/v1/instances/{instance_id}", key).status in (200, 202)
    platform.wait_state(instance_id, "terminated", key)
    assert (data / "note").read_text() == "from run 2\n"
    assert platform.call("DELETE", f"/v1/volumes/{volume_id}", key).status == 204
    wait_for(lambda: not data.exists(), what="the agent to delete the volume's data")


def test_bad_images_are_refused_and_image_work_on_a_process_node_fails_with_the_reason(platform):
    for bad in ["", "has space", "-rm", "x" * 513, 7]:
        response = platform.call("POST", "/v1/instances", body={
            "gpu_type": "h100-80g", "image": bad})
        problem(response, 400, "invalid_field")
    # The dev node has no container engine, so an image has nowhere to run: it is refused at
    # once, naming the capability it lacks, unless it may wait for a node with an engine.
    image_work = {"gpu_type": "h100-80g", "image": "busybox:latest", "command": ["true"]}
    refused = problem(platform.call("POST", "/v1/instances", body=image_work), 422, "never_fits")
    assert "gpurent.io/container-runtime=true" in refused["detail"], refused
    assert "--wait-for-capacity" in refused["detail"], refused
    waiting = platform.call("POST", "/v1/instances", body={**image_work,
                                                           "wait_for_capacity": True})
    assert waiting.status == 201, waiting.body
    assert waiting.json()["reason"].startswith("waiting for a node that can hold it to join")
    assert waiting.json()["wait_for_capacity"] is True
