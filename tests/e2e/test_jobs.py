"""Jobs end to end: arrays with their index, retries, a gang across two agents with torchrun's
variables, cancel, spot preemption, and bad input that creates nothing."""

import json

import pytest

from conftest import problem, wait_for

FINAL = {"succeeded", "failed", "cancelled", "preempted"}
JOB_TIMEOUT_S = 60


def submit(platform, body, key=None, status=201):
    response = platform.call("POST", "/v1/jobs", key, body)
    assert response.status == status, response.body
    return response.json()


def get_job(platform, job_id, key=None):
    response = platform.call("GET", f"/v1/jobs/{job_id}", key)
    assert response.status == 200, response.body
    return response.json()


def wait_job(platform, job_id, states, key=None, timeout=JOB_TIMEOUT_S):
    states = {states} if isinstance(states, str) else set(states)
    return wait_for(lambda: (lambda j: j if j["state"] in states else None)(
        get_job(platform, job_id, key)), timeout, f"job {job_id} to be {states}")


def member_log(platform, job_id, task=0, rank=0, key=None):
    response = platform.call("GET", f"/v1/jobs/{job_id}/logs?task={task}&rank={rank}", key)
    assert response.status == 200, response.body
    return response.body.decode()


def wait_log(platform, job_id, text, task=0, rank=0, key=None):
    return wait_for(lambda: (lambda log: log if text in log else None)(
        member_log(platform, job_id, task, rank, key)), what=f"{text!r} in the log")


@pytest.fixture
def platform(platform):
    """The shared platform, whose jobs are cancelled afterwards: its shutdown removes only the
    instances GET /v1/instances lists, which leaves job members out."""
    yield platform
    listing = platform.call("GET", "/v1/jobs")
    if listing.status != 200:
        return
    for job in listing.json()["items"]:
        if job["state"] not in FINAL:
            platform.call("POST", f"/v1/jobs/{job['id']}/cancel")
    for job in listing.json()["items"]:
        wait_job(platform, job["id"], FINAL)
        for task in job.get("tasks", []):
            for instance_id in task["instances"]:
                platform.wait_state(instance_id, {"stopped", "failed", "preempted", "terminated"})


def test_array_job_gives_each_task_its_index_and_keeps_exit_codes(platform):
    job = submit(platform, {"name": "sweep", "gpu_type": "h100-80g", "gpu_count": 1, "array": 4,
                            "command": "echo task=$GPURENT_ARRAY_INDEX"})
    assert job["state"] in {"queued", "running"} and job["array"] == 4 and job["nodes"] == 1
    assert len(job["tasks"]) == 4
    done = wait_job(platform, job["id"], FINAL)
    assert done["state"] == "succeeded", done
    assert done["task_counts"]["succeeded"] == 4
    assert done["started_at"] and done["ended_at"]
    for task in done["tasks"]:
        assert task["state"] == "succeeded" and task["exit_code"] == 0 and task["attempts"] == 1
        assert f"task={task['index']}\n" in member_log(platform, job["id"], task["index"])

    # The members are instances of the job: listed for it, not among the tenant's instances.
    members = {i for task in done["tasks"] for i in task["instances"]}
    assert len(members) == 4
    plain = platform.call("GET", "/v1/instances").json()["items"]
    assert not members & {i["id"] for i in plain}
    of_job = platform.call("GET", f"/v1/instances?job={job['id']}").json()["items"]
    assert {i["id"] for i in of_job} == members
    assert all(i["job_id"] == job["id"] for i in of_job)

    # The same through the CLI.
    shown = platform.cli("job", "show", job["id"]).stdout
    assert "succeeded" in shown and "TASK" in shown
    assert platform.cli("job", "logs", job["id"], "--task", "2").stdout == "task=2\n"
    listed = json.loads(platform.cli("job", "ls", "-o", "json").stdout)
    assert [j["id"] for j in listed] == [job["id"]]


