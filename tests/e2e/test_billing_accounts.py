"""Accounts: a tenant buys a compute package, launches, stops; the invoice (JSON and CSV) shows
the package and the usage and equals the ledger; a retried purchase never charges twice. A
reserved term is paid when booked, its work pays no GPU price, and a cancellation before its window
is refunded."""

import csv
import datetime
import io
import json
import time

from conftest import problem

PRODUCT = {"name": "h100-1h", "gpu_type": "h100-80g", "gpu_hours": 1,
           "price_micros": 10_000_000, "validity_days": 30}


def balance(platform, key):
    response = platform.call("GET", "/v1/billing/balance", key)
    assert response.status == 200, response.body
    return response.json()["balance_micros"]


def test_package_launch_stop_invoice_and_idempotent_purchase(platform):
    assert platform.call("PUT", "/v1/packages/products", body=PRODUCT).status == 200
    tenant_id, key = platform.new_tenant("buyer", topup_micros=100_000_000)
    listed = platform.call("GET", "/v1/packages/products", key).json()["items"]
    # Beside the sample that `gpurent dev` sells (the README's h100-100h).
    assert [p["name"] for p in listed] == ["h100-100h", "h100-1h"]
    assert listed[1]["currency"] == "CNY"
    assert "CNY 10.00" in platform.cli("packages", "products", key=key).stdout

    bought = platform.call("POST", "/v1/packages", key, body={"product": "h100-1h"},
                           headers={"Idempotency-Key": "buy-1"})
    assert bought.status == 201, bought.body
    package = bought.json()
    assert package["remaining_gpu_seconds"] == 3600 and package["state"] == "active"
    assert balance(platform, key) == 90_000_000
    retried = platform.call("POST", "/v1/packages", key, body={"product": "h100-1h"},
                            headers={"Idempotency-Key": "buy-1"})
    assert retried.status == 201 and retried.headers.get("Idempotent-Replayed") == "true"
    assert retried.json()["id"] == package["id"]
    assert balance(platform, key) == 90_000_000
    problem(platform.call("POST", "/v1/packages", key, body={"product": "other"},
                          headers={"Idempotency-Key": "buy-1"}), 409, "idempotency_key_reused")

    # A package covers time that ran; the unrun rest of a minimum billed duration is charged to
    # cash (docs/billing.md). This run is shorter than a minute: no minimum here.
    assert platform.call("PUT", "/v1/prices", body={"minimum_billed_seconds": 0}).status == 200
    created = platform.call("POST", "/v1/instances", key,
                            body={"gpu_type": "h100-80g", "command": "sleep 600"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running", key)
    time.sleep(3)
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status in (200, 202)
    platform.wait_state(instance_id, "stopped", key)

    # The package paid for the run: the balance is what it was after the purchase.
    assert balance(platform, key) == 90_000_000
    packages = platform.call("GET", "/v1/packages", key).json()["items"]
    assert len(packages) == 1 and 0 < 3600 - packages[0]["remaining_gpu_seconds"] < 60

    def check_invoice():
        invoices = platform.call("GET", "/v1/billing/invoices", key).json()["items"]
        assert len(invoices) == 1
        invoice_id = invoices[0]["id"]
        invoice = platform.call("GET", f"/v1/billing/invoices/{invoice_id}", key).json()
        assert invoice["closing_balance_micros"] == balance(platform, key)
        assert (invoice["opening_balance_micros"] - invoice["charges_micros"]
                - invoice["credits_micros"] - invoice["payments_micros"]
                == invoice["closing_balance_micros"])
        lines = {(line["category"], line["description"]): line for line in invoice["lines"]}
        assert lines[("packages", "h100-1h")]["amount_micros"] == 10_000_000
        assert lines[("payments", "top-ups")]["amount_micros"] == -100_000_000
        assert [p["category"] for p in invoice["prepaid"]] == ["package_usage"]
        assert invoice["prepaid"][0]["amount_micros"] > 0  # the run's use of the package

        for response in (platform.call("GET", f"/v1/billing/invoices/{invoice_id}", key,
                                       headers={"Accept": "text/csv"}),
                         platform.call("GET", f"/v1/billing/invoices/{invoice_id}?format=csv",
                                       key)):
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/csv")
            rows = list(csv.DictReader(io.StringIO(response.body.decode())))
            by = {(r["category"], r["description"]): r for r in rows}
            assert by[("packages", "h100-1h")]["amount"] == "10.000000"
            assert by[("prepaid:package_usage", package["id"])]["amount"] != "0.000000"
            assert int(round(float(by[("total", "closing_balance")]["amount"]) * 1e6)) == \
                invoice["closing_balance_micros"]
        return invoice

    before = check_invoice()
    # The CLI shows the same.
    assert "h100-1h" in platform.cli("packages", "ls", key=key).stdout
    assert before["id"] in platform.cli("billing", "invoices", key=key).stdout
    shown = platform.cli("billing", "invoice", before["id"], key=key).stdout
    assert "packages" in shown and "h100-1h" in shown
    csv_text = platform.cli("billing", "invoice", before["id"], "--csv", key=key).stdout
    assert csv_text.startswith("invoice,tenant_id,category")
    assert "total,closing_balance" in csv_text
    # Through a restart (the store round trip) the package and the invoice are the same.
    platform.restart()
    assert platform.call("GET", "/v1/packages", key).json()["items"] == packages
    assert check_invoice() == before

    # Operators see the package's used part as revenue of its GPU type and tenant; tenants may not.
    revenue = platform.call("GET", "/v1/billing/revenue").json()
    assert revenue["by_tenant"][tenant_id] == revenue["by_gpu_type"]["h100-80g"] > 0
    assert revenue["by_tenant"][tenant_id] == packages[0]["recognised_micros"]
    assert tenant_id in platform.cli("billing", "revenue").stdout
    problem(platform.call("GET", "/v1/billing/revenue", key), 403, "forbidden")
    problem(platform.call("GET", "/v1/billing/revenue?from=yesterday"), 400, "invalid_query")

    # Another tenant sees nothing of it.
    _, other = platform.new_tenant("other")
    assert platform.call("GET", "/v1/packages", other).json()["items"] == []
    problem(platform.call("GET", f"/v1/packages/{package['id']}", other), 404, "package_not_found")
    problem(platform.call("GET", f"/v1/billing/invoices?tenant={tenant_id}", other), 404)


def test_account_routes_refuse_bad_input(platform):
    _, key = platform.new_tenant("tenant", topup_micros=1_000_000)
    problem(platform.call("PUT", "/v1/packages/products", key, body=PRODUCT), 403, "forbidden")
    for bad, code in [({**PRODUCT, "gpu_hours": 0}, "invalid_field"),
                      ({**PRODUCT, "price_micros": "10"}, "invalid_field"),
                      ({**PRODUCT, "surprise": 1}, "unknown_field"),
                      ({k: v for k, v in PRODUCT.items() if k != "name"}, "invalid_field")]:
        problem(platform.call("PUT", "/v1/packages/products", body=bad), 400, code)
    problem(platform.call("PUT", "/v1/packages/products", body={**PRODUCT, "gpu_type": "x"}),
            422, "unknown_gpu_type")
    assert platform.call("PUT", "/v1/packages/products", body=PRODUCT).status == 200
    problem(platform.call("POST", "/v1/packages", key, body={"product": "h100-1h"}),
            402, "insufficient_funds")
    problem(platform.call("POST", "/v1/packages", key, body={"product": "nope"}),
            404, "package_product_not_found")
    problem(platform.call("POST", "/v1/packages", key, raw=b"{"), 400, "malformed_json")
    assert platform.call("GET", "/v1/packages", key).json()["items"] == []
    assert balance(platform, key) == 1_000_000
    problem(platform.call("GET", "/v1/billing/invoices/2026-13", key), 404)
    problem(platform.call("GET", "/v1/billing/invoices/..%2F..", key), 404)
    problem(platform.call("GET", "/v1/billing/invoices/2026-12?format=xml", key), 400,
            "invalid_query")
    problem(platform.call("PUT", "/v1/billing/settings", key,
                          body={"tenant_id": "t-x", "credit_limit_micros": 5}), 403, "forbidden")
    problem(platform.call("PUT", "/v1/billing/settings",
                          body={"tenant_id": "t-nope", "credit_limit_micros": 5}), 404)
    problem(platform.call("PUT", "/v1/billing/settings",
                          body={"tenant_id": "t-x", "credit_limit_micros": -5}), 400,
            "invalid_field")


def test_operator_cli_defines_products_and_sets_the_balance_guard(platform):
    tenant_id, key = platform.new_tenant("guarded")
    platform.cli("packages", "define", "cli-pack", "--gpu-type", "h100-80g", "--gpu-hours", "2",
                 "--price", "20", "--validity-days", "7")
    assert "cli-pack" in platform.cli("packages", "products", key=key).stdout
    shown = platform.cli("billing", "settings", "--tenant", tenant_id, "--credit-limit", "5",
                         "--warning", "50").stdout
    assert "Credit limit:   CNY 5.00" in shown and "Warning below:  CNY 50.00" in shown
    settings = platform.call("GET", "/v1/billing/settings", key).json()
    assert settings["credit_limit_micros"] == 5_000_000
    assert settings["warning_threshold_micros"] == 50_000_000
    # The tenant's 100 are above 50: no warning until the balance crosses below it.
    assert settings["below_warning_threshold"] is False


def test_a_reserved_term_is_paid_up_front_and_its_work_pays_no_gpu_price(platform):
    _, key = platform.new_tenant("committer", topup_micros=3_000_000_000)
    discounts = platform.call("GET", "/v1/prices").json()["current"]["reserved_discount_permille"]
    assert discounts == {"7": 100, "30": 200, "90": 350}

    # One H100 for a week at 18.0 an hour less 10 %: 2,721.6, paid at booking.
    booked = platform.call("POST", "/v1/reservations", key,
                           {"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 7},
                           headers={"Idempotency-Key": "term-1"})
    assert booked.status == 201, booked.body
    term = booked.json()
    assert term["state"] == "active" and term["payment"] == "upfront"
    assert term["discount_permille"] == 100 and term["price_per_gpu_hour_micros"] == 18_000_000
    assert term["total_micros"] == term["paid_micros"] == 2_721_600_000
    assert balance(platform, key) == 278_400_000
    # A retry charges nothing again; a second week is more than the balance: refused, not booked.
    again = platform.call("POST", "/v1/reservations", key,
                          {"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 7},
                          headers={"Idempotency-Key": "term-1"})
    assert again.status == 201 and again.json()["id"] == term["id"]
    problem(platform.call("POST", "/v1/reservations", key,
                          {"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 7}),
            402, "insufficient_funds")
    problem(platform.call("POST", "/v1/reservations", key,
                          {"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 0}),
            400, "invalid_field")
    problem(platform.call("POST", "/v1/reservations", key,
                          {"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 7,
                           "end": "2030-01-01T00:00:00Z"}), 400, "invalid_field")
    problem(platform.call("POST", "/v1/reservations", key,
                          {"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 7,
                           "payment": "weekly"}), 400, "invalid_field")
    assert len(platform.call("GET", "/v1/reservations", key).json()["items"]) == 1
    assert balance(platform, key) == 278_400_000

    created = platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "pricing": "reserved", "reservation_id": term["id"],
        "command": "sleep 600"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running", key)
    time.sleep(2)
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status in (200, 202)
    platform.wait_state(instance_id, "stopped", key)
    usage = [u for u in platform.call("GET", "/v1/billing/usage", key).json()["items"]
             if u["instance_id"] == instance_id]
    assert len(usage) == 1 and usage[0]["seconds"] > 0 and usage[0]["amount_micros"] == 0
    assert balance(platform, key) == 278_400_000

    # The CLI books a term that starts later and cancels it: a refund, in full.
    start = (datetime.datetime.now(datetime.timezone.utc)
             + datetime.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    later = json.loads(platform.cli("reserve", "--gpu", "h100-80g", "--count", "1", "--start",
                                    start, "--duration", "1h", "--yes", "-o", "json",
                                    key=key).stdout)
    assert later["state"] == "booked" and later["paid_micros"] == 18_000_000
    assert balance(platform, key) == 260_400_000
    assert "(refunded)" in platform.cli("reservation", "cancel", later["id"], key=key).stdout
    assert balance(platform, key) == 278_400_000

    invoice_id = platform.call("GET", "/v1/billing/invoices", key).json()["items"][-1]["id"]
    invoice = platform.call("GET", f"/v1/billing/invoices/{invoice_id}", key).json()
    reserved = [line for line in invoice["lines"] if line["category"] == "reserved_terms"]
    assert sum(line["amount_micros"] for line in reserved) == 2_721_600_000 + 18_000_000
    refunds = [line for line in invoice["lines"] if line["category"] == "refunds"]
    assert sum(line["amount_micros"] for line in refunds) == -18_000_000
    assert invoice["closing_balance_micros"] == balance(platform, key)
    # Through a restart the term is the same and nothing is charged again.
    platform.restart()
    kept = [r for r in platform.call("GET", "/v1/reservations", key).json()["items"]
            if r["id"] == term["id"]]
    assert kept == [term]
    assert balance(platform, key) == 278_400_000


def test_a_command_that_never_starts_costs_nothing_and_usage_names_the_minimum(platform):
    _, key = platform.new_tenant("typo", topup_micros=100_000_000)
    # A typo: the program does not exist. The node cannot execute it, so nothing ran.
    typo = platform.call("POST", "/v1/instances", key,
                         body={"gpu_type": "h100-80g", "command": ["./task.sh"]})
    assert typo.status == 201, typo.body
    failed = platform.wait_state(typo.json()["id"], "failed", key)
    assert failed["reason"].startswith("the command could not be started: cannot execute"), failed
    assert balance(platform, key) == 100_000_000

    # A command that ran for a moment pays the minimum, and usage says which seconds it is.
    quick = platform.call("POST", "/v1/instances", key,
                          body={"gpu_type": "h100-80g", "command": ["true"]})
    assert quick.status == 201, quick.body
    platform.wait_state(quick.json()["id"], "stopped", key)
    usage = platform.call("GET", "/v1/billing/usage", key).json()
    item = next(i for i in usage["items"] if i["instance_id"] == quick.json()["id"])
    assert item["seconds"] == 60 and item["minimum_seconds"] >= 59, item
    typo_items = [i for i in usage["items"] if i["instance_id"] == typo.json()["id"]]
    assert all(i["amount_micros"] == 0 for i in typo_items), typo_items
    assert "of it the minimum" in platform.cli("usage", key=key).stdout
