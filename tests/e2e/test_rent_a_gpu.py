"""The foundation's user story, end to end: offers, launch, a real process on the right GPUs,
logs, stop/start/rm, and an exact per-second charge in the ledger."""

import json
import time

from conftest import http, problem, wait_for

H100_PRICE = 18_000_000  # micros per GPU-hour in the default price book


def test_launch_runs_a_real_process_on_exactly_its_gpus(platform):
    offers = json.loads(platform.cli("offers", "-o", "json").stdout)
    h100 = next(o for o in offers if o["gpu_type"] == "h100-80g")
    assert h100["free"] == 8 and h100["price_per_gpu_hour_micros"] == H100_PRICE

    script = ("import os,time; print('gpus=' + os.environ['CUDA_VISIBLE_DEVICES'], flush=True); "
              "print('nv=' + os.environ['NVIDIA_VISIBLE_DEVICES'], flush=True); time.sleep(600)")
    launched = platform.cli("launch", "--gpu", "h100-80g", "--count", "2", "-o", "json", "--",
                            "python3", "-c", script)
    instance_id = json.loads(launched.stdout)["id"]
    running = platform.wait_state(instance_id, "running")
    assert len(running["gpus"]) == 2
    node = platform.call("GET", f"/v1/nodes/{running['node_id']}").json()
    node_gpus = {g["uuid"]: g for g in node["gpus"]}
    assert all(node_gpus[u]["instance_id"] == instance_id for u in running["gpus"])

    expected = ",".join(running["gpus"])
    logs = wait_for(lambda: (lambda text: text if "nv=" in text else None)(
        platform.cli("logs", instance_id).stdout), what="the workload's output")
    assert f"gpus={expected}" in logs
    assert f"nv={expected}" in logs

    offers = json.loads(platform.cli("offers", "-o", "json").stdout)
    assert next(o for o in offers if o["gpu_type"] == "h100-80g")["free"] == 6

    listed = json.loads(platform.cli("ps", "-o", "json").stdout)
    assert [i["id"] for i in listed] == [instance_id]
    shown = json.loads(platform.cli("show", instance_id, "-o", "json").stdout)
    assert shown["state"] == "running" and shown["gpus"] == running["gpus"]
    table = platform.cli("ps").stdout
    assert instance_id in table and "running" in table


