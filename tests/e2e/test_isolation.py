"""A tenant's workload attacks the node and its neighbours, as an attacker with an ordinary tenant
key would (issue 32): through `exec` in its own instance it tries to read the node's credential,
list and read another instance's home and service token, see and signal another tenant's
processes, write outside its home, and use a leaked node credential. Every attempt fails, and the
victim's instance, logs and balance are intact.

Process runs are sandboxed where the agent is root and the host gives it namespaces (CI's machines
and production nodes); elsewhere the node runs one tenant's work at a time, tested at the end."""

import http.client
import json
import os

import pytest

from conftest import Platform, http as http_call, problem, wait_for

SANDBOXED = os.geteuid() == 0


def run_in(platform, key, instance_id, script):
    """Runs a shell script in the instance through the exec API: (exit code, stdout, stderr)."""
    response = platform.call("POST", f"/v1/instances/{instance_id}/exec", key,
                             body={"command": ["sh", "-c", script], "timeout_s": 30})
    assert response.status == 200, response.body
    frames = [json.loads(line) for line in response.body.decode().splitlines()]
    out = "".join(f["data"] for f in frames if f.get("stream") == "stdout")
    err = "".join(f["data"] for f in frames if f.get("stream") == "stderr")
    return frames[-1]["exit_code"], out, err


def host_pids_of(command_line):
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if f.read().replace(b"\0", b" ").strip() == command_line.encode():
                    pids.append(int(name))
        except OSError:
            pass
    return pids


def launch(platform, key, command, **extra):
    created = platform.call("POST", "/v1/instances", key,
                            body={"gpu_type": "h100-80g", "command": command, **extra})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running", key)
    return instance_id


@pytest.fixture
def guarded(tmp_path):
    """`gpurent dev` whose server accepts node credentials only from where the node registered."""
    config = tmp_path / "server.toml"
    config.write_text("[agents]\nbind_credentials_to_address = true\n")
    p = Platform(str(tmp_path), extra_args=["--config", str(config)]).start()
    yield p
    p.shutdown()


