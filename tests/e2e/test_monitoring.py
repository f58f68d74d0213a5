"""Monitoring end to end: a node that goes down fires an alert that reaches webhooks (http and
https) and the event log; the alert and metrics routes refuse bad input; a real Prometheus, with
the shipped deploy/prometheus.yml, scrapes /metrics, and every query of the shipped Grafana
dashboard answers there."""

import http.server
import json
import pathlib
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import urllib.parse

import pytest

from conftest import Platform, http as call, problem, wait_for


DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """A webhook receiver on a free port: keeps every JSON body POSTed to it. With a TLS context
    it speaks https."""

    def __init__(self, tls=None):
        self.bodies = []
        received = self.bodies

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def certificate(tmp_path):
    """A self-signed certificate for 127.0.0.1: (certificate file, key file)."""
    cert, key = tmp_path / "receiver.crt", tmp_path / "receiver.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", "/CN=gpurent test receiver",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True)
    return cert, key


@pytest.fixture
def tls_receiver(certificate):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    r = Receiver(context)
    yield r
    r.close()


@pytest.fixture
def monitored(tmp_path, receiver, tls_receiver, certificate):
    config = tmp_path / "server.toml"
    config.write_text(f"""
[[alerts.rules]]
name = "hot_gpu"
metric = "gpu_temp"
comparison = ">"
threshold = 80
for_s = 30
severity = "critical"

[[alerts.webhooks]]
url = "{receiver.url}/hook"

[[alerts.webhooks]]
url = "{tls_receiver.url}/tls-hook"
ca_file = "{certificate[0]}"

# The receivers listen on loopback, where the server connects only when allowed.
[outbound]
allow = ["127.0.0.1"]
""")
    p = Platform(str(tmp_path), extra_args=["--config", str(config)]).start()
    yield p
    p.shutdown()


def test_a_lost_node_alerts_the_webhooks_and_the_event_log(monitored, receiver, tls_receiver,
                                                           tmp_path):
    token = monitored.call("POST", "/v1/join-tokens", body={"description": "rack 2"})
    assert token.status == 201
    agent = monitored.start_process(
        ["agent", "--server", monitored.url, "--join-token", token.json()["token"],
         "--sim-gpus", "2xa100-80g", "--data-dir", str(tmp_path / "agent2"), "--name", "rack2"],
        "agent2")
    wait_for(lambda: "a100-80g" in monitored.offers(), what="the second agent's GPUs")
    node = next(n for n in monitored.call("GET", "/v1/nodes").json()["items"]
                if n["name"] == "rack2")
    agent.stop(signal.SIGKILL)

    def lost(bodies):
        return [b for b in bodies
                if b["rule"] == "node_heartbeat_lost" and b["subject"]["subject"] == node["id"]]
    posted = wait_for(lambda: lost(receiver.bodies), timeout=45,
                      what="the webhook to get node_heartbeat_lost")
    assert posted[0]["to"] == "firing" and posted[0]["severity"] == "critical"
    alert_id = posted[0]["id"]
    assert alert_id == f"node_heartbeat_lost:{node['id']}"
    # The same transition over https, to the receiver whose certificate the ca_file trusts.
    over_tls = wait_for(lambda: lost(tls_receiver.bodies), timeout=15,
                        what="the https webhook to get node_heartbeat_lost")
    assert over_tls[0] == posted[0]

    alerts = monitored.call("GET", "/v1/alerts").json()
    firing = [a for a in alerts["items"] if a["id"] == alert_id]
    assert firing and firing[0]["state"] == "firing" and not firing[0]["acknowledged"]
    assert any(h["id"] == alert_id and h["to"] == "firing" for h in alerts["history"])
    events = monitored.call("GET", f"/v1/events?kind=alert.firing&object={node['id']}").json()
    assert len(events["items"]) == 1 and events["items"][0]["tenant_id"] is None

    ack = monitored.call("POST", f"/v1/alerts/{urllib.parse.quote(alert_id)}/ack")
    assert ack.status == 200, ack.body
    alerts = monitored.call("GET", "/v1/alerts").json()
    assert [a for a in alerts["items"] if a["id"] == alert_id][0]["acknowledged"]
    problem(monitored.call("POST", "/v1/alerts/hot_gpu:GPU-none/ack"), 404, "alert_not_found")

    # A tenant sees no platform alert, and may not acknowledge one.
    _, key = monitored.new_tenant("watcher")
    assert monitored.call("GET", "/v1/alerts", key=key).json()["items"] == []
    problem(monitored.call("POST", f"/v1/alerts/{alert_id}/ack", key=key), 404, "alert_not_found")


