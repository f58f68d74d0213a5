"""Reservations (admission refuses overbooking, cancel, tenant isolation, reserved work) and
quotas (operators set them, a limit holds work in the queue until room frees up), through the
API and the CLI; bad input is a 4xx problem and changes nothing."""

import datetime
import json

import pytest

from conftest import problem, wait_for


def at(hours_from_now):
    """An RFC 3339 UTC time this many hours from now, on a whole hour so windows line up."""
    base = datetime.datetime.now(datetime.timezone.utc).replace(minute=0, second=0,
                                                                microsecond=0)
    return (base + datetime.timedelta(hours=hours_from_now)).strftime("%Y-%m-%dT%H:%M:%SZ")


def book(platform, count, start_h, end_h, key=None, gpu_type="h100-80g"):
    return platform.call("POST", "/v1/reservations", key, {
        "gpu_type": gpu_type, "gpu_count": count, "start": at(start_h), "end": at(end_h)})


def listed(platform, key=None):
    response = platform.call("GET", "/v1/reservations", key)
    assert response.status == 200, response.body
    return response.json()["items"]


def test_admission_refuses_overbooking_at_any_instant(platform):
    # The platform has 8 H100s.
    first = book(platform, 6, 2, 5)
    assert first.status == 201, first.body
    booked = first.json()
    assert booked["gpu_count"] == 6 and booked["gpu_type"] == "h100-80g"
    assert booked["state"] == "booked" and booked["start"].startswith(at(2)[:19])
    assert first.headers.get("Location") == f"/v1/reservations/{booked['id']}"

    problem(book(platform, 4, 4, 6), 409, "overbooked")  # 6 + 4 > 8 during [4h, 5h)
    assert book(platform, 2, 4, 6).status == 201          # exactly 8
    assert book(platform, 4, 5, 7).status == 201          # [2h, 5h) has ended: windows are half-open
    problem(book(platform, 1, 0, 24), 409, "overbooked")
    assert len(listed(platform)) == 3

    # Cancelling gives the GPUs back to admission.
    cancelled = platform.call("DELETE", f"/v1/reservations/{booked['id']}")
    assert cancelled.status == 200, cancelled.body
    assert cancelled.json()["state"] == "cancelled"
    assert book(platform, 6, 2, 4).status == 201


def test_a_retried_booking_with_its_idempotency_key_books_once(platform):
    _, key = platform.new_tenant("retrier")
    body = {"gpu_type": "h100-80g", "gpu_count": 2, "start": at(30), "end": at(31)}
    headers = {"Idempotency-Key": "book-1"}
    first = platform.call("POST", "/v1/reservations", key, body, headers=headers)
    assert first.status == 201, first.body
    again = platform.call("POST", "/v1/reservations", key, body, headers=headers)
    assert again.status == 201, again.body
    assert again.json()["id"] == first.json()["id"]
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert len(listed(platform, key)) == 1
    other = dict(body, gpu_count=3)
    problem(platform.call("POST", "/v1/reservations", key, other, headers=headers), 409,
            "idempotency_key_reused")
    assert len(listed(platform, key)) == 1


def test_tenants_see_and_cancel_only_their_own_reservations(platform):
    tenant_a, key_a = platform.new_tenant("booker-a")
    _, key_b = platform.new_tenant("booker-b")
    mine = book(platform, 2, 1, 3, key=key_a)
    assert mine.status == 201, mine.body
    reservation = mine.json()
    assert reservation["tenant_id"] == tenant_a

    assert listed(platform, key_b) == []
    problem(platform.call("DELETE", f"/v1/reservations/{reservation['id']}", key_b), 404)
    assert [r["id"] for r in listed(platform, key_a)] == [reservation["id"]]
    assert [r["id"] for r in listed(platform)] == [reservation["id"]]  # operators see all

    # The tenant's CLI lists and cancels it.
    shown = json.loads(platform.cli("reservation", "ls", "-o", "json", key=key_a).stdout)
    assert [r["id"] for r in shown] == [reservation["id"]]
    platform.cli("reservation", "cancel", reservation["id"], key=key_a)
    assert listed(platform, key_a)[0]["state"] == "cancelled"