@pytest.mark.skipif(not SANDBOXED, reason="the agent sandboxes process runs only as root")
def test_a_tenants_workload_cannot_reach_the_node_or_another_tenants_work(guarded):
    platform = guarded
    victim_tenant, victim_key = platform.new_tenant("victim")
    _, thief_key = platform.new_tenant("thief")
    node = platform.call("GET", "/v1/nodes").json()["items"][0]
    assert node["isolation"] == "sandbox", node
    assert "Isolation:   sandbox (" in platform.cli("nodes", "show", node["id"]).stdout

    victim = launch(platform, victim_key,
                    "echo victim-log; echo private > secret.txt; exec sleep 612",
                    services=["web"])
    thief = launch(platform, thief_key, "sleep 600")
    agent_dir = os.path.join(platform.data_dir, "agent")
    instances_dir = os.path.join(platform.data_dir, "agent-instances")
    victim_home = os.path.join(instances_dir, victim)
    wait_for(lambda: os.path.exists(os.path.join(victim_home, "secret.txt")), what="the victim's file")
    victim_pids = wait_for(lambda: host_pids_of("sleep 612"), what="the victim's process")
    with open(os.path.join(agent_dir, "identity.json")) as f:
        credential = json.load(f)["credential"]
    service_files = os.listdir(os.path.join(agent_dir, "services"))
    assert any(name.startswith(victim) for name in service_files), service_files
    with open(os.path.join(agent_dir, "services", next(
            n for n in service_files if n.startswith(victim)))) as f:
        service_token = json.load(f)["token"]
    balance_before = platform.call("GET", "/v1/billing/balance", victim_key).json()["balance_micros"]

    # The node's credential and records, by relative and absolute paths.
    code, out, err = run_in(platform, thief_key, thief,
                            f"cat ../../identity.json; cat {agent_dir}/identity.json; "
                            f"ls {agent_dir}; ls {agent_dir}/services; "
                            f"cat {agent_dir}/services/*; cat {agent_dir}/workloads/*/launch.json; "
                            "echo end")
    assert out.endswith("end\n"), (out, err)
    for secret in (credential, service_token, "gnc_", victim):
        assert secret not in out, (secret, out)

    # Other instances' homes: not listed, not readable, not writable.
    code, out, err = run_in(platform, thief_key, thief,
                            f"ls ..; echo '|'; ls {instances_dir}; echo '|'; "
                            f"cat {victim_home}/secret.txt; cat ../{victim}/secret.txt; "
                            f"echo planted > {victim_home}/planted; "
                            f"echo planted > {agent_dir}/planted; echo planted > /etc/planted; "
                            f"echo mine > /tmp/thief-{thief}; echo end")
    assert out == f"{thief}\n|\n{thief}\n|\nend\n", (out, err)
    for path in (os.path.join(victim_home, "planted"), os.path.join(agent_dir, "planted"),
                 "/etc/planted", f"/tmp/thief-{thief}"):
        assert not os.path.exists(path), path

    # Other tenants' processes: invisible, and out of reach of signals and /proc.
    pid_list = " ".join(str(p) for p in victim_pids)
    code, out, err = run_in(platform, thief_key, thief,
                            "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '; echo; "
                            f"for p in {pid_list}; do kill -9 $p && echo killed; "
                            "cat /proc/$p/environ && echo read; done; id -u; echo end")
    lines = out.splitlines()
    assert "killed" not in out and "read" not in out, (out, err)
    assert all(int(p) < 100 for p in lines[0].split()), out  # its own namespace's pids only
    assert int(lines[-2]) >= 1000, out  # not root: its instance's own user
    assert all(os.path.exists(f"/proc/{p}") for p in victim_pids)

    # A leaked node credential is refused from anywhere but the node's own address.
    connection = http.client.HTTPConnection("127.0.0.1", platform.port, timeout=10,
                                            source_address=("127.0.0.2", 0))
    connection.request("GET", "/v1/agent/desired", headers={"Authorization": f"Bearer {credential}"})
    stolen = connection.getresponse()
    assert stolen.status == 403, stolen.read()
    assert json.loads(stolen.read())["code"] == "node_address_mismatch"
    connection.close()

    # The victim's instance, logs and balance are intact.
    assert platform.instance(victim, victim_key)["state"] == "running"
    logs = platform.call("GET", f"/v1/instances/{victim}/logs", victim_key)
    assert b"victim-log" in logs.body, logs.body
    balance_after = platform.call("GET", "/v1/billing/balance", victim_key).json()["balance_micros"]
    charges = platform.call("GET", "/v1/billing/usage", victim_key).json()
    assert balance_after <= balance_before
    assert victim_tenant and thief not in json.dumps(charges)


def test_volume_names_are_safe_path_names(platform):
    _, key = platform.new_tenant("alice")
    for name in ("..", ".", ".hidden", "-rf", "a/b"):
        problem(platform.call("POST", "/v1/volumes", key, body={"name": name, "size_gb": 1}),
                400, "invalid_field")
    assert platform.call("POST", "/v1/volumes", key,
                         body={"name": "datasets.v2", "size_gb": 1}).status == 201


@pytest.mark.skipif(SANDBOXED, reason="as root the agent sandboxes; tested above")
def test_without_a_sandbox_the_node_runs_one_tenants_work_at_a_time(platform):
    node = platform.call("GET", "/v1/nodes").json()["items"][0]
    assert node["isolation"] == "none" and "root" in node["isolation_note"], node
    assert "none: one tenant's processes at a time" in platform.cli("nodes", "show",
                                                                    node["id"]).stdout
    _, first_key = platform.new_tenant("first")
    _, second_key = platform.new_tenant("second")
    launch(platform, first_key, "sleep 600")
    created = platform.call("POST", "/v1/instances", second_key,
                            body={"gpu_type": "h100-80g", "command": "sleep 600"})
    assert created.status == 201, created.body
    failed = platform.wait_state(created.json()["id"], "failed", second_key)
    assert "one tenant's at a time" in json.dumps(failed), failed
