"""The web console (docs/api.md, "The web console"): its files and headers, its sessions over
plain HTTP, and the pages driven in a real headless Chromium (tests/e2e/browser.py) as tenants and
operators use them. Screenshots of each page go to $GPURENT_ARTIFACTS (default: the test's temp
directory) and are checked not to be blank."""

import gzip
import os
import re

import pytest

from browser import Browser
from conftest import http, problem, wait_for
from test_jupyter import launch_jupyter


def sign_in(platform, key, headers=None):
    """POST /v1/session: (the session's JSON, the cookie's value, the Set-Cookie header)."""
    response = http(platform.url, "POST", "/v1/session", body={"key": key}, headers=headers)
    assert response.status == 201, response.body
    set_cookie = response.headers["Set-Cookie"]
    value = re.match(r"gpurent_console=([^;]+);", set_cookie).group(1)
    return response.json(), value, set_cookie


def with_cookie(cookie, csrf=None, **more):
    headers = {"Cookie": f"gpurent_console={cookie}", **more}
    if csrf:
        headers["X-CSRF-Token"] = csrf
    return headers


def test_the_console_is_served_compressed_revalidated_and_locked_down(platform):
    page = http(platform.url, path="/", headers={"Accept-Encoding": "gzip, deflate"})
    assert page.status == 200
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert page.headers["Content-Encoding"] == "gzip"
    html = gzip.decompress(page.body).decode()
    assert '<script type="module" src="/console/app.js">' in html
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert page.headers["X-Frame-Options"] == "DENY"
    assert page.headers["X-Content-Type-Options"] == "nosniff"

    # Without gzip, the same bytes plain; with the ETag the browser has, 304 and no body.
    plain = http(platform.url, path="/")
    assert "Content-Encoding" not in plain.headers and plain.body.decode() == html
    etag = plain.headers["ETag"]
    again = http(platform.url, path="/", headers={"If-None-Match": etag})
    assert again.status == 304 and again.body == b""

    script = http(platform.url, path="/console/app.js")
    assert script.status == 200
    assert script.headers["Content-Type"] == "text/javascript; charset=utf-8"
    chart = http(platform.url, path="/console/uPlot.iife.min.js")
    assert chart.status == 200 and b"uPlot" in chart.body
    problem(http(platform.url, path="/console/nothing.js"), 404, "file_not_found")
    problem(http(platform.url, path="/console/..%2fapp.js"), 404)


def test_a_session_cookie_authenticates_reads_and_needs_its_csrf_token_to_change_anything(
        platform):
    tenant_id, key = platform.new_tenant("cookie-co")
    session, cookie, set_cookie = sign_in(platform, key)
    assert session["tenant_id"] == tenant_id and session["role"] == "tenant-admin"
    assert session["csrf_token"] and session["session_of"]
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and "Path=/" in set_cookie
    assert "Secure" not in set_cookie  # plain HTTP here
    assert cookie not in str(session)  # the secret is in the cookie only

    # Reads: the cookie is enough.
    whoami = http(platform.url, path="/v1/whoami", headers=with_cookie(cookie))
    assert whoami.status == 200 and whoami.json()["tenant_id"] == tenant_id
    current = http(platform.url, path="/v1/session", headers=with_cookie(cookie))
    assert current.json()["csrf_token"] == session["csrf_token"]
    # An API key has no session to describe.
    problem(http(platform.url, path="/v1/session", key=key), 404, "session_not_found")

    # Changes: only with the session's CSRF token, and not from another origin.
    body = {"name": "from-console"}
    problem(http(platform.url, "POST", "/v1/api-keys", body=body, headers=with_cookie(cookie)),
            403, "csrf_token_invalid")
    problem(http(platform.url, "POST", "/v1/api-keys", body=body,
                 headers=with_cookie(cookie, "0" * 64)), 403, "csrf_token_invalid")
    problem(http(platform.url, "POST", "/v1/api-keys", body=body,
                 headers=with_cookie(cookie, session["csrf_token"],
                                     Origin="http://evil.example")), 403, "cross_origin")
    made = http(platform.url, "POST", "/v1/api-keys", body=body,
                headers=with_cookie(cookie, session["csrf_token"], Origin=platform.url))
    assert made.status == 201, made.body
    # Exec and copies go through the services proxy, which checks the session the same way.
    exec_body = {"command": ["true"]}
    problem(http(platform.url, "POST", "/v1/instances/i-none/exec", body=exec_body,
                 headers=with_cookie(cookie)), 403, "csrf_token_invalid")
    problem(http(platform.url, "POST", "/v1/instances/i-none/exec", body=exec_body,
                 headers=with_cookie(cookie, session["csrf_token"])), 404)

    # The tenant's keys: the one it signed in with and the new one; sessions are not keys.
    keys = http(platform.url, path="/v1/api-keys", key=key).json()["items"]
    assert {k["id"] for k in keys} == {session["session_of"], made.json()["id"]}

    # Signing out revokes the session: the cookie authenticates nothing after.
    out = http(platform.url, "DELETE", "/v1/session",
               headers=with_cookie(cookie, session["csrf_token"]))
    assert out.status == 204
    assert "Max-Age=0" in out.headers["Set-Cookie"]
    problem(http(platform.url, path="/v1/whoami", headers=with_cookie(cookie)), 401)


