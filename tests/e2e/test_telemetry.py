"""GPU telemetry end to end (issue 5, "Telemetry from the agent"): `gpurent dev` with simulated
GPUs; a workload's GPU gets busy and hot in the node view and `gpurent nodes show`, idle GPUs stay
cool; faults injected through the agent's faults file (docs/agent.md) are reported."""

import base64
import json
import os

from conftest import problem, wait_for

THERMAL_SLOWDOWN = 0x40  # NVML's HW thermal slowdown throttle reason


def node_gpus(platform, node_id):
    response = platform.call("GET", f"/v1/nodes/{node_id}")
    assert response.status == 200, response.body
    return {g["uuid"]: g for g in response.json()["gpus"]}


def telemetry_of(platform, node_id, uuid):
    return node_gpus(platform, node_id)[uuid].get("telemetry") or {}


def test_a_workload_raises_its_gpus_utilisation_and_power(platform):
    created = platform.call("POST", "/v1/instances",
                            body={"gpu_type": "h100-80g", "gpu_count": 1, "command": "sleep 600"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    running = platform.wait_state(instance_id, "running")
    node_id, busy = running["node_id"], running["gpus"][0]
    idle = next(u for u in node_gpus(platform, node_id) if u != busy)

    def loaded():
        t = telemetry_of(platform, node_id, busy)
        return t if t.get("gpu_util_pct", 0) >= 90 and t.get("power_w", 0) > 500 else None

    hot = wait_for(loaded, what="the busy GPU's utilisation and power to rise")
    assert hot["fb_used_mib"] > 0 and hot["nvlink_total"] == 18 and hot["ecc_dbe_total"] == 0
    cool = telemetry_of(platform, node_id, idle)
    assert cool["gpu_util_pct"] == 0 and cool["power_w"] < 100 and cool["fb_used_mib"] == 0
    assert cool["last_xid"] is None

    shown = platform.cli("nodes", "show", node_id).stdout
    row = next(line for line in shown.splitlines() if busy in line)
    assert "%" in row and " W" in row and instance_id in row

    # Tenants do not see nodes at all.
    _, tenant_key = platform.new_tenant("telemetry-tenant")
    assert platform.call("GET", f"/v1/nodes/{node_id}", key=tenant_key).status in (403, 404)


def test_injected_faults_are_reported(platform):
    node_id = platform.call("GET", "/v1/nodes").json()["items"][0]["id"]
    gpus = sorted(node_gpus(platform, node_id).values(), key=lambda g: g["index"])
    wait_for(lambda: telemetry_of(platform, node_id, gpus[0]["uuid"]).get("time"),
             what="the first samples")
    faults = {"faults": [{"gpu": gpus[1]["uuid"], "kind": "xid", "code": 79},
                         {"gpu": 2, "kind": "overheat"},
                         {"gpu": 3, "kind": "ecc_dbe"}]}
    path = os.path.join(platform.data_dir, "agent", "sim_faults.json")
    with open(path + ".tmp", "w") as f:
        json.dump(faults, f)
    os.replace(path + ".tmp", path)

    fell_off = wait_for(lambda: (lambda t: t if (t.get("last_xid") or {}).get("code") == 79
                                 else None)(telemetry_of(platform, node_id, gpus[1]["uuid"])),
                        what="XID 79 in the node view")
    assert fell_off["xid_count"] == 1
    ecc = wait_for(lambda: (lambda t: t if t.get("ecc_dbe_total") == 1 else None)(
        telemetry_of(platform, node_id, gpus[3]["uuid"])), what="the double-bit ECC error")
    assert ecc["last_xid"]["code"] == 48
    overheated = wait_for(lambda: (lambda t: t if t.get("temperature_c", 0) >= 87 and
                                   t.get("throttle_reasons", 0) & THERMAL_SLOWDOWN else None)(
        telemetry_of(platform, node_id, gpus[2]["uuid"])), what="the overheating GPU to throttle")
    assert overheated["sm_clock_mhz"] < 345
    # The GPU that fell off the bus sends nothing more: its last sample stays where it was.
    before = telemetry_of(platform, node_id, gpus[1]["uuid"])["time"]
    wait_for(lambda: telemetry_of(platform, node_id, gpus[0]["uuid"])["time"] > before,
             what="newer samples of a healthy GPU")
    assert telemetry_of(platform, node_id, gpus[1]["uuid"])["time"] == before

    shown = platform.cli("nodes", "show", node_id).stdout
    assert "79" in next(line for line in shown.splitlines() if gpus[1]["uuid"] in line)


def test_oversized_or_malformed_telemetry_is_refused(platform):
    # The agent writes its identity once the server has answered its registration.
    path = wait_for(lambda: (lambda p: p if os.path.exists(p) else None)(
        os.path.join(platform.data_dir, "agent", "identity.json")), what="the agent's identity")
    with open(path) as f:
        credential = json.load(f)["credential"]
    def uvarint(n):
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7f | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))

    def frame(samples, tail=b""):
        """A frame (model/telemetry.h) of one GPU with `samples` times and no fields."""
        body = bytes([2]) + uvarint(0) + uvarint(1) + uvarint(5) + b"GPU-x" + uvarint(samples)
        body += uvarint(0) + uvarint(0) + uvarint(2) * samples + uvarint(0)
        return base64.b64encode(body + tail).decode()

    big = frame(2001)
    truncated = frame(2)[:-4]
    columns = {"gpus": [{"uuid": "GPU-x", "t": [1]}], "xids": []}  # agents before the frame
    for telemetry, code in ((big, "telemetry_too_large"), (truncated, "invalid_message"),
                            (frame(2, b"x"), "invalid_message"), (columns, "invalid_message")):
        # Nothing of a refused report is applied: the agent's workloads are not declared lost.
        response = platform.call("POST", "/v1/agent/report", key=credential,
                                 body={"applied_generation": 1 << 40, "workloads": [],
                                       "telemetry": telemetry})
        problem(response, 400, code)
    # Reports that are not JSON, not one object, or not a report (read without a JSON tree:
    # model/node_report_json.h) get the same problems as every other body.
    for raw, code in ((b'{"applied_generation": 1, "workloads": [', "malformed_json"),
                      (b"[]", "malformed_json"),
                      (b'{"applied_generation": 1, "workloads": []} {}', "malformed_json"),
                      (b'{"workloads": [], "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                       "malformed_json"),
                      (b'{"workloads": []}', "invalid_message"),
                      (b'{"applied_generation": "1", "workloads": []}', "invalid_message"),
                      (b'{"applied_generation": 1, "workloads": [{"instance_id": "i-x", "run": 1,'
                       b' "phase": "dancing"}]}', "invalid_message")):
        problem(platform.call("POST", "/v1/agent/report", key=credential, raw=raw), 400, code)
    assert platform.call("GET", "/healthz").status == 200


def test_a_simulated_fleet_reports_telemetry_and_takes_faults_per_node(platform, tmp_path):
    token = platform.call("POST", "/v1/join-tokens", body={"description": "fleet"}).json()["token"]
    data_dir = str(tmp_path / "fleet")
    os.makedirs(data_dir)
    with open(os.path.join(data_dir, "sim_faults.json"), "w") as f:
        json.dump({"faults": [{"node": 1, "gpu": 0, "kind": "xid", "code": 79}]}, f)
    platform.start_process(["agent", "--server", platform.url, "--join-token", token,
                            "--sim-nodes", "3", "--sim-gpus", "2xa100-80g", "--data-dir", data_dir,
                            "--name", "tfleet"], "tfleet")

    def fleet_gpus():
        nodes = platform.call("GET", "/v1/nodes").json()["items"]
        fleet = {n["name"]: n for n in nodes if n["name"].startswith("tfleet-sim-")}
        gpus = {name: node_gpus(platform, n["id"]) for name, n in fleet.items()}
        sampled = len(gpus) == 3 and all(
            (g.get("telemetry") or {}).get("time") or (g.get("telemetry") or {}).get("last_xid")
            for node in gpus.values() for g in node.values())
        return gpus if sampled else None

    gpus = wait_for(fleet_gpus, what="telemetry from every fleet node's GPUs")
    by_index = {name: sorted(node.values(), key=lambda g: g["index"]) for name, node in gpus.items()}
    assert by_index["tfleet-sim-0001"][0]["telemetry"]["last_xid"]["code"] == 79
    assert by_index["tfleet-sim-0000"][0]["telemetry"]["last_xid"] is None
    assert by_index["tfleet-sim-0002"][1]["telemetry"]["nvlink_total"] == 12
    assert by_index["tfleet-sim-0002"][1]["telemetry"]["gpu_util_pct"] == 0