def test_alert_rules_and_metric_queries_refuse_bad_input(monitored):
    rules = monitored.call("GET", "/v1/alerts/rules")
    assert rules.status == 200
    names = {r["name"] for r in rules.json()["items"]}
    assert {"hot_gpu", "node_heartbeat_lost", "gpu_missing", "instance_idle"} <= names

    rule = {"name": "busy_node", "metric": "gpu_util", "comparison": ">", "threshold": 95,
            "for_s": 600, "scope": "gpu_type", "scope_value": "h100-80g"}
    saved = monitored.call("POST", "/v1/alerts/rules", body=rule)
    assert saved.status == 200, saved.body
    assert saved.json()["for_s"] == 600
    problem(monitored.call("POST", "/v1/alerts/rules", body={**rule, "name": "hot_gpu"}), 409,
            "rule_not_editable")
    problem(monitored.call("POST", "/v1/alerts/rules", body={**rule, "comparison": "~"}), 400,
            "invalid_field")
    problem(monitored.call("POST", "/v1/alerts/rules", body={**rule, "colour": "red"}), 400,
            "unknown_field")
    problem(monitored.call("POST", "/v1/alerts/rules", body={**rule, "name": "Bad Name"}), 400,
            "invalid_rule_name")
    problem(monitored.call("POST", "/v1/alerts/rules", body={**rule, "for_s": -1}), 400,
            "invalid_for")
    problem(monitored.call("POST", "/v1/alerts/rules", raw=b"{not json"), 400)
    problem(monitored.call("DELETE", "/v1/alerts/rules/hot_gpu"), 409, "rule_not_editable")
    assert monitored.call("DELETE", "/v1/alerts/rules/busy_node").status == 204
    problem(monitored.call("DELETE", "/v1/alerts/rules/busy_node"), 404)

    _, key = monitored.new_tenant("curious")
    problem(monitored.call("GET", "/v1/alerts/rules", key=key), 403)
    problem(monitored.call("POST", "/v1/alerts/rules", key=key, body=rule), 403)

    node = monitored.call("GET", "/v1/nodes").json()["items"][0]
    q = "/v1/metrics/query?"
    ok = monitored.call("GET", q + f"metric=DCGM_FI_DEV_GPU_UTIL&node={node['id']}&step=5m")
    assert ok.status == 200, ok.body
    assert ok.json()["metric"] == "gpu_util" and len(ok.json()["gpus"]) == 8
    problem(monitored.call("GET", q + f"node={node['id']}"), 400, "invalid_query")
    problem(monitored.call("GET", q + f"metric=warp_drive&node={node['id']}"), 400,
            "invalid_query")
    problem(monitored.call("GET", q + f"metric=gpu_util&node={node['id']}&gpu=GPU-x"), 400,
            "invalid_query")
    problem(monitored.call("GET", q + f"metric=gpu_util&node={node['id']}&step=0"), 400,
            "invalid_query")
    problem(monitored.call("GET", q + f"metric=gpu_util&node={node['id']}&from=yesterday"), 400,
            "invalid_query")
    problem(monitored.call("GET", q + f"metric=gpu_util&node={node['id']}&from=200&to=100"), 400,
            "invalid_range")
    problem(monitored.call("GET", q + f"metric=gpu_util&node={node['id']}&step=1s&from=0"), 400,
            "too_many_points")
    problem(monitored.call("GET", q + f"metric=gpu_util&node={node['id']}", key=key), 404)
    problem(monitored.call("GET", q + "metric=gpu_util&instance=i-nope", key=key), 404)