def test_failing_task_runs_again_then_fails_with_its_exit_code(platform):
    job = json.loads(platform.cli("job", "submit", "--gpu", "h100-80g", "--retries", "2", "-o",
                                  "json", "--", "sh", "-c", "echo attempt; exit 3").stdout)
    done = wait_job(platform, job["id"], FINAL)
    assert done["state"] == "failed", done
    task = done["tasks"][0]
    assert task["state"] == "failed" and task["attempts"] == 3 and task["exit_code"] == 3, task


def test_gang_job_spans_two_agents_with_torchrun_variables(platform, tmp_path):
    token = platform.call("POST", "/v1/join-tokens", body={"description": "rack 2"})
    assert token.status == 201
    platform.start_process(
        ["agent", "--server", platform.url, "--join-token", token.json()["token"],
         "--sim-gpus", "8xh100-80g", "--data-dir", str(tmp_path / "agent2"),
         "--name", "rack2-node1"], "agent2")
    wait_for(lambda: platform.offers()["h100-80g"]["total"] == 16, what="the second agent's GPUs")

    variables = ["RANK", "NODE_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT"]
    script = "; ".join(f"echo {name}=${name}" for name in variables)
    job = submit(platform, {"gpu_type": "h100-80g", "gpu_count": 8, "nodes": 2,
                            "command": script})
    done = wait_job(platform, job["id"], FINAL)
    assert done["state"] == "succeeded", done
    members = done["tasks"][0]["instances"]
    assert len(members) == 2
    nodes = {platform.instance(i)["node_id"] for i in members}
    assert len(nodes) == 2, "a gang's members run on different nodes"

    seen = []
    for rank in range(2):
        log = member_log(platform, job["id"], 0, rank)
        env = dict(line.split("=", 1) for line in log.splitlines() if "=" in line)
        seen.append(env)
        assert env["NODE_RANK"] == str(rank), log
        assert env["WORLD_SIZE"] == "16" and env["LOCAL_WORLD_SIZE"] == "8", log
        # The global rank of the node's first process (torchrun adds the local rank).
        assert env["RANK"] == str(rank * 8), log
    # Each agent advertises the local address facing the server: here the loopback.
    assert seen[0]["MASTER_ADDR"] == seen[1]["MASTER_ADDR"] == "127.0.0.1"
    assert seen[0]["MASTER_PORT"] == seen[1]["MASTER_PORT"] == "29500"


def test_cancel_stops_a_running_job(platform):
    job = submit(platform, {"gpu_type": "h100-80g", "array": 2,
                            "command": "echo started; sleep 600"})
    running = wait_job(platform, job["id"], "running")
    wait_log(platform, job["id"], "started")
    assert platform.cli("job", "cancel", job["id"]).stdout.startswith(job["id"])
    done = wait_job(platform, job["id"], FINAL)
    assert done["state"] == "cancelled"
    assert all(task["state"] == "cancelled" for task in done["tasks"])
    for task in running["tasks"]:
        for instance_id in task["instances"]:
            platform.wait_state(instance_id, {"stopped", "failed", "terminated"})
    # The GPUs are free again.
    wait_for(lambda: platform.offers()["h100-80g"]["free"] == 8, what="the GPUs to be free")


def test_on_demand_work_preempts_a_spot_job(platform):
    job = submit(platform, {"gpu_type": "h100-80g", "gpu_count": 8, "pricing": "spot",
                            "command": "sleep 600"})
    wait_job(platform, job["id"], "running")
    created = platform.call("POST", "/v1/instances", body={"gpu_type": "h100-80g",
                                                           "gpu_count": 8,
                                                           "command": "sleep 600"})
    assert created.status == 201, created.body
    done = wait_job(platform, job["id"], FINAL)
    assert done["state"] == "preempted", done
    assert done["tasks"][0]["state"] == "preempted"
    platform.wait_state(created.json()["id"], "running")


