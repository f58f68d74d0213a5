"""Self-healing: work on a node whose agent dies moves to a healthy node, keeping its id, and the
dead node's copy is stopped (fenced) when its agent comes back."""

import subprocess
import time

from conftest import wait_for

MOVE_DEADLINE_S = 15  # the bound, from the kill to running elsewhere


def copies(marker):
    """How many processes run the workload's command (its marker is in the command line)."""
    found = subprocess.run(["pgrep", "-f", "-c", marker], capture_output=True, text=True)
    return int(found.stdout.strip() or 0)


def join_agent(platform, tmp_path, name):
    token = platform.call("POST", "/v1/join-tokens", body={"description": name}).json()["token"]
    args = ["agent", "--server", platform.url, "--join-token", token, "--sim-gpus", "2xa100-80g",
            "--data-dir", str(tmp_path / name), "--name", name]
    return args, platform.start_process(args, name)


def test_a_killed_agents_instance_runs_on_another_node_within_15s_and_is_fenced(platform,
                                                                                tmp_path):
    agents = {name: join_agent(platform, tmp_path, name) for name in ("rack-a", "rack-b")}
    wait_for(lambda: platform.offers().get("a100-80g", {}).get("total") == 4,
             what="both agents' GPUs")
    nodes = {n["name"]: n["id"] for n in platform.call("GET", "/v1/nodes").json()["items"]}
    tenant_id, key = platform.new_tenant("acme")

    marker = f"healing-{time.time_ns()}"
    created = platform.call("POST", "/v1/instances", key=key, body={
        "gpu_type": "a100-80g", "gpu_count": 2, "command": f"sleep 600 # {marker}"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    assert created.json()["restart_policy"] == "on_node_failure"
    running = platform.wait_state(instance_id, "running", key=key)
    home = running["node_id"]
    victim_name = next(name for name, node_id in nodes.items() if node_id == home)
    victim_args, victim = agents[victim_name]
    survivor = next(proc for name, (_, proc) in agents.items() if name != victim_name)
    assert copies(marker) == 1

    victim.stop(sig=9)  # SIGKILL: the agent dies; its workload's process is left running
    killed_at = time.monotonic()

    def moved():
        instance = platform.instance(instance_id, key)
        return instance if instance["state"] == "running" and instance["node_id"] != home else None
    moved_instance = wait_for(moved, timeout=MOVE_DEADLINE_S + 5, what="the instance elsewhere")
    took = time.monotonic() - killed_at
    assert took < MOVE_DEADLINE_S, f"running elsewhere after {took:.1f}s"
    assert moved_instance["id"] == instance_id and moved_instance["run"] == 2

    node = platform.call("GET", f"/v1/nodes/{home}").json()
    assert node["status"] == "down"
    events = platform.call("GET", f"/v1/events?object={instance_id}", key=key).json()["items"]
    assert [e["kind"] for e in events] == ["instance.moved"]
    # The node was measured when it joined, then went down (its alerts are events too).
    kinds = [e["kind"] for e in platform.call("GET", f"/v1/events?object={home}").json()["items"]]
    assert [k for k in kinds if k.startswith("node.")] == ["node.benchmarked", "node.down"]
    # The tenant does not see platform events.
    assert platform.call("GET", f"/v1/events?object={home}", key=key).json()["items"] == []

    # Billing: run 1 ended at its node's last report, run 2 bills from its own start.
    usage = platform.call("GET", "/v1/billing/usage", key=key).json()["items"]
    runs = sorted((u for u in usage if u["instance_id"] == instance_id), key=lambda u: u["run"])
    assert [u["run"] for u in runs] == [1, 2]
    assert runs[0]["ended_at"] is not None

    # Both copies run while the dead node is unreachable; when its agent comes back it learns
    # that the work moved and stops its copy.
    assert copies(marker) == 2
    platform.start_process(victim_args, "revived")
    wait_for(lambda: copies(marker) == 1, timeout=30, what="the stale copy to be stopped")
    assert platform.instance(instance_id, key)["state"] == "running"
    wait_for(lambda: platform.call("GET", f"/v1/nodes/{home}").json()["status"] == "ready",
             what="the revived node to be ready")
    assert survivor.proc.poll() is None