def test_revoking_a_key_ends_its_sessions_and_sign_in_refuses_bad_input(platform):
    tenant_id, key = platform.new_tenant("revoke-co")
    session, cookie, _ = sign_in(platform, key)
    behind_tls = sign_in(platform, key, headers={"X-Forwarded-Proto": "https"})[2]
    assert "; Secure" in behind_tls

    # Another tenant cannot see, let alone revoke, the key.
    _, other = platform.new_tenant("revoke-other")
    problem(http(platform.url, "DELETE", f"/v1/api-keys/{session['session_of']}", key=other),
            404, "api_key_not_found")
    # Nor can a session be revoked as if it were a key, except by itself (signing out).
    problem(http(platform.url, "DELETE", f"/v1/api-keys/{session['key_id']}", key=key), 404)

    revoked = http(platform.url, "DELETE", f"/v1/api-keys/{session['session_of']}", key=key)
    assert revoked.status == 204
    problem(http(platform.url, path="/v1/whoami", key=key), 401)
    problem(http(platform.url, path="/v1/whoami", headers=with_cookie(cookie)), 401)
    problem(http(platform.url, "POST", "/v1/session", body={"key": key}), 401)
    # ... and it stays revoked across a restart (the revocation is stored).
    platform.restart()
    problem(http(platform.url, path="/v1/whoami", key=key), 401)
    listed = platform.call("GET", f"/v1/api-keys?tenant={tenant_id}")
    assert listed.status == 200 and listed.json()["items"] == []

    problem(http(platform.url, "POST", "/v1/session", raw=b"{not json"), 400)
    problem(http(platform.url, "POST", "/v1/session", body={"key": "x", "more": 1}), 400,
            "unknown_field")
    problem(http(platform.url, "POST", "/v1/session", body={"key": "gpr_" + "x" * 300}), 401)
    problem(http(platform.url, "POST", "/v1/session", body={"key": platform.admin_key},
                 headers={"Origin": "http://evil.example"}), 403, "cross_origin")


def test_a_session_survives_a_restart_of_the_server(platform):
    _, key = platform.new_tenant("restart-co")
    _, cookie, _ = sign_in(platform, key)
    platform.restart()
    assert http(platform.url, path="/v1/whoami", headers=with_cookie(cookie)).status == 200


# --- In a real browser ----------------------------------------------------------------------

@pytest.fixture
def browser():
    b = Browser()
    yield b
    b.close()


@pytest.fixture
def artifacts(tmp_path):
    directory = os.environ.get("GPURENT_ARTIFACTS") or str(tmp_path / "screenshots")
    os.makedirs(directory, exist_ok=True)
    return directory


def browser_sign_in(browser, platform, key):
    browser.goto(platform.url + "/")
    browser.wait("document.body.dataset.ready === 'true'", what="the console to start")
    browser.type("#api-key", key)
    browser.click("button[type=submit]")
    browser.wait("document.querySelector('#sign-out')", what="the signed-in page")