def test_a_balance_below_its_warning_reaches_the_webhooks(monitored, receiver, tls_receiver):
    tenant_id, key = monitored.new_tenant("running-low")  # a balance of 100
    # A threshold raised above the balance is a crossing too: balance.low at once.
    settings = monitored.call("PUT", "/v1/billing/settings",
                              body={"tenant_id": tenant_id, "warning_threshold_micros": 150_000_000})
    assert settings.status == 200, settings.body
    assert settings.json()["below_warning_threshold"] is True

    def low(bodies):
        return [b for b in bodies if b.get("type") == "event" and b["kind"] == "balance.low"]
    for r in (receiver, tls_receiver):
        posted = wait_for(lambda: low(r.bodies), timeout=30, what="balance.low at " + r.url)
        assert len(posted) == 1
        assert posted[0]["tenant_id"] == tenant_id and posted[0]["object_id"] == tenant_id
    event = monitored.call("GET", "/v1/events?kind=balance.low", key).json()["items"][0]
    assert {k: posted[0][k] for k in event} == event
    # Alert transitions carry their type too; the node alerts of other tests are not events.
    assert all(b["type"] in ("alert", "event") for b in receiver.bodies)


def test_prometheus_scrapes_the_platform_metrics(monitored, tmp_path):
    page = call(monitored.url, path="/metrics")
    assert page.status == 200
    assert page.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = page.body.decode()
    assert 'gpurent_nodes{status="ready"} 1' in text
    assert "# TYPE gpurent_http_request_duration_seconds histogram" in text
    assert "# TYPE gpurent_scheduler_requests_tried_total counter" in text
    assert re.search(r"^gpurent_scheduler_requests_tried_total \d+$", text, re.M), text

    binary = shutil.which("prometheus")
    if not binary:
        pytest.skip("prometheus is not installed (scripts/install-deps.sh test)")
    port = free_port()
    # The shipped config, pointed at this server and scraping every second.
    shipped = (DEPLOY / "prometheus.yml").read_text()
    assert '"127.0.0.1:8080"' in shipped and "scrape_interval: 15s" in shipped
    config = tmp_path / "prometheus.yml"
    config.write_text(shipped.replace('"127.0.0.1:8080"', f'"127.0.0.1:{monitored.port}"')
                      .replace("scrape_interval: 15s", "scrape_interval: 1s"))
    log = open(tmp_path / "prometheus.log", "wb")
    prometheus = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def query(expr):
            try:
                response = call(f"http://127.0.0.1:{port}",
                                path="/api/v1/query?query=" + urllib.parse.quote(expr), timeout=5)
            except OSError:  # not listening yet
                return None
            if response.status != 200:
                return None
            return response.json()["data"]["result"] or None

        up = wait_for(lambda: query('up{job="gpurent"} == 1'), timeout=60,
                      what="Prometheus to scrape gpurent")
        assert up[0]["metric"]["instance"] == f"127.0.0.1:{monitored.port}"
        nodes = wait_for(lambda: query('gpurent_nodes{status="ready"}'), what="gpurent_nodes")
        assert nodes[0]["value"][1] == "1"
        # Its own scrapes are API requests too: the latency histogram has the /metrics route.
        latency = wait_for(lambda: query(
            'gpurent_http_request_duration_seconds_count{route="/metrics",code="2xx"}'),
            what="the API latency histogram")
        assert float(latency[0]["value"][1]) >= 1
        instances = wait_for(lambda: query("gpurent_instances"), what="gpurent_instances")
        assert {r["metric"]["state"] for r in instances} >= {"running", "pending", "stopped"}
        # The GPUs' own series, under the DCGM exporter's names and labels (the dev node's 8
        # simulated H100s, sampled every second by its agent).
        temps = wait_for(lambda: query("DCGM_FI_DEV_GPU_TEMP"), what="DCGM_FI_DEV_GPU_TEMP")
        assert len(temps) == 8
        labels = temps[0]["metric"]
        assert labels["UUID"].startswith("GPU-") and labels["Hostname"] and labels["modelName"]
        assert {r["metric"]["gpu"] for r in temps} == {str(i) for i in range(8)}
        assert all(20 <= float(r["value"][1]) <= 100 for r in temps)
        assert wait_for(lambda: query("DCGM_FI_DEV_POWER_USAGE"), what="DCGM_FI_DEV_POWER_USAGE")
        check_grafana_dashboard(port, query)
    finally:
        prometheus.send_signal(signal.SIGTERM)
        try:
            prometheus.wait(timeout=20)
        except subprocess.TimeoutExpired:
            prometheus.kill()
            prometheus.wait()
        log.close()


