"""Persistent volumes on the real binary: a tenant's volume mounted into a process instance keeps
its data across stop/start and the instance's deletion, another instance sees it, deletion is
refused while it is mounted, the agent deletes the data once the volume is deleted, storage shows
on the bill, and other tenants and bad requests are turned away."""

import json
import os
import re

from conftest import problem, wait_for

STORAGE_PRICE = 500_000  # micros per GB-month in the default price book
MONTH_S = 30 * 24 * 3600

# Prints what the volume held when the run started, then leaves its own mark there.
SCRIPT = ('echo "volumes=$GPURENT_VOLUMES"; '
          'echo "run $GPURENT_RUN found: $(cat {path}/note 2>/dev/null || echo nothing)"; '
          'echo "written by $GPURENT_INSTANCE_ID run $GPURENT_RUN" > {path}/note; sleep 600')


def logs(platform, instance_id, key):
    return platform.cli("logs", instance_id, key=key).stdout


def wait_log(platform, instance_id, key, text):
    return wait_for(lambda: (lambda out: out if text in out else None)(
        logs(platform, instance_id, key)), what=f"{text!r} in the log of {instance_id}")


def launch(platform, key, volume_id, path):
    launched = platform.cli("launch", "--gpu", "h100-80g", "--volume", f"{volume_id}:{path}",
                            "-o", "json", "--", "/bin/sh", "-c",
                            SCRIPT.format(path=path.lstrip("/")), key=key)
    instance = json.loads(launched.stdout)
    assert instance["volumes"] == [{"volume_id": volume_id, "mount_path": path}]
    return instance["id"]


def test_volume_data_survives_stop_start_and_deletion_of_its_instance(platform):
    _, key = platform.new_tenant("alice")
    created = json.loads(platform.cli("volumes", "create", "data", "--size-gb", "10", "-o", "json",
                                      key=key).stdout)
    volume_id = created["id"]
    assert created["size_gb"] == 10 and created["node_id"] is None
    assert created["state"] == "available"

    first = launch(platform, key, volume_id, "/data")
    platform.wait_state(first, "running", key)
    out = wait_log(platform, first, key, "run 1 found: nothing")
    # The process runtime puts the volume at its mount path inside the instance directory (bound
    # there in a sandbox, linked without one) and says where; its data lives on the node.
    data_dir = re.search(rf"volumes={volume_id}=(\S+)", out).group(1)
    assert data_dir.endswith(f"/{first}/data")
    volume_path = os.path.join(platform.data_dir, "agent", "volumes", volume_id)
    wait_for(lambda: os.path.exists(os.path.join(volume_path, "note")), what="the note")
    placed = platform.call("GET", f"/v1/volumes/{volume_id}", key).json()
    assert placed["node_id"] == platform.instance(first, key)["node_id"]

    platform.cli("stop", first, key=key)
    platform.wait_state(first, "stopped", key)
    platform.cli("start", first, key=key)
    platform.wait_state(first, "running", key)
    wait_log(platform, first, key, f"run 2 found: written by {first} run 1")

    # Mounted by an instance that exists: deletion is refused, naming it.
    refused = platform.call("DELETE", f"/v1/volumes/{volume_id}", key)
    assert first in problem(refused, 409, "volume_in_use")["detail"]
    result = platform.cli("volumes", "delete", volume_id, key=key, check=False)
    assert result.returncode != 0 and "volume_in_use" in result.stderr + result.stdout

    platform.cli("rm", first, key=key)
    platform.wait_state(first, "terminated", key)
    assert platform.call("GET", f"/v1/volumes/{volume_id}", key).status == 200
    assert open(os.path.join(volume_path, "note")).read() == f"written by {first} run 2\n"

    # A new instance, mounting it elsewhere, finds what the first one left.
    second = launch(platform, key, volume_id, "/mnt/shared")
    platform.wait_state(second, "running", key)
    wait_log(platform, second, key, f"run 1 found: written by {first} run 2")
    listed = json.loads(platform.cli("volumes", "ls", "-o", "json", key=key).stdout)
    assert [v["id"] for v in listed] == [volume_id]
    platform.cli("rm", second, key=key)
    platform.wait_state(second, "terminated", key)

    assert platform.cli("volumes", "delete", volume_id, key=key).returncode == 0
    problem(platform.call("GET", f"/v1/volumes/{volume_id}", key), 404, "volume_not_found")
    assert json.loads(platform.cli("volumes", "ls", "-o", "json", key=key).stdout) == []
    # The node's agent deletes the data once the volume leaves its desired state.
    wait_for(lambda: not os.path.exists(volume_path), what="the agent to delete the volume's data")

    # Storage is a line of its own on the bill: size x price for every second of its life.
    usage = platform.call("GET", "/v1/billing/usage", key).json()
    line = next(v for v in usage["volumes"] if v["volume_id"] == volume_id)
    assert line["deleted_at"] is not None and line["size_gb"] == 10
    assert line["amount_micros"] == line["seconds"] * 10 * STORAGE_PRICE // MONTH_S
    assert usage["total_micros"] == line["amount_micros"] + sum(
        i["amount_micros"] for i in usage["items"])