def test_a_tenant_signs_in_launches_watches_it_run_reads_its_logs_and_stops_it(
        platform, browser, artifacts):
    _, key = platform.new_tenant("browser-co")
    browser.goto(platform.url + "/")
    browser.wait("document.querySelector('#api-key')", what="the sign-in form")
    browser.screenshot(os.path.join(artifacts, "signin.png"))
    browser_sign_in(browser, platform, key)
    browser.wait_text("#tile-balance", "100")
    browser.screenshot(os.path.join(artifacts, "dashboard.png"))

    # The GPUs measured at join (the catalog's BF16 at the simulated 70 %, marked simulated).
    measured = wait_for(lambda: platform.offers()["h100-80g"]["measured"],
                        what="the H100s' figures")
    browser.click("a[data-nav=offers]")
    browser.wait_text("#offers", "H100")
    browser.wait_text("#offers", f"{measured['figures']['training_tflops']:.1f} *")
    assert "TFLOPS" in browser.eval("document.querySelector('#offers thead').textContent")
    browser.screenshot(os.path.join(artifacts, "offers.png"))

    # The wizard prices the request as it is filled in, and names the field the API refuses.
    browser.click("a[data-nav=launch]")
    browser.wait("document.querySelector('#f-gpu_type')?.options.length > 0")
    browser.type("#f-name", "from-browser")
    browser.type("#f-command", "echo hello-from-console; sleep 600")
    browser.type("#f-gpu_count", "2")
    browser.wait_text("#estimate", "/")
    browser.type("#f-gpu_count", "9")
    browser.wait_text("#e-gpu_count", "gpu_count")
    browser.type("#f-gpu_count", "1")
    browser.wait("document.querySelector('#e-gpu_count').textContent === ''")
    # Epochs of ResNet-50 are timed from the type's recorded figures: none here yet, so the
    # wizard says so and still prices the hour.
    browser.type("#f-epochs", "90")
    browser.wait_text("#estimate-work", "ResNet-50")
    browser.wait_text("#estimate", "/")
    browser.type("#f-epochs", "0")
    browser.wait("!document.querySelector('#estimate-work')")
    browser.screenshot(os.path.join(artifacts, "launch.png"))
    # A VM asked for where no node runs VMs: its SSH keys checked first (the field appears with
    # the VM), then refused, saying what node it needs.
    assert browser.eval("document.querySelector('[data-field=ssh_keys]').hidden")
    browser.select("#f-runtime", "vm")
    browser.wait("!document.querySelector('[data-field=ssh_keys]').hidden")
    browser.type("#f-ssh_keys", "not a key")
    browser.click("#launch button[type=submit]")
    browser.wait_text("#launch-result", "ssh_keys[0]")
    browser.type("#f-ssh_keys", "ssh-ed25519 "
                 "AAAAC3NzaC1lZDI1NTE5AAAAICwa4sBUcPlIif1WN+56sNJou2Z1eM/g65b0pLsYOSty me@laptop")
    browser.click("#launch button[type=submit]")
    browser.wait_text("#launch-result", "gpurent.io/vm-runtime")
    browser.select("#f-runtime", "")
    browser.click("#launch button[type=submit]")
    instance_id = browser.wait("(location.hash.match(/#\\/instances\\/(i-[^/]+)$/) || [])[1]",
                               what="the new instance's page")
    assert platform.instance(instance_id, key)["name"] == "from-browser"
    assert platform.instance(instance_id, key)["runtime"] == "process"

    platform.wait_state(instance_id, "running", key)
    browser.eval("location.hash = '#/instances'")
    browser.wait(f"document.querySelector('tr[data-id=\"{instance_id}\"] .state-running')",
                 what="the list to show it running")
    browser.screenshot(os.path.join(artifacts, "instances.png"))

    browser.eval(f"location.hash = '#/instances/{instance_id}'")
    browser.wait_text("#logs", "hello-from-console")
    # The simulated GPU's samples reach the charts (uPlot draws them on a canvas).
    browser.wait("Number(document.querySelector('.chart[data-metric=gpu_util]')?.dataset.points) > 0"
                 " && !!document.querySelector('.chart[data-metric=gpu_util] canvas')",
                 timeout=60, what="the utilisation chart to have data")
    # The terminal runs each line through the exec API and streams what it prints.
    browser.type("#terminal-input", "echo $((6*7)); echo oops >&2; exit 3")
    browser.press("#terminal-input", "Enter")
    browser.wait_text("#terminal-output", "[exit 3]")
    assert "42" in browser.text("#terminal-output")
    assert browser.text("#terminal-output .stderr") == "oops\n"
    browser.screenshot(os.path.join(artifacts, "instance.png"))

    browser.click("button[data-action=stop]")
    platform.wait_state(instance_id, "stopped", key)
    assert any("from-browser" in message for message in browser.dialogs)

    # The bill: usage by GPU type and billing mode, and this month's invoice as CSV.
    browser.click("a[data-nav=billing]")
    browser.wait("document.querySelector('#usage-chart .bar-row[data-gpu-type=\"h100-80g\"]')",
                 what="the usage chart")
    downloads = os.path.join(artifacts, "downloads")
    os.makedirs(downloads, exist_ok=True)
    browser.allow_downloads(downloads)
    month = browser.eval("document.querySelector('a[data-invoice]').dataset.invoice")
    browser.click("a[data-invoice]")
    saved = os.path.join(downloads, f"gpurent-invoice-{month}.csv")
    wait_for(lambda: os.path.exists(saved) and os.path.getsize(saved) > 0, what="the invoice CSV")
    with open(saved) as f:
        csv = f.read()
    assert csv.splitlines()[0].startswith("invoice,tenant_id,category,"), csv[:200]
    assert "h100-80g" in csv
    browser.screenshot(os.path.join(artifacts, "billing.png"))
    assert browser.errors == []


