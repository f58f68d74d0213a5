"""Every route of the API through Client's typed methods, against the session's `gpurent dev`
(what each answers is checked, not only that it answers; test_coverage.py then checks that no
route was left out). Grouped as the SDK groups them."""
import datetime as dt
import hashlib
import http.cookiejar
import json
import os
import secrets
import types
import urllib.error
import urllib.request

import pytest

import gpurent
from devserver import SPEC, wait_for
from gpurent import models

TIMEOUT = 30


@pytest.fixture(scope="module")
def admin(dev):
    c = dev.client()
    yield c
    c.close()


@pytest.fixture(scope="module")
def tenant(dev):
    """A tenant of its own with 100 CNY and a tenant-admin key."""
    tenant_id, key = dev.new_tenant("sdk-routes")
    c = dev.client(key)
    yield types.SimpleNamespace(id=tenant_id, key=key, c=c)
    c.close()


def month_now():
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m")


# ---- platform-wide ------------------------------------------------------------------------------
def test_health_openapi_identity_catalog_estimate(admin, tenant):
    assert admin.health().status == "ok"
    with open(SPEC, encoding="utf-8") as f:
        documented = json.load(f)
    served = admin.openapi()
    assert served["paths"].keys() == documented["paths"].keys()

    me = tenant.c.whoami()
    assert (me.tenant_id, me.role) == (tenant.id, "tenant-admin")
    types_ = {t.slug: t for t in admin.gpu_types()}
    assert types_["h100-80g"].total >= 8 and types_["h100-80g"].memory_mb == 81920
    offers = {o.gpu_type: o for o in admin.offers()}
    h100 = types_["h100-80g"]
    assert offers["h100-80g"].price_per_gpu_hour_micros == h100.price_per_gpu_hour_micros

    e = admin.estimate(gpu_type="h100-80g", gpu_count=2, pricing="spot")
    assert e.pricing == "spot" and e.spot is not None
    assert e.per_hour_micros.gpu == 2 * e.gpu_price_per_gpu_hour_micros
    with pytest.raises(TypeError, match="gpu_cnt"):
        admin.estimate(gpu_type="h100-80g", gpu_cnt=2)  # caught before anything is sent


def test_resnet50_figures_recorded_for_the_type_time_and_price_epochs(admin, tenant):
    """The resnet50-bench template on Debian's CPU PyTorch (tiny batch and image), recorded by an
    operator: offers show the type's images/s, and an estimate times N epochs from them."""
    bench = tenant.c.instances.create(
        template="resnet50-bench", gpu_type="h100-80g", restart_policy="never",
        env={"BENCH_BATCH": "2", "BENCH_STEPS": "1", "BENCH_WARMUP": "0",
             "BENCH_IMAGE_SIZE": "32"})
    ended = tenant.c.instances.wait_until(bench.id, ["stopped", "failed"], timeout=300)
    assert ended.state == "stopped" and ended.exit_code == 0, ended
    recorded = admin.nodes.record_training(bench.id)
    assert recorded.gpu_type == "h100-80g" and recorded.run.image_size == 32
    assert set(recorded.run.images_per_s) == {"fp32", "amp"}
    trained = {o.gpu_type: o for o in admin.offers(sort="images_per_price")}["h100-80g"]
    assert trained.measured.resnet50.images_per_s == recorded.run.images_per_s
    e = tenant.c.estimate(gpu_type="h100-80g", work={"model": "resnet50", "epochs": 2,
                                                     "images_per_epoch": 100})
    assert e.work.images == 200 and e.work.seconds >= 1 and e.work.cost_micros > 0
    with pytest.raises(gpurent.BadRequest) as refused:
        tenant.c.estimate(gpu_type="h100-80g", work={"model": "resnet50", "epochs": 0})
    assert refused.value.code == "invalid_field"