def test_cli_books_with_a_duration(platform):
    # Paid when booked: without a terminal to ask, the CLI books only with --yes, and says
    # what it would take.
    unasked = platform.cli("reservation", "create", "--gpu", "h100-80g", "--count", "3",
                           "--start", at(1), "--duration", "2h", check=False)
    assert unasked.returncode == 2, unasked.stderr
    assert "takes CNY 108.00 from your balance now" in unasked.stderr, unasked.stderr
    assert platform.call("GET", "/v1/reservations").json()["items"] == []
    created = json.loads(platform.cli("reservation", "create", "--gpu", "h100-80g", "--count",
                                      "3", "--start", at(1), "--duration", "2h", "--yes", "-o",
                                      "json").stdout)
    assert created["gpu_count"] == 3 and created["end"].startswith(at(3)[:19])
    refused = platform.cli("reservation", "create", "--gpu", "h100-80g", "--count", "6",
                           "--start", at(2), "--duration", "1h", check=False)
    assert refused.returncode == 1 and "overbooked" in refused.stderr, refused.stderr
    assert "so at most 5 more can be" in refused.stderr, refused.stderr
    # An error names the one rule broken, and what to do instead.
    past = platform.cli("reservation", "create", "--gpu", "h100-80g", "--count", "1", "--start",
                        "2020-01-01T00:00:00Z", "--duration", "1h", "--yes", check=False)
    assert past.returncode == 1, past.stderr
    assert "the window ended at 2020-01-01T01:00:00" in past.stderr, past.stderr
    assert "--start +1h" in past.stderr and "366" not in past.stderr, past.stderr
    # The README's form: a start relative to now.
    relative = json.loads(platform.cli("reservation", "create", "--gpu", "h100-80g", "--count",
                                       "2", "--start", "+3h", "--duration", "1h", "-y", "-o",
                                       "json").stdout)
    assert relative["gpu_count"] == 2 and relative["start"] > at(2), relative
    bad = platform.cli("reservation", "create", "--gpu", "h100-80g", "--count", "1", "--start",
                       "+soon", "--duration", "1h", check=False)
    assert bad.returncode == 2 and "+soon" in bad.stderr, bad.stderr


def test_reserved_work_runs_on_its_reservation(platform):
    _, key = platform.new_tenant("reserved-user")
    now = datetime.datetime.now(datetime.timezone.utc)
    reservation = platform.call("POST", "/v1/reservations", key, {
        "gpu_type": "h100-80g", "gpu_count": 2,
        "start": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "end": (now + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")})
    assert reservation.status == 201, reservation.body
    problem(platform.call("POST", "/v1/instances", key, {"gpu_type": "h100-80g",
                                                          "pricing": "reserved"}),
            422, "reservation_required")
    problem(platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "reservation_id": reservation.json()["id"]}), 400,
        "invalid_field")
    created = platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "gpu_count": 2, "pricing": "reserved",
        "reservation_id": reservation.json()["id"], "command": "sleep 600"})
    assert created.status == 201, created.body
    assert created.json()["pricing"] == "reserved"
    assert created.json()["reservation_id"] == reservation.json()["id"]
    platform.wait_state(created.json()["id"], "running", key)


@pytest.mark.parametrize("raw,code", [
    (b"{not json", "malformed_json"),
    (b'{"gpu_type": "h100-80g", "gpu_count": 0, "start": "2030-01-01T00:00:00Z",'
     b' "end": "2030-01-01T02:00:00Z"}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "gpu_count": 1, "start": "tomorrow",'
     b' "end": "2030-01-01T02:00:00Z"}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "gpu_count": 1, "start": "2030-01-01T02:00:00Z",'
     b' "end": "2030-01-01T02:00:00Z"}', "invalid_field"),
    (b'{"gpu_type": "h100-80g", "gpu_count": 1, "start": "2030-01-01T00:00:00Z"}',
     "invalid_field"),
    (b'{"gpu_type": "h100-80g", "gpu_count": 1, "start": "2030-01-01T00:00:00Z",'
     b' "end": "2030-01-01T02:00:00Z", "pricing": "spot"}', "unknown_field"),
])
def test_bad_reservations_are_400_and_book_nothing(platform, raw, code):
    problem(platform.call("POST", "/v1/reservations", raw=raw), 400, code)
    assert listed(platform) == []


def test_operators_set_quotas_and_tenants_read_their_own(platform):
    tenant_a, key_a = platform.new_tenant("quota-a")
    tenant_b, key_b = platform.new_tenant("quota-b")
    default = platform.call("GET", f"/v1/tenants/{tenant_a}/quota", key_a)
    assert default.status == 200, default.body
    assert default.json() == {"tenant_id": tenant_a, "max_gpus_per_type": {},
                              "max_instances": None, "max_queued": None, "max_array": None,
                              "max_body_bytes": None, "weight": 1}

    quota = {"max_gpus_per_type": {"h100-80g": 2}, "max_instances": 5, "max_queued": None,
             "max_array": None, "max_body_bytes": None, "weight": 3}
    response = platform.call("PUT", f"/v1/tenants/{tenant_a}/quota", body=quota)
    assert response.status == 200, response.body
    assert response.json() == {"tenant_id": tenant_a, **quota}
    assert platform.call("GET", f"/v1/tenants/{tenant_a}/quota", key_a).json()["weight"] == 3

    problem(platform.call("GET", f"/v1/tenants/{tenant_a}/quota", key_b), 404)
    problem(platform.call("PUT", f"/v1/tenants/{tenant_a}/quota", key_a, {"weight": 9}), 403,
            "forbidden")
    problem(platform.call("PUT", f"/v1/tenants/{tenant_b}/quota", key_b, {"weight": 9}), 403,
            "forbidden")
    problem(platform.call("PUT", "/v1/tenants/t-nope/quota", body={"weight": 2}), 404)

    # The CLI changes only what it names.
    platform.cli("quota", "set", tenant_a, "--weight", "4", "--max-instances", "none")
    shown = json.loads(platform.cli("quota", "show", tenant_a, "-o", "json", key=key_a).stdout)
    assert shown == {"tenant_id": tenant_a, "max_gpus_per_type": {"h100-80g": 2},
                     "max_instances": None, "max_queued": None, "max_array": None,
                     "max_body_bytes": None, "weight": 4}
    refused = platform.cli("quota", "set", tenant_a, "--weight", "5", key=key_a, check=False)
    assert refused.returncode == 1 and "forbidden" in refused.stderr, refused.stderr