def test_the_language_switch_translates_every_page_and_is_remembered(
        platform, browser, artifacts):
    _, key = platform.new_tenant("language-co")
    browser_sign_in(browser, platform, key)
    assert browser.eval("import('/console/i18n.js').then(m => m.missingTranslations())") == []
    assert browser.text("a[data-nav=instances]") == "Instances"
    browser.select("#language", "zh-CN")
    browser.wait_text("a[data-nav=instances]", "实例")
    assert browser.eval("document.documentElement.lang") == "zh-CN"
    browser.eval("location.hash = '#/offers'")
    browser.reload()
    browser.wait("document.body.dataset.ready === 'true'")
    browser.wait_text("a[data-nav=offers]", "GPU 资源")
    browser.wait_text("#offers", "H100")
    browser.screenshot(os.path.join(artifacts, "offers-zh.png"))
    browser.select("#language", "en")
    browser.wait_text("a[data-nav=offers]", "GPUs")
    assert browser.errors == []


def test_text_that_looks_like_html_renders_inert(platform, browser, artifacts):
    _, key = platform.new_tenant("markup-co")
    name = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    made = platform.call("POST", "/v1/api-keys", key=key, body={"name": name})
    assert made.status == 201, made.body
    browser_sign_in(browser, platform, key)
    browser.click("a[data-nav=keys]")
    browser.wait_text("main table", name)
    assert browser.eval("document.querySelectorAll('main img, main script').length") == 0
    browser.pump(0.5)
    assert browser.dialogs == []
    browser.screenshot(os.path.join(artifacts, "keys.png"))
    assert browser.errors == []


def test_signing_out_in_the_browser_ends_the_session(platform, browser):
    _, key = platform.new_tenant("signout-co")
    browser_sign_in(browser, platform, key)
    browser.click("#sign-out")
    browser.wait("document.querySelector('#api-key')", what="the sign-in form again")
    browser.goto(platform.url + "/")
    browser.wait("document.body.dataset.ready === 'true'")
    assert browser.eval("!!document.querySelector('#api-key')")
    assert browser.errors == []


def test_an_operator_drains_a_node_from_the_console(platform, browser, artifacts):
    _, key = platform.new_tenant("drain-co")
    launched = platform.call("POST", "/v1/instances", key=key, body={
        "gpu_type": "h100-80g", "gpu_count": 1, "command": ["sleep", "600"]})
    assert launched.status == 201, launched.body
    instance_id = launched.json()["id"]
    platform.wait_state(instance_id, "running", key)

    browser_sign_in(browser, platform, platform.admin_key)
    browser.click("a[data-nav=nodes]")
    browser.wait("document.querySelector('.heat .gpu.held')", what="the heatmap to show the GPU held")
    browser.screenshot(os.path.join(artifacts, "nodes.png"))
    browser.click("button[data-action=drain]")
    browser.wait_text("main .notice", "1")
    wait_for(lambda: platform.call("GET", "/v1/nodes").json()["items"][0]["status"]
             in ("draining", "cordoned"), what="the node to be cordoned")
    # The only node is cordoned: the instance it moved waits for another.
    platform.wait_state(instance_id, "pending", key)
    browser.wait("document.querySelector('button[data-action=uncordon]')")
    browser.click("button[data-action=uncordon]")
    platform.wait_state(instance_id, "running", key)
    assert browser.errors == []