def test_tenants_see_only_their_own_jobs(platform):
    _, key_a = platform.new_tenant("jobs-a")
    _, key_b = platform.new_tenant("jobs-b")
    job = submit(platform, {"gpu_type": "h100-80g", "command": "true"}, key=key_a)
    wait_job(platform, job["id"], FINAL, key=key_a)
    problem(platform.call("GET", f"/v1/jobs/{job['id']}", key_b), 404, "job_not_found")
    problem(platform.call("GET", f"/v1/jobs/{job['id']}/logs", key_b), 404, "job_not_found")
    problem(platform.call("POST", f"/v1/jobs/{job['id']}/cancel", key_b), 404, "job_not_found")
    assert platform.call("GET", "/v1/jobs", key_b).json()["items"] == []
    assert [j["id"] for j in platform.call("GET", "/v1/jobs").json()["items"]] == [job["id"]]


def test_idempotency_key_returns_the_first_job(platform):
    body = {"gpu_type": "h100-80g", "command": "true"}
    first = platform.call("POST", "/v1/jobs", body=body, headers={"Idempotency-Key": "job-1"})
    again = platform.call("POST", "/v1/jobs", body=body, headers={"Idempotency-Key": "job-1"})
    assert first.status == again.status == 201
    assert first.json()["id"] == again.json()["id"]
    assert again.headers.get("Idempotent-Replayed") == "true"
    other = platform.call("POST", "/v1/jobs", body={**body, "array": 2},
                          headers={"Idempotency-Key": "job-1"})
    problem(other, 409, "idempotency_key_reused")
    assert len(platform.call("GET", "/v1/jobs").json()["items"]) == 1


@pytest.mark.parametrize("raw,code", [
    (b"{not json", "malformed_json"),
    (b'{"gpu_type": "h100-80g", "command": "true", "array": -1}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "array": 100001}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "nodes": 0}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "nodes": 257}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "retries": 101}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "retries": "2"}', "invalid_field"),
    (b'{"gpu_type": "h100-80g"}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "queue": false, "wait_for_capacity": true}',
     "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "surprise": 1}', "unknown_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "nodes": 2, "env": {"RANK": "0"}}',
     "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": "true", "env": {"MASTER_PORT": "1"}}',
     "invalid_field"),
])
def test_bad_jobs_are_400_and_create_nothing(platform, raw, code):
    problem(platform.call("POST", "/v1/jobs", raw=raw), 400, code)
    assert platform.call("GET", "/v1/jobs").json()["items"] == []


def test_bad_job_queries_and_unknown_jobs(platform):
    problem(platform.call("POST", "/v1/jobs", body={"gpu_type": "h100-80g", "command": "true",
                                                    "pricing": "reserved"}),
            422, "reservation_required")
    problem(platform.call("GET", "/v1/jobs/j-nope"), 404, "job_not_found")
    job = submit(platform, {"gpu_type": "h100-80g", "array": 2, "command": "true"})
    problem(platform.call("GET", f"/v1/jobs/{job['id']}/logs?task=2"), 400, "invalid_query")
    problem(platform.call("GET", f"/v1/jobs/{job['id']}/logs?rank=1"), 400, "invalid_query")
    problem(platform.call("GET", f"/v1/jobs/{job['id']}?tasks=maybe"), 400, "invalid_query")
    result = platform.cli("job", "submit", "--gpu", "h100-80g", "--nodes", "0", "--", "true",
                          check=False)
    assert result.returncode == 1 and "invalid_field" in result.stderr, result.stderr
    assert len(platform.call("GET", "/v1/jobs").json()["items"]) == 1
    problem(platform.call("GET", "/v1/jobs?state=sleeping"), 400, "invalid_query")
    problem(platform.call("GET", "/v1/jobs?limit=0"), 400, "invalid_query")
    problem(platform.call("GET", "/v1/jobs?cursor=j-nope"), 400, "invalid_query")


