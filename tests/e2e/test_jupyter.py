"""Jupyter through the server, and `gpurent exec`: Debian's jupyter-notebook launched as a
process-runtime instance that serves the service "jupyter", reached only through the server's
/i/<id>/jupyter/ proxy (HTTP and the kernel's WebSocket), with the tenant's API key or a browser
session from a login ticket; another tenant sees nothing."""

import http.client as http_client
import json
import shutil
import subprocess
import urllib.parse
import uuid

import pytest
import websocket  # python3-websocket (websocket-client)

from conftest import BINARY, Response, http, problem, wait_for

JUPYTER_START_TIMEOUT_S = 60


def launch_jupyter(platform, key):
    """One click: `gpurent launch --template jupyter`, on `gpurent dev` its process form (Debian's
    Jupyter Notebook on the node's loopback, with the node's token and base URL)."""
    assert shutil.which("jupyter-notebook"), "jupyter-notebook is missing: scripts/install-deps.sh test"
    created = json.loads(platform.cli("launch", "--gpu", "h100-80g", "--template", "jupyter",
                                      "-o", "json", key=key).stdout)
    instance_id = created["id"]
    assert created["services"] == ["jupyter"] and created["template"] == "jupyter"
    platform.wait_state(instance_id, "running", key)
    # Jupyter takes a few seconds to listen; until then the node answers 502.
    wait_for(lambda: http(platform.url, path=f"/i/{instance_id}/jupyter/api/status",
                          key=key).status == 200,
             JUPYTER_START_TIMEOUT_S, "Jupyter to answer through the proxy")
    return instance_id


def raw_get(url, path):
    """A GET that does not follow redirects (urllib's opener would)."""
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    connection = http_client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return Response(response.status, dict(response.getheaders()), response.read())
    finally:
        connection.close()


def execute(ws_url, headers, code):
    """Runs `code` on the kernel over its channels WebSocket; returns the execute_result data."""
    ws = websocket.create_connection(ws_url, header=headers, timeout=30)
    try:
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        while True:
            message = json.loads(ws.recv())
            if (message.get("parent_header", {}).get("msg_id") == msg_id and
                    message["msg_type"] == "execute_result"):
                return message["content"]["data"]
    finally:
        ws.close()


def test_jupyter_through_the_proxy_runs_a_kernel_and_isolates_tenants(platform):
    tenant_id, key = platform.new_tenant("alice")
    _, other_key = platform.new_tenant("mallory")
    instance_id = launch_jupyter(platform, key)
    base = f"/i/{instance_id}/jupyter"

    # HTTP through the proxy: a kernel is created with the tenant's key (no Jupyter token, no XSRF).
    kernel = platform.call("POST", f"{base}/api/kernels", key, body={"name": "python3"})
    assert kernel.status == 201, kernel.body
    kernel_id = kernel.json()["id"]
    # The query string reaches Jupyter (a content listing with type=directory).
    listing = platform.call("GET", f"{base}/api/contents?type=directory&content=1", key)
    assert listing.status == 200 and listing.json()["type"] == "directory", listing.body

    # The kernel's WebSocket, proxied end to end.
    ws_url = platform.url.replace("http://", "ws://") + f"{base}/api/kernels/{kernel_id}/channels"
    data = execute(ws_url, [f"Authorization: Bearer {key}"], "1+1")
    assert data["text/plain"] == "2"

    # Another tenant's key: as if the instance did not exist; no key at all: 401.
    problem(platform.call("GET", f"{base}/api/status", other_key), 404)
    problem(platform.call("POST", f"{base}/api/kernels", other_key, body={}), 404)
    problem(http(platform.url, path=f"{base}/api/status"), 401, "unauthenticated")
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        execute(ws_url, [f"Authorization: Bearer {other_key}"], "1+1")
    assert refused.value.status_code == 404
    # An unknown service of one's own instance, and a path without the slash after the service.
    problem(platform.call("GET", f"/i/{instance_id}/tensorboard/", key), 404, "service_not_found")
    redirect = platform.call("GET", f"{base}?x=1", key)
    assert redirect.status == 200  # urllib follows the 308 to the base URL

    # The browser path: `gpurent jupyter` prints a URL with a login ticket; opening it sets the
    # session cookie (HttpOnly, scoped to the instance) and redirects to the clean URL.
    printed = platform.cli("jupyter", instance_id, key=key).stdout.strip()
    assert printed.startswith(f"{platform.url}{base}/?login=")
    parsed = urllib.parse.urlsplit(printed)
    login = raw_get(platform.url, f"{parsed.path}?{parsed.query}")
    assert login.status == 303, login.body
    assert login.headers["Location"] == f"{base}/"
    cookie_header = login.headers["Set-Cookie"]
    assert "HttpOnly" in cookie_header and f"Path=/i/{instance_id}/" in cookie_header
    cookie = cookie_header.split(";", 1)[0]
    page = http(platform.url, path=f"{base}/api/status", headers={"Cookie": cookie})
    assert page.status == 200, page.body
    host = platform.url.split("://", 1)[1]
    data = execute(ws_url, [f"Cookie: {cookie}"], "21*2")
    assert data["text/plain"] == "42"
    # The cookie is only good from the server's own origin, for its own instance.
    problem(http(platform.url, path=f"{base}/api/status",
                 headers={"Cookie": cookie, "Origin": "http://evil.example"}), 403, "cross_origin")
    assert http(platform.url, path=f"{base}/api/status",
                headers={"Cookie": cookie, "Origin": f"http://{host}"}).status == 200
    # A ticket is not a session, a tampered one is refused, and another tenant's ticket cannot
    # open this instance.
    ticket = urllib.parse.parse_qs(parsed.query)["login"][0]
    problem(http(platform.url, path=f"{base}/api/status",
                 headers={"Cookie": f"gpurent_session={ticket}"}), 401, "invalid_session")
    tampered = ticket[:-1] + ("0" if ticket[-1] != "0" else "1")
    problem(raw_get(platform.url, f"{base}/?login={tampered}"), 401, "invalid_session")
    forged = ticket.replace(tenant_id, "t-someoneelse")
    problem(raw_get(platform.url, f"{base}/?login={forged}"), 401, "invalid_session")
    other = platform.cli("jupyter", instance_id, key=other_key, check=False)
    assert other.returncode == 1 and "not_found" in other.stderr
    # Another tenant's genuine ticket and session (for an instance of their own) open nothing here.
    created = platform.call("POST", "/v1/instances", other_key, body={
        "gpu_type": "h100-80g", "services": ["jupyter"], "command": "sleep 600"})
    assert created.status == 201, created.body
    theirs = created.json()["id"]
    their_path = platform.cli("jupyter", theirs, key=other_key).stdout.strip()
    their_ticket = urllib.parse.parse_qs(urllib.parse.urlsplit(their_path).query)["login"][0]
    problem(raw_get(platform.url, f"{base}/?login={their_ticket}"), 404)
    their_login = raw_get(platform.url, urllib.parse.urlsplit(their_path).path + "?login=" +
                          their_ticket)
    assert their_login.status == 303, their_login.body
    their_cookie = their_login.headers["Set-Cookie"].split(";", 1)[0]
    problem(http(platform.url, path=f"{base}/api/status", headers={"Cookie": their_cookie}), 404)

    # A restart of the server and its agent (gpurent dev is both) heals by itself: Jupyter keeps
    # running, the restarted agent re-adopts it with its port and token, states its new node API
    # secret in its next report, and the same session cookie works again (the key is on disk).
    platform.restart()
    wait_for(lambda: http(platform.url, path=f"{base}/api/status",
                          headers={"Cookie": cookie}).status == 200,
             what="the proxy to heal after a restart")
    kernels = platform.call("GET", f"{base}/api/kernels", key)
    assert [k["id"] for k in kernels.json()] == [kernel_id]  # the same Jupyter, not a new one
    ws_url = platform.url.replace("http://", "ws://") + f"{base}/api/kernels/{kernel_id}/channels"
    assert execute(ws_url, [f"Authorization: Bearer {key}"], "6*7")["text/plain"] == "42"

    # Stopped: the proxy says so instead of hanging.
    assert platform.call("POST", f"/v1/instances/{instance_id}/stop", key).status == 202
    platform.wait_state(instance_id, "stopped", key)
    problem(platform.call("GET", f"{base}/api/status", key), 409, "instance_not_running")


