"""GPU quarantine end to end (issue 5, "Health and self-healing"): `gpurent dev` with simulated
GPUs; XID 79 injected through the agent's faults file on the GPU an instance runs on quarantines
that GPU: the instance runs again, keeping its id, on another GPU within 15 s, its old copy is
stopped, the node is degraded, and an operator's release makes the GPU usable again."""

import json
import os
import subprocess
import time

from conftest import problem, wait_for

MOVE_DEADLINE_S = 15  # from writing the fault to running again on another GPU


def copies(marker):
    """How many processes run the workload's command (its marker is in the command line)."""
    found = subprocess.run(["pgrep", "-f", "-c", marker], capture_output=True, text=True)
    return int(found.stdout.strip() or 0)


def write_faults(platform, faults):
    path = os.path.join(platform.data_dir, "agent", "sim_faults.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"faults": faults}, f)
    os.replace(path + ".tmp", path)


def test_a_fatal_xid_moves_the_instance_to_another_gpu_and_release_restores_it(platform):
    tenant_id, key = platform.new_tenant("quarantine-tenant")
    marker = f"quarantine-{time.time_ns()}"
    created = platform.call("POST", "/v1/instances", key=key, body={
        "gpu_type": "h100-80g", "gpu_count": 1, "command": f"sleep 600 # {marker}"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    running = platform.wait_state(instance_id, "running", key=key)
    node_id, bad_gpu = running["node_id"], running["gpus"][0]
    node = platform.call("GET", f"/v1/nodes/{node_id}").json()
    bad_index = next(g["index"] for g in node["gpus"] if g["uuid"] == bad_gpu)
    wait_for(lambda: copies(marker) == 1, what="the workload's process")

    write_faults(platform, [{"gpu": bad_gpu, "kind": "xid", "code": 79}])
    injected_at = time.monotonic()

    def moved():
        instance = platform.instance(instance_id, key)
        return instance if instance["state"] == "running" and instance["run"] == 2 else None
    again = wait_for(moved, timeout=MOVE_DEADLINE_S + 5, what="the instance on another GPU")
    took = time.monotonic() - injected_at
    assert took < MOVE_DEADLINE_S, f"running again after {took:.1f}s"
    assert again["id"] == instance_id and again["gpus"] and bad_gpu not in again["gpus"]
    # The agent stopped the copy on the failed GPU: one copy runs.
    wait_for(lambda: copies(marker) == 1, what="the old copy to be stopped")

    node = platform.call("GET", f"/v1/nodes/{node_id}").json()
    assert node["status"] == "degraded"
    assert [q["uuid"] for q in node["quarantined_gpus"]] == [bad_gpu]
    assert node["quarantined_gpus"][0]["cause"] == "xid"
    assert node["quarantined_gpus"][0]["xid"] == 79
    assert next(g for g in node["gpus"] if g["uuid"] == bad_gpu)["quarantined"] is True
    assert node["free_gpus"] == 6
    events = platform.call("GET", "/v1/events?kind=gpu.quarantined").json()["items"]
    assert [e["object_id"] for e in events] == [node_id]
    moves = platform.call("GET", f"/v1/events?object={instance_id}", key=key).json()["items"]
    assert [e["kind"] for e in moves] == ["instance.moved"]
    # The first run was billed up to the fault, the second from its start: never both at once.
    usage = platform.call("GET", "/v1/billing/usage", key=key).json()["items"]
    runs = sorted((u for u in usage if u["instance_id"] == instance_id), key=lambda u: u["run"])
    assert [u["run"] for u in runs] == [1, 2]
    assert runs[0]["ended_at"] is not None and runs[0]["ended_at"] <= runs[1]["started_at"]

    shown = platform.cli("nodes", "show", node_id).stdout
    assert "degraded" in shown and "QUARANTINED GPU" in shown
    assert bad_gpu in shown.split("QUARANTINED GPU", 1)[1]

    # Nothing new lands on it: 7 GPUs do not fit the six healthy free ones, so they wait.
    wide = platform.call("POST", "/v1/instances", key=key, body={
        "gpu_type": "h100-80g", "gpu_count": 7, "command": "sleep 600"})
    assert wide.status == 201, wide.body
    wide_id = wide.json()["id"]
    time.sleep(1)
    assert platform.instance(wide_id, key)["state"] == "pending"

    # Releasing: operators only, the right node and a quarantined GPU.
    path = f"/v1/nodes/{node_id}/gpus/{bad_index}/release"
    assert platform.call("POST", path, key=key).status in (403, 404)
    problem(platform.call("POST", f"/v1/nodes/n-nope/gpus/{bad_index}/release"), 404,
            "node_not_found")
    problem(platform.call("POST", f"/v1/nodes/{node_id}/gpus/99/release"), 404, "gpu_not_found")
    problem(platform.call("POST", f"/v1/nodes/{node_id}/gpus/x/release"), 404, "gpu_not_found")
    healthy_index = next(g["index"] for g in node["gpus"] if g["uuid"] != bad_gpu)
    problem(platform.call("POST", f"/v1/nodes/{node_id}/gpus/{healthy_index}/release"), 409,
            "gpu_not_quarantined")

    write_faults(platform, [])  # the card was reset: it answers again
    released = platform.cli("nodes", "release-gpu", node_id, str(bad_index)).stdout
    assert "QUARANTINED GPU" not in released
    node = platform.call("GET", f"/v1/nodes/{node_id}").json()
    assert node["status"] == "ready" and node["quarantined_gpus"] == []
    # Usable again: the waiting 7-GPU instance gets it.
    wide_running = platform.wait_state(wide_id, "running", key=key)
    assert bad_gpu in wide_running["gpus"]
    assert [e["kind"] for e in platform.call("GET", "/v1/events?kind=gpu.released").json()[
        "items"]] == ["gpu.released"]
