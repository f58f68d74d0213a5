"""Prices end to end: an operator sets prices effective now, a tenant's run is charged exactly at
them, an estimate prices a launch, the spot market keeps a history, the book survives a restart,
and bad price input is refused with problem+json."""

import json
import time

from conftest import problem, wait_for

GPU_PRICE = 36_000_000  # per GPU-hour: 10,000 micros a GPU-second
CPU_PRICE = 36_000      # per core-hour: 10 micros a core-second


def test_a_price_set_now_is_what_a_run_is_charged(platform):
    tenant_id, key = platform.new_tenant("pricing", topup_micros=1_000_000_000)
    set_ = platform.call("PUT", "/v1/prices", body={
        "gpu_per_hour_micros": {"h100-80g": GPU_PRICE}, "cpu_per_core_hour_micros": CPU_PRICE,
        "minimum_billed_seconds": 0})
    assert set_.status == 200, set_.body
    version = set_.json()
    assert version["version"] == 2 and version["gpu_per_hour_micros"]["h100-80g"] == GPU_PRICE
    assert platform.call("GET", "/v1/prices", key).json()["current"]["version"] == 2

    # One core: the dev node has the test machine's cores.
    launch = {"gpu_type": "h100-80g", "gpu_count": 2, "cpu": 1, "command": "sleep 600"}
    estimate = platform.call("POST", "/v1/estimate", key, body=launch)
    assert estimate.status == 200, estimate.body
    per_hour = estimate.json()["per_hour_micros"]
    assert per_hour["gpu"] == 2 * GPU_PRICE and per_hour["cpu"] == CPU_PRICE
    assert per_hour["total"] == 2 * GPU_PRICE + CPU_PRICE
    assert estimate.json()["spot"] is None
    # The CLI takes the launch flags.
    cli = json.loads(platform.cli("estimate", "--gpu", "h100-80g", "--count", "2", "--cpu", "1",
                                  "-o", "json", key=key).stdout)
    assert cli["per_hour_micros"] == per_hour

    created = platform.call("POST", "/v1/instances", key, body=launch)
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running", key)
    time.sleep(2.5)
    platform.cli("stop", instance_id, key=key)
    platform.wait_state(instance_id, "stopped", key)
    usage = platform.call("GET", "/v1/billing/usage", key).json()
    run = next(u for u in usage["items"] if u["instance_id"] == instance_id)
    assert run["seconds"] >= 2 and run["kind"] == "run"
    assert run["amount_micros"] == run["seconds"] * (2 * 10_000 + 10)
    transfers = platform.call("GET", "/v1/billing/transfers", key).json()["items"]
    assert sum(t["amount_micros"] for t in transfers
               if t["kind"] == "usage" and t["reference"] == instance_id) == run["amount_micros"]

    # The book is stored: after a restart the same version is in force and history is whole.
    platform.restart()
    assert platform.call("GET", "/v1/prices").json()["current"]["version"] == 2
    history = json.loads(platform.cli("prices", "history", "-o", "json").stdout)
    assert [v["version"] for v in history] == [1, 2]
    assert "h100-80g" in platform.cli("prices", "show").stdout

    # The CLI sets a version for later: it is upcoming, and nothing in force changes.
    later = json.loads(platform.cli("prices", "set", "--cpu", "0.5", "--effective-at",
                                    "2100-01-01T00:00:00Z", "-o", "json").stdout)
    assert later["version"] == 3 and later["cpu_per_core_hour_micros"] == 500_000
    assert later["gpu_per_hour_micros"]["h100-80g"] == GPU_PRICE  # carried over
    prices = platform.call("GET", "/v1/prices").json()
    assert prices["current"]["version"] == 2
    assert [v["version"] for v in prices["upcoming"]] == [3]
    refused = platform.cli("prices", "set", "--cpu", "0.5", "--effective-at",
                           "2000-01-01T00:00:00Z", check=False)
    assert refused.returncode != 0 and "effective_at_in_past" in refused.stderr