def test_caps_refuse_what_is_beyond_them_at_once(platform):
    tenant, key = platform.new_tenant("capped")
    platform.cli("quota", "set", tenant, "--max-queued", "1", "--max-array", "3",
                 "--max-body-bytes", "300")
    # The dev node is full: the tenant's work waits, one at most.
    blocker = platform.call("POST", "/v1/instances",
                            body={"gpu_type": "h100-80g", "gpu_count": 8, "command": "sleep 600"})
    assert blocker.status == 201, blocker.body
    launch = {"gpu_type": "h100-80g", "command": "sleep 600"}
    waiting = platform.call("POST", "/v1/instances", key, launch)
    assert waiting.status == 201, waiting.body
    problem(platform.call("POST", "/v1/instances", key, launch), 409, "quota_exceeded")
    job = {"gpu_type": "h100-80g", "command": ["true"], "array": 4}
    problem(platform.call("POST", "/v1/jobs", key, job), 422, "quota_exceeded")
    # A body over the tenant's cap is refused before anything is read into a command.
    padded = dict(launch, name="x" * 400)
    problem(platform.call("POST", "/v1/instances", key, padded), 413, "payload_too_large")
    listed = platform.call("GET", "/v1/instances", key).json()["items"]
    assert [i["id"] for i in listed] == [waiting.json()["id"]]
    # Once its instance leaves the queue, the next one fits.
    assert platform.call("POST", f"/v1/instances/{waiting.json()['id']}/stop", key).status == 202
    assert platform.call("POST", "/v1/instances", key, launch).status == 201


@pytest.mark.parametrize("raw,status,code", [
    (b"{not json", 400, "malformed_json"),
    (b'{"weight": 0}', 400, "invalid_field"),
    (b'{"weight": "2"}', 400, "invalid_field"),
    (b'{"max_instances": -1}', 400, "invalid_field"),
    (b'{"max_queued": -1}', 400, "invalid_field"),
    (b'{"max_body_bytes": 1.5}', 400, "invalid_field"),
    (b'{"max_gpus_per_type": {"h100-80g": -1}}', 400, "invalid_field"),
    (b'{"max_gpus_per_type": [2]}', 400, "invalid_field"),
    (b'{"max_gpus_per_type": {"h100-81g": 2}}', 422, "unknown_gpu_type"),
    (b'{"max_gpu": {"h100-80g": 2}}', 400, "unknown_field"),
])
def test_bad_quotas_are_refused_and_change_nothing(platform, raw, status, code):
    tenant, _ = platform.new_tenant("quota-bad")
    assert platform.call("PUT", f"/v1/tenants/{tenant}/quota", body={"weight": 2}).status == 200
    problem(platform.call("PUT", f"/v1/tenants/{tenant}/quota", raw=raw), status, code)
    assert platform.call("GET", f"/v1/tenants/{tenant}/quota").json()["weight"] == 2


def test_gpu_quota_holds_work_in_the_queue_until_room_frees(platform):
    tenant, key = platform.new_tenant("quota-user")
    platform.cli("quota", "set", tenant, "--max-gpus", "h100-80g=2")

    def launch():
        response = platform.call("POST", "/v1/instances", key, {"gpu_type": "h100-80g",
                                                                 "command": "sleep 600"})
        assert response.status == 201, response.body
        return response.json()["id"]

    first, second = launch(), launch()
    platform.wait_state(first, "running", key)
    platform.wait_state(second, "running", key)
    third = launch()
    held = wait_for(lambda: (lambda i: i if "quota" in i["reason"] else None)(
        platform.instance(third, key)), what="the third instance to wait on the quota")
    assert held["state"] == "pending", held
    assert platform.offers()["h100-80g"]["free"] == 6  # held by the quota, not by capacity

    assert platform.call("POST", f"/v1/instances/{first}/stop", key).status == 202
    platform.wait_state(third, "running", key)
    assert platform.instance(second, key)["state"] == "running"
