"""Who may do what, and the record of it: the tenant roles, key scopes and expiry, the audit log,
and the rate limits, against the real server (server/access.h, model/audit.h,
server/rate_limiter.h)."""
import datetime
import json
import time

import pytest

from conftest import Platform, problem, wait_for


def make_key(platform, key, **body):
    created = platform.call("POST", "/v1/api-keys", key, body=body)
    assert created.status == 201, created.body
    return created.json()


def test_roles_scopes_and_expiry_bound_what_a_key_does_and_the_audit_log_says_so(platform):
    tenant_id, admin_key = platform.new_tenant("acme")
    member = make_key(platform, admin_key, role="tenant-member", name="ci")["key"]
    reader = make_key(platform, admin_key, role="read-only")
    assert reader["role"] == "read-only" and reader["scopes"] == ["*"]
    reader_key = reader["key"]

    # A member launches; a read-only key reads it and changes nothing.
    launched = platform.call("POST", "/v1/instances", member,
                             body={"gpu_type": "h100-80g", "command": "sleep 600"})
    assert launched.status == 201, launched.body
    instance_id = launched.json()["id"]
    assert platform.call("GET", f"/v1/instances/{instance_id}", reader_key).status == 200
    problem(platform.call("POST", f"/v1/instances/{instance_id}/stop", reader_key), 403,
            "forbidden")
    # Keys and the audit log are the tenant admin's.
    problem(platform.call("POST", "/v1/api-keys", member, body={"role": "read-only"}), 403)
    problem(platform.call("GET", "/v1/api-keys", member), 403)
    problem(platform.call("GET", "/v1/audit", member), 403)
    # No key grants more than its maker: a member asks for an admin's key in vain.
    problem(platform.call("POST", "/v1/api-keys", admin_key, body={"role": "operator"}), 403)

    # A scoped key reaches its areas only, and hands on no more than it has.
    scoped = make_key(platform, admin_key, scopes=["instances:read"])
    assert scoped["scopes"] == ["instances:read"]
    assert platform.call("GET", "/v1/instances", scoped["key"]).status == 200
    problem(platform.call("GET", "/v1/billing/balance", scoped["key"]), 403, "forbidden")
    problem(platform.call("DELETE", f"/v1/instances/{instance_id}", scoped["key"]), 403)
    whoami = platform.call("GET", "/v1/whoami", scoped["key"]).json()
    assert whoami["scopes"] == ["instances:read"] and whoami["role"] == "tenant-admin"
    problem(platform.call("POST", "/v1/api-keys", admin_key, body={"scopes": ["gpus:read"]}),
            400, "invalid_scope")

    # An expiring key stops working when it expires.
    expires = (datetime.datetime.now(datetime.timezone.utc) +
               datetime.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    brief = make_key(platform, admin_key, role="read-only", expires_at=expires)
    assert brief["expires_at"] == expires
    assert platform.call("GET", "/v1/instances", brief["key"]).status == 200
    wait_for(lambda: platform.call("GET", "/v1/instances", brief["key"]).status == 401,
             timeout=10, what="the key to expire")

    # The CLI makes such keys too.
    made = json.loads(platform.cli("-o", "json", "api-keys", "create", "--role", "read-only",
                                   "--scope", "billing:read", "--expires-in", "3600",
                                   key=admin_key).stdout)
    assert made["role"] == "read-only" and made["scopes"] == ["billing:read"]
    assert "expires_at" in made
    # ... lists them without their secrets, and revokes one: it stops working at once.
    listed = json.loads(platform.cli("-o", "json", "api-keys", "ls", key=admin_key).stdout)
    assert made["id"] in [k["id"] for k in listed]
    assert all("key" not in k and "hash" not in k for k in listed)
    table = platform.cli("api-keys", "ls", key=admin_key).stdout
    assert made["id"] in table and "PREFIX" in table
    assert platform.call("GET", "/v1/billing/balance", made["key"]).status == 200
    assert "revoked" in platform.cli("api-keys", "revoke", made["id"], key=admin_key).stdout
    assert platform.call("GET", "/v1/billing/balance", made["key"]).status == 401
    gone = platform.cli("api-keys", "revoke", "k-nope", key=admin_key, check=False)
    assert gone.returncode != 0 and "not_found" in gone.stderr

    # The tenant admin reads its tenant's audit log: the launch, the refusals, who and whence.
    audit = platform.call("GET", "/v1/audit", admin_key)
    assert audit.status == 200, audit.body
    entries = audit.json()["items"]
    assert all(e["tenant_id"] == tenant_id for e in entries)
    launch_entry = next(e for e in entries if e["action"] == "POST /v1/instances")
    assert launch_entry["status"] == 201 and launch_entry["outcome"] == "ok"
    assert launch_entry["role"] == "tenant-member"
    assert launch_entry["address"] == "127.0.0.1"
    refused = next(e for e in entries if e["action"] == "POST /v1/instances/{id}/stop")
    assert refused["status"] == 403 and refused["outcome"] == "forbidden"
    assert refused["target"] == f"/v1/instances/{instance_id}/stop"
    assert refused["role"] == "read-only"
    # Reads are not audited; the seq is dense and ordered.
    assert not any(e["action"].startswith("GET ") for e in entries)
    seqs = [e["seq"] for e in entries]
    assert seqs == sorted(seqs)
    # Operators see every tenant's, the admin's own calls (making this tenant) included.
    everything = platform.call("GET", "/v1/audit?limit=500").json()["items"]
    assert any(e["action"] == "POST /v1/tenants" for e in everything)
    assert len(everything) > len(entries)
    by_key = platform.call("GET", f"/v1/audit?key={launch_entry['key_id']}").json()["items"]
    assert {e["key_id"] for e in by_key} == {launch_entry["key_id"]}
    # A tenant naming another tenant's log finds nothing.
    problem(platform.call("GET", "/v1/audit?tenant=admin", admin_key), 404, "tenant_not_found")

    # A failed sign-in is audited too, with no tenant.
    problem(platform.call("POST", "/v1/session", None, body={"key": "gpr_wrong"}), 401)
    failed = platform.call("GET", "/v1/audit?limit=500").json()["items"][-1]
    assert failed["action"] == "POST /v1/session" and failed["status"] == 401
    assert failed["tenant_id"] is None and failed["key_id"] is None

    # And the CLI prints it.
    printed = platform.cli("audit", "--tail", "5", key=admin_key).stdout
    assert "POST /v1/instances" in printed or "POST /v1/api-keys" in printed

    # The audit log survives a restart.
    platform.restart()
    again = platform.call("GET", "/v1/audit", admin_key).json()["items"]
    assert [e["seq"] for e in again][:len(seqs)] == seqs


def test_exec_and_copies_the_proxy_forwards_are_audited_and_rate_limited(platform):
    tenant_id, admin_key = platform.new_tenant("exec-audit")
    reader = make_key(platform, admin_key, role="read-only")["key"]
    launched = platform.call("POST", "/v1/instances", admin_key,
                             body={"gpu_type": "h100-80g", "command": "sleep 600"})
    assert launched.status == 201, launched.body
    instance_id = launched.json()["id"]
    platform.wait_state(instance_id, "running", admin_key)
    ran = platform.call("POST", f"/v1/instances/{instance_id}/exec", admin_key,
                        body={"command": ["true"], "timeout_s": 10})
    assert ran.status == 200, ran.body
    problem(platform.call("POST", f"/v1/instances/{instance_id}/exec", reader,
                          body={"command": ["true"]}), 403, "forbidden")
    problem(platform.call("POST", f"/v1/instances/{instance_id}/files?path=x", admin_key), 400,
            "invalid_query")

    entries = platform.call("GET", "/v1/audit", admin_key).json()["items"]
    execs = [e for e in entries if e["action"] == "POST /v1/instances/{id}/exec"]
    assert [(e["status"], e["outcome"], e["role"]) for e in execs] == [
        (0, "forwarded", "tenant-admin"), (403, "forbidden", "read-only")]
    assert execs[0]["target"] == f"/v1/instances/{instance_id}/exec"
    assert execs[0]["address"] == "127.0.0.1" and execs[0]["tenant_id"] == tenant_id
    copy = next(e for e in entries if e["action"] == "POST /v1/instances/{id}/files")
    assert (copy["status"], copy["outcome"]) == (400, "invalid_query")


@pytest.fixture
def limited(tmp_path):
    """`gpurent dev` with small rate limits that apply on loopback too."""
    config = tmp_path / "server.toml"
    config.write_text("[rate_limits]\n"
                      "limit_loopback = true\n"
                      "per_key = { per_second = 2, burst = 30 }\n"
                      "creations_per_key = { per_second = 0.5, burst = 3 }\n"
                      "per_address = { per_second = 1000, burst = 1000 }\n"
                      "auth_failures_per_address = { per_second = 0.2, burst = 3 }\n")
    p = Platform(str(tmp_path), extra_args=["--config", str(config)]).start()
    yield p
    p.shutdown()


def test_rate_limits_answer_429_with_retry_after_and_ratelimit_headers(limited):
    _, key = limited.new_tenant("busy")
    ok = limited.call("GET", "/v1/instances", key)
    assert ok.status == 200
    assert ok.headers["RateLimit-Policy"] == '"key";q=30;w=15'
    assert ok.headers["RateLimit"].startswith('"key";r=29;')

    # Creations run out first: three volumes, then 429 until a token is back. (Making the tenant
    # took the admin key's three.)
    for name in ("a", "b", "c"):
        assert limited.call("POST", "/v1/volumes", key, body={"name": name, "size_gb": 1}).status \
            == 201
    refused = limited.call("POST", "/v1/volumes", key, body={"name": "d", "size_gb": 1})
    problem(refused, 429, "rate_limited")
    assert refused.headers["Retry-After"] == "2"
    assert refused.headers["RateLimit-Policy"] == '"key-creations";q=3;w=6'
    assert refused.headers["RateLimit"].startswith('"key-creations";r=0;')
    assert limited.call("GET", "/v1/volumes", key).status == 200  # reads go on

    # Every request counts against the key's own bucket.
    statuses = [limited.call("GET", "/v1/whoami", key).status for _ in range(40)]
    assert 429 in statuses and statuses.count(200) < 40

    # Failed authentications block the address, whatever key it sends next.
    for _ in range(3):
        problem(limited.call("GET", "/v1/whoami", "gpr_guess"), 401)
    blocked = limited.call("GET", "/v1/offers")
    problem(blocked, 429, "rate_limited")
    assert blocked.headers["RateLimit-Policy"].startswith('"address-auth-failures";q=3;')
    assert int(blocked.headers["Retry-After"]) >= 1
    # The local agent reports through it all the same (agents are not limited by address): its
    # GPUs stay offered once the address may ask again.
    time.sleep(int(blocked.headers["Retry-After"]))
    offers = limited.call("GET", "/v1/offers")
    assert offers.status == 200
    assert any(o["gpu_type"] == "h100-80g" and o["total"] > 0 for o in offers.json()["items"])