def test_charge_is_running_seconds_times_price_exactly(platform):
    before = platform.call("GET", "/v1/billing/balance").json()["balance_micros"]
    created = platform.call("POST", "/v1/instances",
                            body={"gpu_type": "h100-80g", "gpu_count": 2, "command": "sleep 600"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running")
    time.sleep(2.5)
    platform.cli("stop", instance_id)
    stopped = platform.wait_state(instance_id, "stopped")
    assert stopped["exit_code"] is not None

    usage = json.loads(platform.cli("usage", "-o", "json").stdout)
    items = usage["items"] if isinstance(usage, dict) else usage
    run = next(u for u in items if u["instance_id"] == instance_id)
    assert run["seconds"] >= 2
    # Whole seconds x GPUs x the per-second price (18 CNY/h = 5000 micros/s): exact, no rounding.
    assert run["amount_micros"] == run["seconds"] * 2 * H100_PRICE // 3600
    after = platform.call("GET", "/v1/billing/balance").json()["balance_micros"]
    assert before - after == run["amount_micros"]
    balance = json.loads(platform.cli("balance", "-o", "json").stdout)
    assert balance["balance_micros"] == after

    transfers = platform.call("GET", "/v1/billing/transfers").json()["items"]
    usage_transfers = [t for t in transfers if t["kind"] == "usage" and t["reference"] == instance_id]
    assert sum(t["amount_micros"] for t in usage_transfers) == run["amount_micros"]
    assert all(t["from_account"].endswith(":cash") and t["to_account"] == "platform:revenue"
               for t in usage_transfers)


def test_stop_start_rm_and_logs_follow(platform):
    created = platform.call("POST", "/v1/instances", body={
        "gpu_type": "h100-80g", "gpu_count": 1,
        "command": ["/bin/sh", "-c", "echo run-$GPURENT_RUN; sleep 600"]})
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running")
    platform.cli("stop", instance_id)
    platform.wait_state(instance_id, "stopped")
    platform.cli("start", instance_id)
    restarted = platform.wait_state(instance_id, "running")
    assert restarted["run"] == 2
    wait_for(lambda: "run-2" in platform.cli("logs", instance_id).stdout, what="run 2's output")
    logs = platform.cli("logs", instance_id).stdout
    assert "run-1" in logs and "run-2" in logs

    follower = platform.start_process(["logs", instance_id, "-f"], "follow", platform.cli_env())
    wait_for(lambda: "run-2" in follower.output(), what="logs -f to print the output")
    platform.cli("rm", instance_id)
    platform.wait_state(instance_id, "terminated")
    # The stream ends by itself once the instance has ended.
    wait_for(lambda: follower.proc.poll() is not None, what="logs -f to end")
    assert follower.proc.returncode == 0


def test_a_killed_process_is_failed_with_its_exit_code(platform):
    created = platform.call("POST", "/v1/instances", body={
        "gpu_type": "h100-80g", "command": "echo about to fail; exit 3"})
    instance_id = created.json()["id"]
    failed = platform.wait_state(instance_id, "failed")
    assert failed["exit_code"] == 3
    assert "about to fail" in platform.cli("logs", instance_id).stdout

    created = platform.call("POST", "/v1/instances", body={
        "gpu_type": "h100-80g", "command": "kill -9 $$"})
    killed = platform.wait_state(created.json()["id"], "failed")
    assert killed["exit_code"] == 137


def test_idempotency_key_never_creates_a_second_instance(platform):
    body = {"gpu_type": "h100-80g", "gpu_count": 1, "command": "sleep 600"}
    first = platform.call("POST", "/v1/instances", body=body, headers={"Idempotency-Key": "abc"})
    again = platform.call("POST", "/v1/instances", body=body, headers={"Idempotency-Key": "abc"})
    assert first.status == 201 and again.status == 201
    assert first.json()["id"] == again.json()["id"]
    other = platform.call("POST", "/v1/instances", body={**body, "gpu_count": 2},
                          headers={"Idempotency-Key": "abc"})
    assert other.status == 409 and other.json()["code"] == "idempotency_key_reused"
    listing = platform.call("GET", "/v1/instances").json()["items"]
    assert len(listing) == 1


def test_stop_then_start_at_once_and_wait_for_each_step(platform):
    _, key = platform.new_tenant("hasty")
    created = platform.call("POST", "/v1/instances", key,
                            body={"gpu_type": "h100-80g",
                                  "command": ["sh", "-c", "trap 'sleep 1; exit 0' TERM; "
                                              "while true; do sleep 0.1; done"]})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    started = platform.cli("start", instance_id, "--wait", key=key)  # already starting: waits
    assert started.stdout.split() == [instance_id, "running"], started.stdout
    # Started again while it is still stopping: it starts once it has stopped.
    assert "stopping" in platform.cli("stop", instance_id, key=key).stdout
    asked = platform.call("POST", f"/v1/instances/{instance_id}/start", key)
    assert asked.status == 202 and asked.json()["start_requested"], asked.body
    again = platform.cli("start", instance_id, "--wait", key=key)
    assert again.stdout.split() == [instance_id, "running"], (again.stdout, again.stderr)
    assert platform.instance(instance_id, key)["run"] == 2
    stopped = platform.cli("stop", instance_id, "--wait", key=key)
    assert stopped.stdout.split() == [instance_id, "stopped"], stopped.stdout
    removed = platform.cli("rm", instance_id, "--wait", key=key)
    assert removed.stdout.split() == [instance_id, "terminated"], removed.stdout


def test_a_start_waits_for_the_node_that_keeps_its_files_until_let_go(platform):
    _, key = platform.new_tenant("homebody")
    # Its home is kept across runs on its node: the second run finds what the first wrote.
    created = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "h100-80g",
        "command": ["sh", "-c", "cat note 2>/dev/null; echo kept-$GPURENT_RUN > note; sleep 600"]})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    node_id = platform.wait_state(instance_id, "running", key)["node_id"]
    platform.cli("stop", instance_id, "--wait", key=key)

    # Its node full, a start waits for it (the only node here, but the reason says why, and how
    # to let it go).
    full = platform.call("POST", "/v1/instances", key,
                         body={"gpu_type": "h100-80g", "gpu_count": 8, "command": "sleep 600"})
    assert full.status == 201, full.body
    platform.wait_state(full.json()["id"], "running", key)
    started = json.loads(platform.cli("start", instance_id, "-o", "json", key=key).stdout)
    assert started["state"] == "pending" and started["start_on_node"] == node_id, started
    waiting = wait_for(lambda: (lambda i: i if "keeps its files" in i["reason"] else None)(
        platform.instance(instance_id, key)), what="the reason it waits")
    assert f"gpurent start {instance_id} --anywhere" in waiting["reason"]

    # A body that is not {"anywhere": bool} is refused, and changes nothing.
    for raw, code in [(b'{"anywhere": "yes"}', "invalid_field"),
                      (b'{"elsewhere": true}', "unknown_field"), (b"[true", None)]:
        problem(http(platform.url, "POST", f"/v1/instances/{instance_id}/start", key, raw=raw),
                400, code)
    assert platform.instance(instance_id, key)["start_on_node"] == node_id

    # Let go: any node will do (here the same one, once the big instance is gone).
    freed = json.loads(platform.cli("start", instance_id, "--anywhere", "-o", "json",
                                    key=key).stdout)
    assert freed["state"] == "pending" and freed["start_on_node"] is None, freed
    platform.cli("rm", full.json()["id"], key=key)
    platform.wait_state(instance_id, "running", key)
    wait_for(lambda: "kept-1" in platform.cli("logs", instance_id, key=key).stdout,
             what="the second run to read the first run's note")
