"""`gpurent agent --sim-nodes N`: one process registers N simulated nodes, runs their workloads
in memory, and keeps their identities across restarts."""

import json
import signal

from conftest import wait_for

FLEET_NODES = 200
# Another GPU type than the dev server's own node, so that placement has to use the fleet.
FLEET_GPUS = "8xa100-80g"
# 200 registrations take about a second; this bounds a slow CI machine.
FLEET_TIMEOUT_S = 60


def start_fleet(platform, data_dir, token=None, name="fleet"):
    args = ["agent", "--server", platform.url, "--sim-nodes", str(FLEET_NODES),
            "--sim-gpus", FLEET_GPUS, "--data-dir", data_dir, "--name", name]
    if token:
        args += ["--join-token", token]
    return platform.start_process(args, f"{name}-{len(platform.extra)}")


def ready_fleet_nodes(platform):
    """The fleet's nodes once all of them (and the dev node) are listed ready, else None."""
    nodes = json.loads(platform.cli("nodes", "-o", "json").stdout)
    fleet = [n for n in nodes if n["name"].startswith("fleet-sim-")]
    if len(nodes) == FLEET_NODES + 1 and all(n["state"] == "ready" for n in nodes):
        return fleet
    return None


def test_a_fleet_of_simulated_nodes_runs_work_and_survives_a_restart(platform, tmp_path):
    token = platform.call("POST", "/v1/join-tokens", body={"description": "sim fleet"})
    assert token.status == 201, token.body
    data_dir = str(tmp_path / "fleet")
    fleet = start_fleet(platform, data_dir, token.json()["token"])
    nodes = wait_for(lambda: ready_fleet_nodes(platform), FLEET_TIMEOUT_S, "the fleet to be ready")
    assert sorted(n["name"] for n in nodes) == [f"fleet-sim-{i:04d}" for i in range(FLEET_NODES)]
    fleet_ids = {n["id"] for n in nodes}

    created = platform.call("POST", "/v1/instances", body={
        "gpu_type": "a100-80g", "gpu_count": 8, "command": "sleep 600"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    running = platform.wait_state(instance_id, "running")
    assert running["node_id"] in fleet_ids
    wait_for(lambda: "simulated" in platform.cli("logs", instance_id).stdout,
             what="the simulated workload's log line")

    platform.cli("stop", instance_id)
    stopped = platform.wait_state(instance_id, "stopped")
    assert stopped["exit_code"] == 143  # as if SIGTERM ended it

    # A restarted fleet reuses every identity: no join token needed, no node registered twice.
    assert fleet.stop(signal.SIGTERM) == 0
    assert "registered=200 reused=0" in fleet.output()
    restarted = start_fleet(platform, data_dir)
    wait_for(lambda: "registered=0 reused=200" in restarted.output(), FLEET_TIMEOUT_S,
             "the restarted fleet to be ready")
    nodes = wait_for(lambda: ready_fleet_nodes(platform), FLEET_TIMEOUT_S,
                     "the restarted fleet's nodes")
    assert {n["id"] for n in nodes} == fleet_ids

    # And it serves its nodes: the stopped instance starts again on one of them.
    platform.cli("start", instance_id)
    again = platform.wait_state(instance_id, "running")
    assert again["node_id"] in fleet_ids and again["run"] == 2