def test_spot_prices_follow_utilisation_and_have_a_history(platform):
    _, key = platform.new_tenant("spotter", topup_micros=1_000_000_000)
    created = platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "h100-80g", "gpu_count": 4, "pricing": "spot", "command": "sleep 600"})
    assert created.status == 201, created.body
    platform.wait_state(created.json()["id"], "running", key)

    def busy():
        body = platform.call("GET", "/v1/spot-prices?gpu_type=h100-80g", key).json()
        h100 = body["items"][0]
        return h100 if any(p["utilisation_permille"] == 500 for p in h100["points"]) else None

    h100 = wait_for(busy, what="the market to see 4 of 8 GPUs held")
    # floor 40 % of 18: 7.2; at half use 7.2 + 10.8 / 4.
    assert h100["floor_per_gpu_hour_micros"] == 7_200_000
    assert h100["cap_per_gpu_hour_micros"] == 18_000_000
    assert h100["current_per_gpu_hour_micros"] == 9_900_000
    assert h100["points"][-1]["price_per_gpu_hour_micros"] == 9_900_000
    estimate = platform.call("POST", "/v1/estimate", key, body={
        "gpu_type": "h100-80g", "pricing": "spot"}).json()
    assert estimate["spot"] == {"floor_per_gpu_hour_micros": 7_200_000,
                                "cap_per_gpu_hour_micros": 18_000_000,
                                "current_per_gpu_hour_micros": 9_900_000}
    assert "CNY 9.90/GPU-h" in platform.cli("prices", "spot", "--gpu", "h100-80g", key=key).stdout
    # A window in the past before any point holds nothing.
    early = platform.call("GET", "/v1/spot-prices?gpu_type=h100-80g&from=2000-01-01T00:00:00Z"
                                 "&to=2000-01-02T00:00:00Z", key).json()
    assert early["items"][0]["points"] == []


def test_bad_price_input_is_refused_and_changes_nothing(platform):
    _, key = platform.new_tenant("nosy")
    cases = [
        ({"gpu_per_hour_micros": {"h100-80g": -1}}, 422, "invalid_field"),
        ({"cpu_per_core_hour_micros": -5}, 422, "invalid_field"),
        ({"gpu_per_hour_micros": {"warp-drive-9000": 1}}, 422, "unknown_gpu_type"),
        ({"effective_at": "2000-01-01T00:00:00Z"}, 422, "effective_at_in_past"),
        ({"effective_at": "tomorrow"}, 400, "invalid_field"),
        ({"currency": "USD"}, 422, "currency_fixed"),
        ({"spot_floor_permille": 1001}, 422, "invalid_field"),
        ({"gpu_per_hour_micros": {"h100-80g": "cheap"}}, 400, "invalid_field"),
        ({"discount": 5}, 400, "unknown_field"),
    ]
    for body, status, code in cases:
        problem(platform.call("PUT", "/v1/prices", body=body), status, code)
    problem(platform.call("PUT", "/v1/prices", raw=b"{not json"), 400, "malformed_json")
    problem(platform.call("PUT", "/v1/prices", key, body={"cpu_per_core_hour_micros": 1}), 403,
            "forbidden")
    assert len(platform.call("GET", "/v1/prices/history").json()["items"]) == 1
    # max_price is for spot work only, and a positive amount.
    problem(platform.call("POST", "/v1/estimate", key, body={
        "gpu_type": "h100-80g", "max_price_micros": 5}), 400, "invalid_field")
    problem(platform.call("POST", "/v1/instances", key, body={
        "gpu_type": "h100-80g", "pricing": "spot", "max_price_micros": -5}), 400, "invalid_field")
    problem(platform.call("POST", "/v1/estimate", key, body={"gpu_type": "warp-drive-9000"}), 422,
            "unknown_gpu_type")
    problem(platform.call("GET", "/v1/spot-prices?from=yesterday", key), 400, "invalid_query")
    problem(platform.call("GET", "/v1/spot-prices?gpu_type=warp-drive-9000", key), 404,
            "gpu_type_not_found")