def test_volumes_are_private_durable_and_checked(platform):
    alice, alice_key = platform.new_tenant("alice")
    _, bob_key = platform.new_tenant("bob")
    body = {"name": "weights", "size_gb": 50}
    created = platform.call("POST", "/v1/volumes", alice_key, body,
                            headers={"Idempotency-Key": "vol-1"})
    assert created.status == 201, created.body
    volume = created.json()
    assert created.headers["Location"] == f"/v1/volumes/{volume['id']}"
    assert volume["tenant_id"] == alice and volume["price_per_gb_month_micros"] == STORAGE_PRICE
    replayed = platform.call("POST", "/v1/volumes", alice_key, body,
                             headers={"Idempotency-Key": "vol-1"})
    assert replayed.status == 201 and replayed.json()["id"] == volume["id"]
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    problem(platform.call("POST", "/v1/volumes", alice_key, {"name": "other", "size_gb": 1},
                          headers={"Idempotency-Key": "vol-1"}), 409, "idempotency_key_reused")

    # Another tenant neither sees, deletes nor mounts it.
    problem(platform.call("GET", f"/v1/volumes/{volume['id']}", bob_key), 404, "volume_not_found")
    problem(platform.call("DELETE", f"/v1/volumes/{volume['id']}", bob_key), 404,
            "volume_not_found")
    assert platform.call("GET", "/v1/volumes", bob_key).json()["items"] == []
    problem(platform.call("POST", "/v1/instances", bob_key, {
        "gpu_type": "h100-80g", "volumes": [{"volume_id": volume["id"], "mount_path": "/data"}]}),
        404, "volume_not_found")

    # Bad bodies are 400 problems that say what is wrong.
    for bad, code in [({}, "invalid_field"),
                      ({"name": "x"}, "invalid_field"),
                      ({"name": "x", "size_gb": 0}, "invalid_field"),
                      ({"name": "x", "size_gb": "1"}, "invalid_field"),
                      ({"name": "x", "size_gb": 70000}, "invalid_field"),
                      ({"name": "no spaces", "size_gb": 1}, "invalid_field"),
                      ({"name": "x", "size_gb": 1, "colour": "red"}, "unknown_field")]:
        problem(platform.call("POST", "/v1/volumes", alice_key, bad), 400, code)
    problem(platform.call("POST", "/v1/volumes", alice_key, raw=b"{not json"), 400,
            "malformed_json")
    # Only operators choose a volume's node.
    problem(platform.call("POST", "/v1/volumes", alice_key,
                          {"name": "x", "size_gb": 1, "node_id": "n-1"}), 403, "forbidden")
    for mounts in ["/data",
                   [{"volume_id": volume["id"]}],
                   [{"volume_id": volume["id"], "mount_path": "/data", "ro": True}],
                   [{"volume_id": volume["id"], "mount_path": "data"}],
                   [{"volume_id": volume["id"], "mount_path": "/proc/x"}],
                   [{"volume_id": volume["id"], "mount_path": "/a/../b"}],
                   [{"volume_id": volume["id"], "mount_path": "/a"},
                    {"volume_id": volume["id"], "mount_path": "/b"}]]:
        response = platform.call("POST", "/v1/instances", alice_key,
                                 {"gpu_type": "h100-80g", "volumes": mounts})
        problem(response, 400)
    assert platform.call("GET", "/v1/instances", alice_key).json()["items"] == []

    # Durable: the volume is still there after the server restarts.
    platform.restart()
    again = platform.call("GET", f"/v1/volumes/{volume['id']}", alice_key)
    assert again.status == 200 and again.json()["name"] == "weights"
    deleted = platform.call("DELETE", f"/v1/volumes/{volume['id']}", alice_key)
    assert deleted.status == 204 and deleted.body == b""