def test_a_start_waiting_for_its_node_is_let_go_from_the_console(platform, browser, artifacts):
    _, key = platform.new_tenant("homebody-co")

    def launch(gpus):
        launched = platform.call("POST", "/v1/instances", key=key, body={
            "gpu_type": "h100-80g", "gpu_count": gpus, "command": ["sleep", "600"]})
        assert launched.status == 201, launched.body
        platform.wait_state(launched.json()["id"], "running", key)
        return launched.json()["id"]

    instance_id = launch(1)
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status == 202
    node_id = platform.wait_state(instance_id, "stopped", key)["node_id"]
    launch(8)  # its node is full now
    assert platform.call("POST", f"/v1/instances/{instance_id}/start", key).status == 202
    assert platform.instance(instance_id, key)["start_on_node"] == node_id

    browser_sign_in(browser, platform, key)
    browser.eval(f"location.hash = '#/instances/{instance_id}'")
    browser.wait_text("main .details", "keeps its files")
    browser.screenshot(os.path.join(artifacts, "instance-waiting-for-its-node.png"))
    browser.click("button[data-action=start_anywhere]")
    wait_for(lambda: platform.instance(instance_id, key)["start_on_node"] is None,
             what="the start to be let go")
    assert any(node_id in message for message in browser.dialogs), browser.dialogs
    browser.wait("!document.querySelector('button[data-action=start_anywhere]')",
                 what="the page to drop the button")
    assert browser.errors == []


def test_a_job_array_shows_its_tasks_and_each_members_log(platform, browser, artifacts):
    _, key = platform.new_tenant("jobs-co")
    job = platform.call("POST", "/v1/jobs", key=key, body={
        "name": "sweep", "gpu_type": "h100-80g", "gpu_count": 1, "array": 2,
        "command": ["sh", "-c", "echo task-$GPURENT_ARRAY_INDEX-says-hi"]})
    assert job.status == 201, job.body
    job_id = job.json()["id"]
    wait_for(lambda: platform.call("GET", f"/v1/jobs/{job_id}", key=key).json()["state"]
             == "succeeded", what="the job to succeed")
    browser_sign_in(browser, platform, key)
    browser.click("a[data-nav=jobs]")
    browser.wait(f"document.querySelector('tr[data-id=\"{job_id}\"]')")
    browser.wait_text(f"tr[data-id=\"{job_id}\"]", "succeeded 2")
    browser.click(f"tr[data-id=\"{job_id}\"] a")
    browser.click("button[data-task='1'][data-rank='0']")
    browser.wait_text("#task-log", "task-1-says-hi")
    browser.screenshot(os.path.join(artifacts, "job.png"))
    assert browser.errors == []


def test_an_operator_tops_up_a_tenant_and_reads_alerts_and_prices(platform, browser, artifacts):
    tenant_id, _ = platform.new_tenant("topped-co", topup_micros=0)
    browser_sign_in(browser, platform, platform.admin_key)
    browser.click("a[data-nav=tenants]")
    row = "tr[data-tenant='topped-co']"
    browser.wait(f"document.querySelector(\"{row}\")")
    browser.type(f"{row} input[name=amount]", "12.5")
    browser.click(f"{row} form button")
    wait_for(lambda: platform.call("GET", f"/v1/billing/balance?tenant={tenant_id}")
             .json()["balance_micros"] == 12_500_000, what="the top-up")
    browser.wait_text(row, "12.50")
    browser.screenshot(os.path.join(artifacts, "tenants.png"))
    browser.click("a[data-nav=alerts]")
    browser.wait_text("main", "node_heartbeat_lost")  # a built-in rule
    browser.type("#rule-form input[name=name]", "hot_h100")
    browser.click("#rule-form button")
    browser.wait("!!document.querySelector('tr[data-rule=hot_h100]')")
    rules = platform.call("GET", "/v1/alerts/rules").json()
    rule = next(r for r in (rules if isinstance(rules, list) else rules["items"])
                if r["name"] == "hot_h100")
    assert (rule["metric"], rule["comparison"], rule["threshold"]) == ("gpu_temp", ">", 85)
    browser.screenshot(os.path.join(artifacts, "alerts.png"))

    browser.click("a[data-nav=prices]")
    browser.wait_text("main table", "h100-80g")
    browser.select("#price-form select[name=gpu_type]", "h100-80g")
    browser.type("#price-form input[name=price]", "20")
    browser.click("#price-form button")
    wait_for(lambda: platform.call("GET", "/v1/prices").json()["current"]["gpu_per_hour_micros"]
             ["h100-80g"] == 20_000_000, what="the new price")
    browser.wait_text("main table", "20.00")
    browser.screenshot(os.path.join(artifacts, "prices.png"))
    assert browser.errors == []