def check_grafana_dashboard(prometheus_port, query):
    """What Grafana would do with deploy/grafana-gpurent.json against this Prometheus (Grafana
    itself is not packaged for Debian): the variables resolve, every panel's query evaluates to
    series, and the labels its legend names are on them."""
    dashboard = json.loads((DEPLOY / "grafana-gpurent.json").read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    # The node picker: label_values(METRIC, LABEL) is Grafana's call of the label values API.
    picker = re.fullmatch(r"label_values\((\w+), *(\w+)\)", variables["node"]["query"]["query"])
    assert picker, variables["node"]["query"]
    metric, label = picker.groups()
    values = call(f"http://127.0.0.1:{prometheus_port}",
                  path=f"/api/v1/label/{label}/values?match[]={metric}", timeout=5).json()
    assert values["status"] == "success" and len(values["data"]) == 1, values  # the dev node
    node_choice = variables["node"]["allValue"]  # "All", as the dashboard opens

    panel_ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(set(panel_ids)) == len(panel_ids)
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert {"x", "y", "w", "h"} <= panel["gridPos"].keys(), panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"].replace("$node", node_choice)
            assert "$" not in expr, (panel["title"], expr)  # no variable left unresolved
            # Rates need two scrapes in their window; the scrapes come every second.
            series = wait_for(lambda: query(expr), timeout=30,
                              what=f"panel '{panel['title']}': {expr}")
            for name in re.findall(r"\{\{ *(\w+) *\}\}", target.get("legendFormat", "")):
                assert all(name in s["metric"] for s in series), (panel["title"], name, series[0])


def test_cli_lists_alerts_sets_rules_and_queries_metrics(monitored):
    rules = monitored.cli("alerts", "rules").stdout
    assert "hot_gpu" in rules and "node_heartbeat_lost" in rules
    monitored.cli("alerts", "rule", "set", "warm", "--metric", "gpu_temp", "--comparison", ">",
                  "--threshold", "70", "--for", "60", "--severity", "info")
    listed = json.loads(monitored.cli("alerts", "rules", "-o", "json").stdout)
    assert {"name": "warm", "metric": "gpu_temp", "comparison": ">", "threshold": 70.0,
            "for_s": 60.0, "severity": "info", "scope": "all"} in listed
    assert "removed" in monitored.cli("alerts", "rule", "rm", "warm").stdout
    failed = monitored.cli("alerts", "rule", "rm", "hot_gpu", check=False)
    assert failed.returncode != 0 and "rule_not_editable" in failed.stderr + failed.stdout
    assert "ID" in monitored.cli("alerts").stdout
    node = monitored.call("GET", "/v1/nodes").json()["items"][0]["id"]
    # The node's agent samples its idle simulated GPUs every second: the average over its 8 GPUs
    # (series) is an idle GPU's utilisation.
    answer = wait_for(lambda: (lambda a: a if a["points"] else None)(json.loads(
        monitored.cli("metrics", "query", "gpu_util", "--node", node, "--step", "5m",
                      "-o", "json").stdout)), what="GPU utilisation points")
    assert answer["metric"] == "gpu_util"
    assert answer["points"][-1]["series"] == 8 and answer["points"][-1]["value"] == 0.0
    bad = monitored.cli("metrics", "query", "gpu_util", check=False)
    assert bad.returncode != 0 and "invalid_query" in bad.stderr + bad.stdout
