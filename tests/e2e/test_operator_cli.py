"""An operator runs the platform through the CLI: tenants, keys, top-ups and join tokens; the
tenant then rents through the CLI with its own key and sees only its own money."""

import json


def test_operator_onboards_a_tenant_through_the_cli(platform):
    tenant = json.loads(platform.cli("tenants", "create", "acme", "-o", "json").stdout)
    assert tenant["name"] == "acme"
    listed = json.loads(platform.cli("tenants", "ls", "-o", "json").stdout)
    assert "acme" in {t["name"] for t in listed}

    key = json.loads(platform.cli("api-keys", "create", "--tenant", tenant["id"], "--role", "tenant",
                                  "-o", "json").stdout)
    assert key["key"].startswith("gpr_") and key["tenant_id"] == tenant["id"]

    topup = json.loads(platform.cli("topup", tenant["id"], "12.5", "-o", "json").stdout)
    assert topup["amount_micros"] == 12_500_000 and topup["balance_micros"] == 12_500_000
    # A tenant's name does where its id does.
    again = platform.cli("topup", "acme", "0.000001", "-o", "json")
    assert json.loads(again.stdout)["balance_micros"] == 12_500_001
    assert json.loads(platform.cli("quota", "show", "acme", "-o", "json").stdout)["tenant_id"] == \
        tenant["id"]

    as_tenant = json.loads(platform.cli("balance", "-o", "json", key=key["key"]).stdout)
    assert as_tenant["balance_micros"] == 12_500_001 and as_tenant["tenant_id"] == tenant["id"]
    whoami = json.loads(platform.cli("whoami", "-o", "json", key=key["key"]).stdout)
    assert whoami["role"] == "tenant-admin"

    # A tenant key cannot do operator work; the CLI says why and exits 1.
    refused = platform.cli("tenants", "create", "evil", key=key["key"], check=False)
    assert refused.returncode == 1 and "forbidden" in refused.stderr
    refused = platform.cli("topup", tenant["id"], "5", key=key["key"], check=False)
    assert refused.returncode == 1

    launched = json.loads(platform.cli("launch", "--gpu", "h100-80g", "--wait", "-o", "json", "--",
                                       "sleep", "600", key=key["key"]).stdout)
    assert launched["state"] == "running" and launched["tenant_id"] == tenant["id"]
    assert [i["id"] for i in json.loads(platform.cli("ps", "-o", "json", key=key["key"]).stdout)] \
        == [launched["id"]]
    # The admin's own listing is separate from the tenant's money.
    assert platform.cli("rm", launched["id"], key=key["key"]).returncode == 0
    platform.wait_state(launched["id"], "terminated", key=key["key"])

    token = json.loads(platform.cli("join-tokens", "create", "--ttl", "1h", "-o", "json").stdout)
    assert token["token"].startswith("gjt_")


def test_cli_usage_errors_exit_2_and_bad_gpu_types_exit_1(platform):
    assert platform.cli("launch", check=False).returncode == 2
    result = platform.cli("launch", "--gpu", "h100-81g", "--", "true", check=False)
    assert result.returncode == 1 and "unknown_gpu_type" in result.stderr
    assert "did you mean h100-80g?" in result.stderr and "gpurent offers" in result.stderr
    # Under -o json the failure is a problem document on stdout.
    as_json = platform.cli("launch", "--gpu", "h100", "-o", "json", "--", "true", check=False)
    problem = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and problem["code"] == "unknown_gpu_type", as_json.stdout
    assert problem["status"] == 422 and "h100-80g" in problem["detail"]
    # A group without its verb lists its verbs.
    listed = platform.cli("quota", check=False)
    assert listed.returncode == 2 and "`gpurent quota` needs one of these" in listed.stderr
    assert platform.cli("topup", "t-x", "1.2.3", check=False).returncode == 2