# ---- instances ----------------------------------------------------------------------------------
def test_instance_lifecycle_exec_copy_idle_alert(tenant, tmp_path):
    c = tenant.c
    inst = c.instances.create(name="sdk-box", gpu_type="h100-80g", gpu_milli=250,
                              command="echo started; sleep 1000")
    assert isinstance(inst, models.Instance) and inst.tenant_id == tenant.id
    running = c.instances.wait_until(inst.id, "running", timeout=TIMEOUT)
    assert c.instances.get("sdk-box").id == inst.id  # by name
    assert inst.id in [i.id for i in c.instances.list(state="running")]
    wait_for(lambda: c.instances.logs(inst.id) == "started\n", what="the first log line")

    done = c.instances.exec(inst.id, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (done.exit_code, done.stdout, done.stderr, done.ok) == (3, "out\n", "err\n", False)
    frames = list(c.instances.exec_stream(inst.id, "echo a; sleep 0.2; echo b"))
    assert [f.data for f in frames if f.stream == "stdout"] == ["a\n", "b\n"]
    assert frames[-1].exit_code == 0

    (tmp_path / "inputs" / "sub").mkdir(parents=True)
    (tmp_path / "inputs" / "sub" / "x.txt").write_text("payload\n")
    copied = c.instances.copy(inst.id, str(tmp_path / "inputs"), "copied")
    assert copied.files == 1 and copied.path.endswith("/copied")
    assert "inputs/sub/x.txt" in copied.names
    assert c.instances.exec(inst.id, "cat copied/inputs/sub/x.txt").stdout == "payload\n"

    rule = c.instances.set_idle_alert(inst.id, below_percent=10, for_s=600)
    assert (rule.name, rule.threshold, rule.for_s) == (f"instance_idle.{inst.id}", 10.0, 600)

    assert c.instances.stop(inst.id).state in ("stopping", "stopped")
    c.instances.wait_until(inst.id, "stopped", timeout=TIMEOUT)
    with pytest.raises(gpurent.UnexpectedState):
        c.instances.wait_until(inst.id, "running", timeout=5)
    c.instances.start(inst.id)
    again = c.instances.wait_until(inst.id, "running", timeout=TIMEOUT)
    assert again.run == running.run + 1
    assert again.node_id == running.node_id  # back on the node that keeps its files
    c.instances.stop(inst.id)
    c.instances.wait_until(inst.id, "stopped", timeout=TIMEOUT)
    assert c.instances.start(inst.id, anywhere=True).start_on_node is None
    assert c.instances.wait_until(inst.id, "running", timeout=TIMEOUT).run == running.run + 2
    c.instances.delete(inst.id)
    c.instances.wait_until(inst.id, "terminated", timeout=TIMEOUT)


def test_stream_logs_follows_until_the_instance_ends(tenant):
    inst = tenant.c.instances.create(gpu_type="h100-80g", gpu_milli=100,
                                     command="for i in 1 2 3; do echo line $i; sleep 0.2; done")
    lines = list(tenant.c.instances.stream_logs(inst.id, read_timeout=TIMEOUT))
    assert lines == ["line 1\n", "line 2\n", "line 3\n"]


SERVICE = """
import http.server, os
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from " + self.path.split("?")[0]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(os.environ["GPURENT_PORT_WEB"])), Hello).serve_forever()
"""


def test_service_ticket_signs_a_browser_in(tenant):
    c = tenant.c
    inst = c.instances.create(gpu_type="h100-80g", gpu_milli=100, services=["web"],
                              command=["python3", "-c", SERVICE])
    c.instances.wait_until(inst.id, "running", timeout=TIMEOUT)

    def through_the_proxy():
        ticket = c.instances.service_ticket(inst.id, "web")
        assert ticket.path.startswith(f"/i/{inst.id}/web/?login=")
        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        try:
            with browser.open(c.instances.service_url(ticket), timeout=10) as page:
                return page.read().decode()
        except urllib.error.HTTPError as e:
            if e.code == 502:  # upstream_unavailable: the service is still starting
                return None
            raise
    assert wait_for(through_the_proxy, TIMEOUT, "the service") == f"hello from /i/{inst.id}/web/"
    with pytest.raises(gpurent.NotFound) as e:
        c.instances.service_ticket(inst.id, "jupyter")
    assert e.value.code == "service_not_found"
    c.instances.delete(inst.id)


# ---- jobs ---------------------------------------------------------------------------------------
def test_array_job_task_logs_and_members(tenant):
    c = tenant.c
    job = c.jobs.create(name="sdk-sweep", gpu_type="h100-80g", gpu_milli=100, array=3,
                        command="echo task=$GPURENT_ARRAY_INDEX of $GPURENT_ARRAY_SIZE")
    assert job.array == 3 and job.id in [j.id for j in c.jobs.list()]
    done = c.jobs.wait_until(job.id, gpurent.JOB_FINAL_STATES, timeout=TIMEOUT)
    assert done.state == "succeeded" and done.task_counts["succeeded"] == 3
    assert c.jobs.task_logs(job.id) == {i: f"task={i} of 3\n" for i in range(3)}
    assert c.jobs.logs(job.id, task=1) == "task=1 of 3\n"
    assert list(c.jobs.stream_logs(job.id, task=2, read_timeout=TIMEOUT)) == ["task=2 of 3\n"]
    members = list(c.jobs.instances(job.id))
    assert sorted(i.job_task for i in members) == [0, 1, 2]
    assert {i.job_id for i in members} == {job.id}
    assert [t.index for t in c.jobs.get(job.id, tasks=True).tasks] == [0, 1, 2]


def test_job_cancel(tenant):
    c = tenant.c
    job = c.jobs.create(gpu_type="h100-80g", gpu_milli=100, command="sleep 600")
    c.jobs.wait_until(job.id, "running", timeout=TIMEOUT)
    assert c.jobs.cancel(job.id).id == job.id
    assert c.jobs.wait_until(job.id, "cancelled", timeout=TIMEOUT).task_counts["cancelled"] == 1
    with pytest.raises(gpurent.UnexpectedState):
        c.jobs.wait_until(job.id, "succeeded", timeout=5)


# ---- reservations, volumes, uploads, templates ---------------------------------------------------
def test_reservations_quote_book_list_cancel(tenant):
    c = tenant.c
    start = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    window = dict(gpu_type="h100-80g", gpu_count=1, start=start.isoformat().replace("+00:00", "Z"),
                  end=(start + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z"))
    quote = c.reservations.quote(**window)
    assert quote.total_micros == quote.price_per_gpu_hour_micros  # 1 GPU for 1 hour
    before = c.billing.balance().balance_micros
    booked = c.reservations.create(**window)
    assert booked.state == "booked" and booked.total_micros == quote.total_micros
    assert c.billing.balance().balance_micros == before - booked.paid_micros
    assert booked.id in [r.id for r in c.reservations.list()]
    cancelled = c.reservations.cancel(booked.id)
    assert cancelled.state == "cancelled" and cancelled.refunded
    assert c.billing.balance().balance_micros == before


def test_volume_copy_mount_delete(admin, tmp_path):
    node = next(iter(admin.nodes.list()))
    vol = admin.volumes.create(name="sdk-data", size_gb=1, node_id=node.id)
    assert admin.volumes.get(vol.id).node_id == node.id
    assert vol.id in [v.id for v in admin.volumes.list()]
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "a.csv").write_text("1,2\n")
    copied = admin.volumes.copy(vol.id, str(tmp_path / "set") + "/", "datasets")
    assert (copied.files, copied.names) == (1, ["a.csv"])

    reader = admin.instances.create(gpu_type="h100-80g", gpu_milli=100, command="sleep 1000",
                                    volumes=[{"volume_id": vol.id, "mount_path": "/data"}])
    admin.instances.wait_until(reader.id, "running", timeout=TIMEOUT)
    assert admin.instances.exec(reader.id, "cat data/datasets/a.csv").stdout == "1,2\n"
    with pytest.raises(gpurent.Conflict) as e:
        admin.volumes.delete(vol.id)
    assert e.value.code == "volume_in_use"
    admin.instances.delete(reader.id)
    admin.instances.wait_until(reader.id, "terminated", timeout=TIMEOUT)
    assert admin.volumes.delete(vol.id) is None
    with pytest.raises(gpurent.NotFound):
        admin.volumes.get(vol.id)


def test_upload_resumes_where_it_stopped(dev, tenant):
    sent = []
    c = dev.client(tenant.key, on_request=lambda info: sent.append(info))
    data = secrets.token_bytes(2 * gpurent.api.UPLOAD_PIECE_BYTES + 1000)
    digest = hashlib.sha256(data).hexdigest()
    first = c.uploads.create(len(data), digest)
    assert (first.received, first.complete) == (0, False)
    piece = c.uploads.append(first.id, 0, data[:gpurent.api.UPLOAD_PIECE_BYTES])
    assert piece.received == gpurent.api.UPLOAD_PIECE_BYTES
    assert c.uploads.get(first.id).received == piece.received

    sent.clear()
    done = c.uploads.upload(data)  # the same bytes: the same upload, from where it stopped
    assert (done.id, done.complete, done.received) == (first.id, True, len(data))
    offsets = [i.path for i in sent if i.method == "PUT"]
    assert len(offsets) == 2  # the second and third pieces only
    sent.clear()
    assert c.uploads.upload(data).complete
    assert [i.method for i in sent] == ["POST"]  # complete: nothing more is sent
    c.close()


def test_templates_set_get_list_delete(admin, tenant):
    made = admin.templates.set("sdk-tmpl", description="SDK test", process_command="sleep 1",
                               env={"A": "1"})
    assert made.name == "sdk-tmpl" and not made.builtin and made.runtimes == ["process"]
    assert tenant.c.templates.get("sdk-tmpl").env == {"A": "1"}
    names = [t.name for t in tenant.c.templates.list()]
    assert {"base", "pytorch", "sdk-tmpl"} <= set(names)
    assert admin.templates.delete("sdk-tmpl") is None
    with pytest.raises(gpurent.NotFound) as e:
        tenant.c.templates.get("sdk-tmpl")
    assert e.value.code == "template_not_found"


# ---- money --------------------------------------------------------------------------------------
def test_billing(admin, tenant):
    c = tenant.c
    before = c.billing.balance()
    assert before.tenant_id == tenant.id
    topped = admin.billing.topup(tenant.id, 5_000_000, reference="sdk billing test")
    assert topped.balance_micros == before.balance_micros + 5_000_000
    assert c.balance().balance_micros == topped.balance_micros
    assert topped.transfer_id in [t.id for t in c.billing.transfers()]
    assert admin.billing.balance(tenant="sdk-routes").tenant_id == tenant.id  # by name

    usage = c.billing.usage()
    assert usage.tenant_id == tenant.id and usage.currency == before.currency
    assert usage.total_micros == sum(u.amount_micros for u in usage.items) + sum(
        v.amount_micros for v in usage.volumes)

    view = admin.billing.set_settings(tenant.id, warning_threshold_micros=1_000_000)
    assert view.warning_threshold_micros == 1_000_000 and view.credit_limit_micros == 0
    assert c.billing.settings().warning_threshold_micros == 1_000_000

    month = month_now()
    assert month in [i.id for i in c.billing.invoices()]
    invoice = c.billing.invoice(month)
    assert invoice.tenant_id == tenant.id and invoice.lines
    csv = c.billing.invoice_csv(month)
    assert csv.splitlines()[0].startswith("invoice,tenant_id,category")
    revenue = admin.billing.revenue(from_=dt.datetime(2020, 1, 1))
    assert revenue.from_ == "2020-01-01T00:00:00.000Z" and revenue.currency == before.currency


def test_packages(admin, tenant):
    product = admin.packages.set_product(name="sdk-h100-2h", gpu_type="h100-80g", gpu_hours=2,
                                         price_micros=3_000_000, validity_days=30)
    assert product.name == "sdk-h100-2h"
    assert "sdk-h100-2h" in [p.name for p in tenant.c.packages.products()]
    before = tenant.c.balance().balance_micros
    bought = tenant.c.packages.buy("sdk-h100-2h", idempotency_key="sdk-package-1")
    again = tenant.c.packages.buy("sdk-h100-2h", idempotency_key="sdk-package-1")
    assert again.id == bought.id  # the retry pays nothing
    assert tenant.c.balance().balance_micros == before - 3_000_000
    assert bought.remaining_gpu_seconds == 2 * 3600
    assert [p.id for p in tenant.c.packages.list()] == [bought.id]
    assert tenant.c.packages.get(bought.id).state == "active"


def test_prices(admin):
    book = admin.prices.get()
    tomorrow = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    version = admin.prices.set(effective_at=tomorrow, egress_per_gb_micros=1000)
    assert version.egress_per_gb_micros == 1000
    assert version.gpu_per_hour_micros == book.current.gpu_per_hour_micros  # carried over
    assert version.version in [v.version for v in admin.prices.get().upcoming]
    assert [v.version for v in admin.prices.history()][-1] == version.version
    spot = admin.prices.spot(gpu_type="h100-80g")
    assert [s.gpu_type for s in spot.items] == ["h100-80g"]
    assert spot.items[0].floor_per_gpu_hour_micros <= spot.items[0].current_per_gpu_hour_micros
    with pytest.raises(gpurent.NotFound) as e:
        admin.prices.spot(gpu_type="no-such-gpu")
    assert e.value.code == "gpu_type_not_found"


# ---- tenants, keys, audit ------------------------------------------------------------------------
def test_tenants_quotas_keys_audit(dev, admin):
    made = admin.tenants.create("sdk-accounts")
    listed = {t.id: t for t in admin.tenants.list()}
    assert listed[made.id].name == "sdk-accounts" and listed[made.id].balance_micros == 0
    assert admin.tenants.quota(made.id).max_instances is None
    quota = admin.tenants.set_quota("sdk-accounts", max_instances=5, weight=2,
                                    max_gpus_per_type={"h100-80g": 4})
    assert (quota.tenant_id, quota.max_instances, quota.weight) == (made.id, 5, 2)
    assert quota.max_gpus_per_type == {"h100-80g": 4}

    key = admin.keys.create(tenant_id=made.id, role="read-only", name="sdk-reader",
                            scopes=["*:read"])
    assert key.key.startswith("gpr_") and key.role == "read-only"
    assert key.id in [k.id for k in admin.keys.list(tenant=made.id)]
    reader = dev.client(key.key, retries=0)
    assert reader.tenants.quota(made.id).weight == 2  # a tenant reads its own quota
    with pytest.raises(gpurent.Forbidden) as e:
        reader.volumes.create(name="nope", size_gb=1)
    assert e.value.code == "forbidden"
    entries = list(admin.audit.list(key=key.id))
    assert [(a.action, a.status, a.outcome) for a in entries] == [
        ("POST /v1/volumes", 403, "forbidden")]
    assert list(admin.audit.list(key=key.id, after=entries[-1].seq)) == []
    assert admin.keys.revoke(key.id) is None
    with pytest.raises(gpurent.Unauthorized):
        reader.whoami()
    reader.close()


# ---- the fleet: join tokens, nodes, quarantine, events, alerts, metrics --------------------------
@pytest.fixture(scope="module")
def fleet_node(dev, admin):
    """A second node: a simulated agent that joins with a join token, its GPU 1 reporting a
    fatal XID (79) from the start, so that it is quarantined."""
    token = admin.join_tokens.create(description="sdk fleet", ttl_s=600)
    assert token.token.startswith("gjt_") and token.description == "sdk fleet"
    data_dir = os.path.join(dev.dir.name, "fleet")
    os.makedirs(data_dir)
    faults = os.path.join(data_dir, "sim_faults.json")
    with open(faults, "w") as f:
        json.dump({"faults": [{"node": 0, "gpu": 1, "kind": "xid", "code": 79}]}, f)
    dev.start_process(["agent", "--server", dev.url, "--join-token", token.token,
                       "--sim-gpus", "2xa100-80g", "--sim-nodes", "1", "--name", "sdkfleet",
                       "--data-dir", data_dir], "fleet")
    node = wait_for(lambda: next((n for n in admin.nodes.list() if n.name.startswith("sdkfleet")
                                  and n.quarantined_gpus), None), TIMEOUT, "the fleet node")
    os.unlink(faults)  # the fault happened once; a released GPU stays released
    return node


def test_nodes_quarantine_release_cordon_drain(admin, fleet_node):
    ids = [n.id for n in admin.nodes.list(limit=1)]  # a page per node
    assert fleet_node.id in ids and len(ids) == len(set(ids)) >= 2
    node = admin.nodes.get(fleet_node.id)
    assert node.status == "degraded" and [q.index for q in node.quarantined_gpus] == [1]
    assert node.quarantined_gpus[0].xid == 79

    kinds = [(e.kind, e.object_id) for e in admin.events.list(kind="gpu.quarantined")]
    assert ("gpu.quarantined", node.id) in kinds
    released = admin.nodes.release_gpu(node.id, 1)
    assert released.status == "ready" and released.quarantined_gpus == []
    with pytest.raises(gpurent.Conflict) as e:
        admin.nodes.release_gpu(node.id, 1)
    assert e.value.code == "gpu_not_quarantined"
    seen = [e for e in admin.events.list(object=node.id) if e.kind.startswith("gpu.")]
    assert [e.kind for e in seen] == ["gpu.quarantined", "gpu.released"]
    assert [e.kind for e in admin.events.list(object=node.id, after=seen[0].seq)
            if e.kind.startswith("gpu.")] == ["gpu.released"]

    # The fleet's nodes answer benchmark requests: an operator measures the node's idle GPUs
    # (the released one is measured anyway before it takes work again).
    asked = admin.nodes.benchmark(node.id)
    assert asked.node_id == node.id and asked.reason == "operator" and 1 in asked.gpus
    history = wait_for(lambda: (lambda h: h if len(h) == len(node.gpus) and all(
        g.runs[-1].reason in ("operator", "released") and len(g.runs) >= 2 for g in h) else None)(
        admin.nodes.benchmarks(node.id)), TIMEOUT, "the node's figures")
    assert all(g.runs[-1].simulated and g.runs[-1].figures.training_tflops for g in history)
    ranked = [o for o in admin.offers(sort="perf_per_price") if o.measured]
    assert ranked and all(o.measured.perf_per_price for o in ranked)

    assert admin.nodes.cordon(node.id).cordoned
    assert not admin.nodes.uncordon(node.id).cordoned
    drained = admin.nodes.drain(node.id)
    assert drained.cordoned and drained.status in ("draining", "cordoned")


def test_alerts_and_rules(admin, fleet_node):
    gpu = next(g.uuid for g in admin.nodes.get(fleet_node.id).gpus if g.index == 1)
    alert_id = f"gpu_xid_error:{gpu}"
    firing = wait_for(lambda: next((a for a in admin.alerts.list().items if a.id == alert_id),
                                   None), TIMEOUT, "the XID alert")
    assert firing.state == "firing" and not firing.acknowledged
    ack = admin.alerts.ack(alert_id)
    assert (ack.id, ack.acknowledged) == (alert_id, True)
    listed = admin.alerts.list(history=10)
    assert next(a for a in listed.items if a.id == alert_id).acknowledged
    assert len(listed.history) <= 10

    rule = admin.alerts.set_rule(name="sdk_hot", metric="gpu_temp", comparison=">",
                                 threshold=95, for_s=120, scope="gpu_type",
                                 scope_value="a100-80g", severity="warning")
    assert (rule.name, rule.threshold, rule.scope_value) == ("sdk_hot", 95.0, "a100-80g")
    assert "sdk_hot" in [r.name for r in admin.alerts.rules()]
    assert admin.alerts.delete_rule("sdk_hot") is None
    assert "sdk_hot" not in [r.name for r in admin.alerts.rules()]


def test_metrics_query(admin, fleet_node):
    series = wait_for(lambda: (lambda s: s if s.points else None)(admin.metrics.query(
        "gpu_util", node=fleet_node.id, step="1m", agg="max")), TIMEOUT, "telemetry")
    assert series.metric == "gpu_util" and series.aggregation == "max" and series.step_s == 60
    assert sorted(series.gpus) == sorted(g.uuid for g in fleet_node.gpus)
    with pytest.raises(gpurent.BadRequest) as e:
        admin.metrics.query("warp_drive", node=fleet_node.id)
    assert e.value.code == "invalid_query"


# ---- errors, as the server answers them ----------------------------------------------------------
def test_error_answers_raise_typed_exceptions(dev, admin):
    def raised(cls, code, fn, *args, **kwargs):
        with pytest.raises(cls) as e:
            fn(*args, **kwargs)
        assert isinstance(e.value, gpurent.ApiError)
        assert (e.value.code, e.value.title) != ("", "") and e.value.detail
        assert e.value.code == code, e.value
        return e.value

    raised(gpurent.BadRequest, "unknown_field", admin.request, "POST", "/v1/instances",
           body={"gpu_type": "h100-80g", "bogus": 1})
    raised(gpurent.Unauthorized, "unauthenticated",
           dev.client("gpr_" + "x" * 40, retries=0).whoami)
    _, broke = dev.new_tenant("sdk-broke", topup_micros=0)
    raised(gpurent.PaymentRequired, "insufficient_balance",
           dev.client(broke).instances.create, gpu_type="h100-80g", command="true")
    raised(gpurent.NotFound, "instance_not_found", admin.instances.get, "i-doesnotexist")
    raised(gpurent.MethodNotAllowed, "method_not_allowed", admin.request, "PATCH", "/v1/whoami")
    raised(gpurent.Conflict, "tenant_name_taken", admin.tenants.create, "sdk-broke")
    raised(gpurent.PayloadTooLarge, "payload_too_large", admin.instances.create,
           gpu_type="h100-80g", env={"BIG": "x" * (1 << 20)})
    raised(gpurent.Unprocessable, "unknown_gpu_type", admin.instances.create,
           gpu_type="no-such-gpu")


def test_rate_limit_raises_with_retry_after_when_retries_are_off(dev, admin):
    key = admin.keys.create(role="tenant-member", name="sdk-hasty").key
    hasty = dev.client(key, retries=0)
    with pytest.raises(gpurent.RateLimited) as e:
        for _ in range(2000):  # the key's burst is 400 (docs/api.md, "Rate limits")
            hasty.whoami()
    assert e.value.code == "rate_limited" and e.value.retry_after > 0
    hasty.close()