def test_open_jupyter_signs_the_browser_into_the_notebook(platform, browser, artifacts):
    _, key = platform.new_tenant("notebook-co")
    instance_id = launch_jupyter(platform, key)
    browser_sign_in(browser, platform, key)
    browser.eval(f"location.hash = '#/instances/{instance_id}'")
    # The console opens the notebook in a new tab; here the tab is this one.
    browser.wait("!!document.querySelector('#open-jupyter')")
    browser.eval("window.open = (url) => { window.openedUrl = url; }")
    browser.click("#open-jupyter")
    opened = browser.wait("window.openedUrl", what="the notebook's address")
    assert opened.startswith(f"/i/{instance_id}/jupyter/?login=")
    browser.goto(platform.url + opened)
    browser.wait("document.title.includes('Jupyter') || document.title.includes('Home')",
                 timeout=60, what="Jupyter's page")
    assert f"/i/{instance_id}/jupyter/" in browser.eval("location.pathname")
    assert "login=" not in browser.eval("location.search")  # the ticket is spent on the cookie
    browser.screenshot(os.path.join(artifacts, "jupyter.png"))


def test_a_tenant_books_capacity_buys_a_package_and_mounts_a_volume(platform, browser, artifacts):
    product = platform.call("PUT", "/v1/packages/products", body={
        "name": "h100-10h", "gpu_type": "h100-80g", "gpu_hours": 10, "price_micros": 100_000_000,
        "validity_days": 30})
    assert product.status == 200, product.body
    tenant_id, key = platform.new_tenant("planner-co", topup_micros=2_000_000_000)
    browser_sign_in(browser, platform, key)

    # A volume, made on its page, then mounted from the wizard.
    browser.click("a[data-nav=volumes]")
    browser.type("#volume-form input[name=name]", "datasets")
    browser.click("#volume-form button")
    browser.wait("!!document.querySelector('tr[data-volume=datasets]')")
    volume_id = platform.call("GET", "/v1/volumes", key=key).json()["items"][0]["id"]
    browser.click("a[data-nav=launch]")
    browser.wait(f"!!document.querySelector('input[name=mount][value=\"{volume_id}\"]')")
    browser.click(f"input[name=mount][value=\"{volume_id}\"]")
    browser.type("#f-command", "ls -d /mnt/datasets && sleep 600")
    browser.click("#launch button[type=submit]")
    instance_id = browser.wait("(location.hash.match(/#\\/instances\\/(i-[^/]+)$/) || [])[1]",
                               what="the new instance's page")
    instance = platform.instance(instance_id, key)
    assert instance["volumes"] == [{"volume_id": volume_id, "mount_path": "/mnt/datasets"}]

    # A reservation: quoted, then booked and paid, then cancelled (refunded before its window).
    browser.click("a[data-nav=reservations]")
    browser.type("#reservation-form input[name=start]", "2030-01-01T08:00")
    browser.type("#reservation-form input[name=hours]", "10")
    browser.click("#quote")
    browser.wait_text("#reservation-quote", "CN¥")
    assert platform.call("GET", "/v1/reservations", key=key).json()["items"] == []
    browser.click("#reservation-form button[type=submit]")
    booked = wait_for(lambda: platform.call("GET", "/v1/reservations", key=key).json()["items"],
                      what="the booking")
    assert len(booked) == 1 and booked[0]["gpu_count"] == 1 and booked[0]["state"] == "booked"
    browser.screenshot(os.path.join(artifacts, "reservations.png"))

    # A package, bought once however the button is pressed (Idempotency-Key per purchase).
    browser.click("a[data-nav=billing]")
    browser.click("button[data-buy='h100-10h']")
    browser.wait("!!document.querySelector('tr[data-package=\"h100-10h\"]')")
    packages = platform.call("GET", f"/v1/packages?tenant={tenant_id}").json()["items"]
    assert [p["product"] for p in packages] == ["h100-10h"]
    assert any("h100-10h" in message for message in browser.dialogs)
    assert browser.errors == []