def test_exec_streams_output_and_exits_with_the_commands_status(platform):
    _, key = platform.new_tenant("alice")
    _, other_key = platform.new_tenant("mallory")
    created = platform.call("POST", "/v1/instances", key,
                            body={"gpu_type": "h100-80g", "command": "sleep 600",
                                  "env": {"GREETING": "hello"}})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    platform.wait_state(instance_id, "running", key)

    env = platform.cli_env(key)
    result = subprocess.run([BINARY, "exec", instance_id, "--", "sh", "-c",
                             "echo out; echo err >&2; echo $GREETING; exit 3"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stdout == "out\nhello\n"
    assert result.stderr == "err\n"

    # The raw stream: NDJSON frames, the exit status last; it runs in the instance's directory.
    streamed = platform.call("POST", f"/v1/instances/{instance_id}/exec", key,
                             body={"command": ["sh", "-c", "pwd"]})
    assert streamed.status == 200, streamed.body
    assert streamed.headers["Content-Type"] == "application/x-ndjson"
    frames = [json.loads(line) for line in streamed.body.decode().splitlines()]
    assert frames[-1] == {"exit_code": 0}
    assert frames[0]["stream"] == "stdout" and frames[0]["data"].strip().endswith(instance_id)

    # The timeout kills it and says so.
    timed = subprocess.run([BINARY, "exec", "--timeout", "1", instance_id, "--", "sleep", "30"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert timed.returncode == 124 and "timeout" in timed.stderr, timed.stderr

    # Bad input is a 4xx problem, never a crash; other tenants and keyless callers learn nothing.
    problem(platform.call("POST", f"/v1/instances/{instance_id}/exec", key, body={"command": []}),
            400)
    problem(platform.call("POST", f"/v1/instances/{instance_id}/exec", key,
                          body={"command": ["true"], "bogus": 1}), 400, "unknown_field")
    problem(platform.call("POST", f"/v1/instances/{instance_id}/exec", key,
                          body={"command": ["no-such-program-here"]}), 404, "command_not_found")
    problem(platform.call("POST", f"/v1/instances/{instance_id}/exec", key,
                          raw=b"x" * (70 * 1024)), 413)
    problem(platform.call("POST", f"/v1/instances/{instance_id}/exec", other_key,
                          body={"command": ["true"]}), 404)
    problem(http(platform.url, "POST", f"/v1/instances/{instance_id}/exec",
                 body={"command": ["true"]}), 401)
    other = subprocess.run([BINARY, "exec", instance_id, "--", "true"], capture_output=True,
                           text=True, env=platform.cli_env(other_key), timeout=60)
    assert other.returncode == 1 and "not_found" in other.stderr