def test_job_listing_is_paginated_and_filtered_by_state(platform):
    ids = [submit(platform, {"gpu_type": "h100-80g", "command": "true"})["id"] for _ in range(5)]
    for job_id in ids:
        wait_job(platform, job_id, "succeeded")
    seen, cursor = [], None
    while True:
        page = platform.call("GET", "/v1/jobs?limit=2" + (f"&cursor={cursor}" if cursor else ""))
        assert page.status == 200, page.body
        assert len(page.json()["items"]) <= 2
        seen += [j["id"] for j in page.json()["items"]]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == ids  # in creation order, each once
    assert platform.call("GET", "/v1/jobs?state=queued").json()["items"] == []
    assert len(platform.call("GET", "/v1/jobs?state=succeeded").json()["items"]) == 5
    # The CLI follows the cursors.
    listed = json.loads(platform.cli("job", "ls", "-o", "json").stdout)
    assert [j["id"] for j in listed] == ids


def test_job_tasks_survive_a_hard_kill_of_the_server(platform):
    """Each task is stored as a row of its own (only changed tasks are written): after a SIGKILL
    the restarted server has every task as it was acknowledged."""
    import signal
    job = submit(platform, {"gpu_type": "h100-80g", "gpu_count": 1, "array": 3,
                            "command": "if [ $GPURENT_ARRAY_INDEX = 0 ]; then exit 0; fi; "
                                       "sleep 600"})
    wait_for(lambda: (lambda j: j if j["task_counts"].get("succeeded") == 1
                      and j["task_counts"].get("running") == 2 else None)(
        get_job(platform, job["id"])), JOB_TIMEOUT_S, "task 0 done and tasks 1, 2 running")
    before = get_job(platform, job["id"])
    platform.server.stop(sig=signal.SIGKILL)
    platform.start()
    after = get_job(platform, job["id"])
    assert after["state"] == "running"
    assert after["tasks"] == before["tasks"]
    assert after["tasks"][0]["state"] == "succeeded" and after["tasks"][0]["exit_code"] == 0
    assert [t["state"] for t in after["tasks"][1:]] == ["running", "running"]
    cancelled = platform.call("POST", f"/v1/jobs/{job['id']}/cancel")
    assert cancelled.status == 202, cancelled.body
    assert wait_job(platform, job["id"], FINAL)["task_counts"]["cancelled"] == 2


def test_a_running_arrays_members_survive_a_hard_kill_of_the_server(platform):
    """A member's stored row leaves out what its job determines (its spec), and its run's start is
    read back from the run's usage record: after a SIGKILL the restarted server has every member as
    it was, still on its first run, and the array goes on (cancel ends every task)."""
    import signal
    job = submit(platform, {"name": "survivor", "gpu_type": "h100-80g", "gpu_count": 1,
                            "array": 4, "env": {"EPOCHS": "3"},
                            "command": "echo index=$GPURENT_ARRAY_INDEX epochs=$EPOCHS; sleep 600"})
    wait_for(lambda: (lambda j: j if j["task_counts"].get("running") == 4 else None)(
        get_job(platform, job["id"])), JOB_TIMEOUT_S, "the 4 tasks running")
    before = get_job(platform, job["id"])
    members = [task["instances"][0] for task in before["tasks"]]
    views = {i: platform.instance(i) for i in members}
    for index, instance_id in enumerate(members):
        wait_log(platform, job["id"], f"index={index} epochs=3", task=index)
        assert views[instance_id]["name"] == f"survivor-{index}-0"
    platform.server.stop(sig=signal.SIGKILL)
    platform.start()
    after = get_job(platform, job["id"])
    assert after["tasks"] == before["tasks"]
    assert after["state"] == "running"
    for instance_id in members:
        view = platform.instance(instance_id)
        assert view == views[instance_id], instance_id
        assert view["state"] == "running" and view["run"] == 1
        assert view["env"] == {"EPOCHS": "3"}
    cancelled = platform.call("POST", f"/v1/jobs/{job['id']}/cancel")
    assert cancelled.status == 202, cancelled.body
    assert wait_job(platform, job["id"], FINAL)["task_counts"]["cancelled"] == 4
