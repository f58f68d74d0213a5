"""Bad input gets a clear problem+json 4xx, nothing is half-written, and the server keeps serving."""

import pytest

from conftest import problem


@pytest.mark.parametrize("raw,code", [
    (b"{not json", "malformed_json"),
    (b"[1, 2]", "malformed_json"),
    (b"", "malformed_json"),
    (b"[" * 5000 + b"]" * 5000, "malformed_json"),
    (b'{"gpu_type": "h100-80g", "gpu_count": -1}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "gpu_count": 9}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "gpu_count": "2"}', "invalid_field"),
    (b'{"gpu_type": 7}', "invalid_field"),
    (b'{"gpu_count": 1}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "command": []}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "env": {"CUDA_VISIBLE_DEVICES": "0"}}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "env": {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100"}}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "services": "jupyter"}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "services": ["Jupyter"]}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "services": ["a", "a"]}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "services": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}',
     "invalid_field"),
    (b'{"gpu_type": "h100-80g", "env": {"GPURENT_PORT_JUPYTER": "1"}}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "surprise": 1}', "unknown_field"),
])
def test_malformed_and_invalid_launches_are_400(platform, raw, code):
    problem(platform.call("POST", "/v1/instances", raw=raw), 400, code)
    assert platform.call("GET", "/v1/instances").json()["items"] == []


def test_semantic_errors_and_routing(platform):
    problem(platform.call("POST", "/v1/instances", body={"gpu_type": "h100-81g"}), 422, "unknown_gpu_type")
    problem(platform.call("GET", "/v1/nope"), 404, "route_not_found")
    problem(platform.call("PUT", "/v1/instances"), 405, "method_not_allowed")
    problem(platform.call("GET", "/v1/instances/i-doesnotexist"), 404, "instance_not_found")
    problem(platform.call("GET", "/v1/instances", key="gpr_wrong"), 401, "unauthenticated")
    problem(platform.call("GET", "/v1/instances?limit=0"), 400, "invalid_query")
    problem(platform.call("GET", "/v1/nodes?limit=0"), 400, "invalid_query")
    problem(platform.call("GET", "/v1/nodes?limit=501"), 400, "invalid_query")
    problem(platform.call("GET", "/v1/instances?state=dancing"), 400, "invalid_query")
    big = b'{"gpu_type": "h100-80g", "name": "' + b"x" * (2 << 20) + b'"}'
    problem(platform.call("POST", "/v1/instances", raw=big), 413, "payload_too_large")
    assert platform.call("GET", "/healthz").status == 200
    assert platform.call("GET", "/v1/instances").json()["items"] == []


def test_insufficient_balance_is_402_and_creates_nothing(platform):
    _, key = platform.new_tenant("broke", topup_micros=0)
    problem(platform.call("POST", "/v1/instances", key=key, body={"gpu_type": "h100-80g"}),
            402, "insufficient_balance")
    assert platform.call("GET", "/v1/instances", key=key).json()["items"] == []


def test_tenants_cannot_see_each_other_and_cannot_use_admin_routes(platform):
    _, alice = platform.new_tenant("alice")
    _, bob = platform.new_tenant("bob")
    created = platform.call("POST", "/v1/instances", key=alice,
                            body={"gpu_type": "h100-80g", "command": "sleep 600"})
    instance_id = created.json()["id"]
    for method, path in [("GET", f"/v1/instances/{instance_id}"),
                         ("POST", f"/v1/instances/{instance_id}/stop"),
                         ("POST", f"/v1/instances/{instance_id}/start"),
                         ("DELETE", f"/v1/instances/{instance_id}"),
                         ("GET", f"/v1/instances/{instance_id}/logs")]:
        problem(platform.call(method, path, key=bob), 404, "instance_not_found")
    assert platform.call("GET", "/v1/instances", key=bob).json()["items"] == []
    assert platform.instance(instance_id, alice)["state"] in ("starting", "running")
    problem(platform.call("POST", "/v1/tenants", key=bob, body={"name": "x"}), 403, "forbidden")
    problem(platform.call("GET", "/v1/nodes", key=bob), 403, "forbidden")
    problem(platform.call("POST", "/v1/join-tokens", key=bob, body={}), 403, "forbidden")
    tenant_id = platform.call("GET", "/v1/whoami", key=bob).json()["tenant_id"]
    problem(platform.call("POST", "/v1/billing/topups", key=bob,
                          body={"tenant_id": tenant_id, "amount_micros": 5}), 403, "forbidden")
    problem(platform.call("POST", "/v1/api-keys", key=bob, body={"role": "admin"}), 403, "forbidden")
    result = platform.cli("show", instance_id, key=bob, check=False)
    assert result.returncode == 1 and "instance_not_found" in result.stderr


def test_agent_routes_refuse_api_keys_and_bad_reports(platform):
    problem(platform.call("GET", "/v1/agent/desired"), 401, "unauthenticated")
    problem(platform.call("POST", "/v1/agent/register", body={"name": "x", "gpus": []},
                          key="gjt_nope"), 401, "invalid_join_token")
