"""Restarts lose nothing acknowledged; a second agent process joins with a join token."""

import http.client
import json
import time

from conftest import problem, wait_for

H100_PER_SECOND = 5_000


def test_restart_mid_run_loses_nothing_and_bills_without_gap_or_double_charge(platform):
    tenant_id, key = platform.new_tenant("acme", topup_micros=500_000_000)
    # The seconds that ran, as they are billed without a minimum duration (test_prices.py has it).
    assert platform.call("PUT", "/v1/prices", body={"minimum_billed_seconds": 0}).status == 200
    created = platform.call("POST", "/v1/instances", key=key, body={
        "gpu_type": "h100-80g", "gpu_count": 1, "command": "echo started; sleep 600"})
    assert created.status == 201
    instance_id = created.json()["id"]
    running = platform.wait_state(instance_id, "running", key=key)

    time.sleep(1.5)
    platform.restart()  # SIGTERM, then a new process on the same data directory
    after_restart = platform.instance(instance_id, key)
    assert after_restart["state"] == "running"  # the workload survived the restart
    assert after_restart["started_at"] == running["started_at"]
    assert after_restart["gpus"] == running["gpus"]
    time.sleep(1.5)
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key=key).status == 202
    stopped = platform.wait_state(instance_id, "stopped", key=key)
    assert stopped["run"] == 1  # the same run throughout: not restarted, not duplicated

    usage = platform.call("GET", "/v1/billing/usage", key=key).json()
    assert len(usage["items"]) == 1
    run = usage["items"][0]
    # No gap: the whole wall-clock run (across the restart) is billed, to the second.
    started = time.mktime(time.strptime(run["started_at"][:19], "%Y-%m-%dT%H:%M:%S"))
    ended = time.mktime(time.strptime(run["ended_at"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert abs(run["seconds"] - (ended - started)) <= 1
    assert run["amount_micros"] == run["seconds"] * H100_PER_SECOND
    # No double charge: the balance moved by exactly the run's charge, via unique transfers.
    balance = platform.call("GET", "/v1/billing/balance", key=key).json()["balance_micros"]
    assert balance == 500_000_000 - run["amount_micros"]
    transfers = platform.call("GET", "/v1/billing/transfers", key=key).json()["items"]
    ids = [t["id"] for t in transfers]
    assert len(ids) == len(set(ids))
    assert "started" in platform.cli("logs", instance_id, key=key).stdout


def test_acknowledged_objects_survive_a_hard_kill(platform):
    import signal
    tenant_id, key = platform.new_tenant("durable")
    # No A100 in the fleet: the instance waits in the queue (for one to join), so no run races
    # the kill (and the balance below is exactly what was topped up).
    created = platform.call("POST", "/v1/instances", key=key,
                            body={"gpu_type": "a100-80g", "command": "sleep 600",
                                  "wait_for_capacity": True})
    assert created.status == 201
    assert created.json()["state"] == "pending"
    platform.server.stop(sig=signal.SIGKILL)
    platform.start()
    assert platform.instance(created.json()["id"], key)["tenant_id"] == tenant_id
    assert platform.call("GET", "/v1/billing/balance", key=key).json()["balance_micros"] == 100_000_000


def test_a_start_cut_by_a_hard_kill_runs_after_the_restart_and_costs_nothing_extra(platform):
    """SIGKILL while the in-process agent starts the workload (at some moment of it): after the
    restart the same run runs, and nothing was charged for it (no minimum for a run the platform
    cut short, and a start that never happened is not an exit)."""
    import signal
    for delay in (0.0, 0.05, 0.3):
        _, key = platform.new_tenant(f"cut{int(delay * 1000)}")
        created = platform.call("POST", "/v1/instances", key=key,
                                body={"gpu_type": "h100-80g", "command": "sleep 600"})
        assert created.status == 201
        time.sleep(delay)
        platform.server.stop(sig=signal.SIGKILL)
        platform.start()
        running = platform.wait_state(created.json()["id"], "running", key=key, timeout=30)
        assert running["run"] == 1, running
        # A metering tick may have charged the seconds it has run, never a minimum's 60.
        balance = platform.call("GET", "/v1/billing/balance", key=key).json()["balance_micros"]
        assert 100_000_000 - balance < 60 * H100_PER_SECOND, (delay, running, balance)


def test_second_agent_joins_with_a_join_token_and_its_gpus_are_used(platform, tmp_path):
    token = platform.call("POST", "/v1/join-tokens", body={"description": "rack 2"})
    assert token.status == 201
    agent = platform.start_process(
        ["agent", "--server", platform.url, "--join-token", token.json()["token"],
         "--sim-gpus", "2xa100-80g", "--data-dir", str(tmp_path / "agent2"), "--name", "rack2-node1"],
        "agent2")
    offers = wait_for(lambda: (lambda o: o if "a100-80g" in o else None)(platform.offers()),
                      what="the second agent's GPUs in offers")
    assert offers["a100-80g"]["total"] == 2 and offers["a100-80g"]["free"] == 2

    nodes = platform.call("GET", "/v1/nodes").json()["items"]
    assert len(nodes) == 2
    # Paged in id order: one at a time, the second page is the last.
    first = platform.call("GET", "/v1/nodes?limit=1").json()
    assert [n["id"] for n in first["items"]] == [min(n["id"] for n in nodes)]
    second = platform.call("GET", f"/v1/nodes?limit=1&cursor={first['next_cursor']}").json()
    assert [n["id"] for n in second["items"]] == [max(n["id"] for n in nodes)]
    assert second["next_cursor"] is None
    remote = next(n for n in nodes if n["name"] == "rack2-node1")
    created = platform.call("POST", "/v1/instances", body={
        "gpu_type": "a100-80g", "gpu_count": 2, "command": "echo on rack 2; sleep 600"})
    instance_id = created.json()["id"]
    running = platform.wait_state(instance_id, "running")
    assert running["node_id"] == remote["id"]
    wait_for(lambda: "on rack 2" in platform.cli("logs", instance_id).stdout,
             what="the remote workload's output")
    listed = json.loads(platform.cli("nodes", "-o", "json").stdout)
    assert {n["id"] for n in listed} == {n["id"] for n in nodes}
    assert agent.proc.poll() is None


def test_one_watch_streams_each_new_desired_state_of_its_node(platform):
    """GET /v1/agent/desired?watch=true: one request, one NDJSON line per new generation."""
    token = platform.call("POST", "/v1/join-tokens", body={"description": "watcher"}).json()["token"]
    registration = {"name": "watcher-1", "cpu_count": 16, "memory_mb": 65536, "simulated": True,
                    "gpus": [{"uuid": "GPU-watch-0", "index": 0, "type": "a100-80g",
                              "name": "a100-80g", "memory_mb": 81920}]}
    registered = platform.call("POST", "/v1/agent/register", key=token, body=registration)
    assert registered.status == 201, registered.body
    node_id, credential = registered.json()["node_id"], registered.json()["credential"]
    problem(platform.call("GET", "/v1/agent/desired?after=0&watch=maybe", key=credential),
            400, "invalid_query")

    connection = http.client.HTTPConnection("127.0.0.1", platform.port, timeout=10)
    connection.request("GET", "/v1/agent/desired?after=0&watch=true",
                       headers={"Authorization": f"Bearer {credential}"})
    stream = connection.getresponse()
    assert stream.status == 200
    assert stream.getheader("Content-Type") == "application/x-ndjson"
    first = json.loads(stream.readline())  # at once: the node knows no generation yet
    assert first["node_id"] == node_id and first["workloads"] == []

    # The only A100 in the fleet: the instance lands there, and the same stream says so.
    created = platform.call("POST", "/v1/instances", body={
        "gpu_type": "a100-80g", "gpu_count": 1, "command": "sleep 600"})
    assert created.status == 201, created.body
    second = json.loads(stream.readline())
    assert second["generation"] > first["generation"]
    assert [w["instance_id"] for w in second["workloads"]] == [created.json()["id"]]
    connection.close()
