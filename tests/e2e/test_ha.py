"""A highly available control plane: three `gpurent server`s on one PostgreSQL database (a
throwaway cluster, scripts/test-postgres.sh), one leading and two standing by, an agent and the
clients given all three URLs. The leader is killed (SIGKILL) again and again, and once paused
(SIGSTOP) past its lease and resumed, under a steady stream of launches, stops and top-ups:
everything acknowledged is there afterwards, the money adds up, no GPU is held twice, and the
paused leader's writes are refused."""

import os
import random
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
import urllib.error

import pytest

from conftest import BINARY, Process, http, wait_for

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def database():
    server = subprocess.run([os.path.join(ROOT, "scripts", "test-postgres.sh")], check=True,
                            capture_output=True, text=True).stdout.strip()
    name = "ha_" + secrets.token_hex(6)
    subprocess.run(["psql", server, "-qc", f"CREATE DATABASE {name}"], check=True)
    yield server.rsplit("/", 1)[0] + "/" + name
    subprocess.run(["psql", server, "-qc", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                   check=False)


class Cluster:
    """Servers on fixed ports (a restarted one comes back where clients expect it)."""

    def __init__(self, workdir, database, size=3):
        self.workdir = workdir
        self.database = database
        self.admin_key = "gpr_" + secrets.token_urlsafe(32)
        self.env = dict(os.environ)
        self.env["GPURENT_EXPENSIVE_CHECKS"] = "1"
        self.ports = [free_port() for _ in range(size)]
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.servers = [None] * size
        self.starts = 0
        self.others = []
        # Servers of one store share the key their session key is sealed under (the first one
        # to start makes it).
        self.config = os.path.join(workdir, "server.toml")
        with open(self.config, "w") as f:
            f.write(f'[secrets]\nkey_file = "{os.path.join(workdir, "secrets.key")}"\n')

    def start(self, i):
        self.starts += 1
        self.servers[i] = Process(
            ["server", "--listen", f"127.0.0.1:{self.ports[i]}", "--store", self.database,
             "--data-dir", os.path.join(self.workdir, f"server{i}"), "--admin-key",
             self.admin_key, "--config", self.config], self.workdir, self.env,
            f"server{i}-{self.starts}")
        wait_for(lambda: self.health(i) is not None, what=f"server {i} to listen")

    def health(self, i):
        try:
            response = http(self.urls[i], path="/healthz", timeout=2)
        except (OSError, urllib.error.URLError):
            return None
        return response.json() if response.status == 200 else None

    def leader(self):
        """The index of the server that leads, once exactly one does."""
        leading = [i for i in range(len(self.urls))
                   if self.servers[i] and self.servers[i].proc.poll() is None and
                   (self.health(i) or {}).get("status") == "ok"]
        return leading[0] if len(leading) == 1 else None

    def call(self, method, path, key=None, body=None, idempotency_key=None, timeout=10):
        """Like a client with all three URLs: a request that reached no API goes to the next
        server; an ambiguous failure is retried under the same Idempotency-Key."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        deadline = time.monotonic() + 30
        start = random.randrange(len(self.urls))
        attempt = 0
        while True:
            url = self.urls[(start + attempt) % len(self.urls)]
            attempt += 1
            try:
                response = http(url, method, path, key or self.admin_key, body, headers=headers,
                                timeout=timeout)
            except (OSError, urllib.error.URLError) as e:
                refused = isinstance(getattr(e, "reason", e), ConnectionRefusedError)
                if not (refused or idempotency_key or method == "GET"):
                    raise  # it may have been done: only a keyed retry is safe
                response = None
            if response is not None:
                if response.status < 500:
                    return response
                code = response.json().get("code")
                reached_no_api = code in ("no_leader", "upstream_unavailable")
                if not (reached_no_api or idempotency_key or method == "GET"):
                    return response
            if time.monotonic() > deadline:
                raise AssertionError(f"{method} {path}: no server answered for 30 s")
            time.sleep(0.1)

    def wait_leader(self, other_than=None, what="a leader"):
        """The index of the server that leads, once one other than `other_than` does."""
        def found():
            leader = self.leader()
            return (leader,) if leader is not None and leader != other_than else None
        return wait_for(found, what=what)[0]

    def shutdown(self):
        for process in self.others:
            process.stop()
        for server in self.servers:
            if server:
                if server.proc.poll() is None:
                    os.kill(server.proc.pid, signal.SIGCONT)
                server.stop()


@pytest.fixture
def cluster(tmp_path, database):
    c = Cluster(str(tmp_path), database)
    c.start(0)
    wait_for(lambda: c.leader() == 0, what="the first server to lead")
    c.start(1)
    c.start(2)
    yield c
    c.shutdown()


def start_agent(cluster, gpus="4xh100-80g"):
    token = cluster.call("POST", "/v1/join-tokens", body={"description": "ha"})
    assert token.status == 201, token.body
    agent = Process(["agent", "--server", ",".join(cluster.urls), "--join-token",
                     token.json()["token"], "--sim-gpus", gpus, "--data-dir",
                     os.path.join(cluster.workdir, "agent")], cluster.workdir, cluster.env, "agent")
    cluster.others.append(agent)
    wait_for(lambda: cluster.call("GET", "/v1/offers").json()["items"], what="the agent's GPUs")
    return agent


def new_tenant(cluster):
    tenant = cluster.call("POST", "/v1/tenants", body={"name": "ha-tenant"},
                          idempotency_key="tenant")
    assert tenant.status == 201, tenant.body
    key = cluster.call("POST", "/v1/api-keys", body={"tenant_id": tenant.json()["id"],
                                                     "role": "tenant"}, idempotency_key="key")
    assert key.status == 201, key.body
    return tenant.json()["id"], key.json()["key"]


def test_standbys_forward_and_one_takes_over_when_the_leader_is_killed(cluster):
    assert [cluster.health(i)["status"] for i in range(3)] == ["ok", "standby", "standby"]
    assert cluster.health(1)["leader"] == cluster.urls[0]
    agent = start_agent(cluster)
    tenant_id, key = new_tenant(cluster)
    # A launch through a standby is forwarded to the leader.
    topup = http(cluster.urls[1], "POST", "/v1/billing/topups", cluster.admin_key,
                 {"tenant_id": tenant_id, "amount_micros": 50_000_000})
    assert topup.status == 201, topup.body
    created = http(cluster.urls[2], "POST", "/v1/instances", key,
                   {"gpu_type": "h100-80g", "gpu_count": 1, "command": "echo up; sleep 600"})
    assert created.status == 201, created.body
    instance_id = created.json()["id"]
    wait_for(lambda: cluster.call("GET", f"/v1/instances/{instance_id}", key).json()["state"]
             == "running", what="the instance to run")

    # A console session, signed in on the leader that is about to die.
    signed_in = http(cluster.urls[0], "POST", "/v1/session", body={"key": key})
    assert signed_in.status == 201, signed_in.body
    cookie = re.match(r"gpurent_console=([^;]+);", signed_in.headers["Set-Cookie"]).group(1)
    csrf = signed_in.json()["csrf_token"]

    cluster.servers[0].stop(signal.SIGKILL)
    started = time.monotonic()
    # The CLI with every URL: its launch lands on the new leader.
    env = dict(cluster.env, GPURENT_URL=",".join(cluster.urls), GPURENT_API_KEY=key,
               XDG_CONFIG_HOME=os.path.join(cluster.workdir, "config"))
    launched = subprocess.run([BINARY, "launch", "--gpu", "h100-80g", "--", "sleep", "600"],
                              capture_output=True, text=True, env=env, timeout=60)
    assert launched.returncode == 0, launched.stderr
    assert time.monotonic() - started < 10
    leader = cluster.wait_leader(other_than=0)
    # The workload kept running through the failover, on the same run.
    kept = cluster.call("GET", f"/v1/instances/{instance_id}", key).json()
    assert kept["state"] == "running" and kept["run"] == 1, kept
    assert agent.proc.poll() is None
    # The console session outlives the failover: the servers share their signing key.
    console = {"Cookie": f"gpurent_console={cookie}", "X-CSRF-Token": csrf,
               "Origin": cluster.urls[leader]}
    current = http(cluster.urls[leader], path="/v1/session", headers=console)
    assert current.status == 200 and current.json()["csrf_token"] == csrf, current.body
    made = http(cluster.urls[leader], "POST", "/v1/api-keys", body={"name": "after-failover"},
                headers=console)
    assert made.status == 201, made.body
    # The killed server comes back as a standby of the new leader.
    cluster.start(0)
    wait_for(lambda: cluster.health(0) == {"status": "standby", "leader": cluster.urls[leader]},
             what="the restarted server to stand by for the new leader")
    # A graceful stop hands over at once.
    cluster.servers[leader].stop()
    started = time.monotonic()
    cluster.wait_leader(other_than=leader, what="a standby to take over from one that resigned")
    assert time.monotonic() - started < 5


def test_chaos_every_acknowledged_request_survives_kills_and_a_paused_leader(cluster):
    start_agent(cluster)
    tenant_id, key = new_tenant(cluster)
    first = cluster.call("POST", "/v1/billing/topups",
                         body={"tenant_id": tenant_id, "amount_micros": 500_000_000},
                         idempotency_key="topup-0")
    assert first.status == 201, first.body
    acked_topups = [(first.json()["transfer_id"], 500_000_000)]
    acked_launches = []
    acked_stops = []
    errors = []
    stop = threading.Event()

    def traffic():
        n = 0
        while not stop.is_set():
            n += 1
            try:
                if n % 3 == 0:
                    response = cluster.call("POST", "/v1/billing/topups",
                                            body={"tenant_id": tenant_id, "amount_micros": 1_000 + n},
                                            idempotency_key=f"topup-{n}")
                    assert response.status == 201, response.body
                    acked_topups.append((response.json()["transfer_id"], 1_000 + n))
                elif n % 3 == 1:
                    response = cluster.call("POST", "/v1/instances", key,
                                            {"gpu_type": "h100-80g", "gpu_count": 1,
                                             "command": "sleep 600"}, idempotency_key=f"launch-{n}")
                    assert response.status == 201, response.body
                    acked_launches.append(response.json()["id"])
                elif acked_launches:
                    victim = acked_launches[len(acked_launches) // 2]
                    response = cluster.call("POST", f"/v1/instances/{victim}/stop", key,
                                            idempotency_key=f"stop-{n}")
                    assert response.status in (202, 409), response.body
                    if response.status == 202:
                        acked_stops.append(victim)
            except Exception as e:  # recorded: the test fails on it below
                errors.append(repr(e))
                return
            time.sleep(0.05)

    worker = threading.Thread(target=traffic)
    worker.start()
    try:
        for _ in range(3):
            time.sleep(1.5)
            leader = cluster.wait_leader()
            cluster.servers[leader].stop(signal.SIGKILL)
            cluster.wait_leader(other_than=leader)
            cluster.start(leader)
        # Paused past its lease: a standby takes over; resumed, the old leader must not write.
        time.sleep(1.5)
        paused = cluster.wait_leader()
        os.kill(cluster.servers[paused].proc.pid, signal.SIGSTOP)
        wait_for(lambda: any(i != paused and (cluster.health(i) or {}).get("status") == "ok"
                             for i in range(3)), what="a standby to take over from the paused one")
        time.sleep(1.0)
        os.kill(cluster.servers[paused].proc.pid, signal.SIGCONT)
        wait_for(lambda: cluster.servers[paused].proc.poll() is not None, timeout=15,
                 what="the resumed, deposed leader to exit")
        assert cluster.servers[paused].proc.returncode == 3
        assert "exiting" in cluster.servers[paused].output()
        time.sleep(1.5)
    finally:
        stop.set()
        worker.join(timeout=60)
    assert not errors, errors
    assert len(acked_launches) >= 5 and len(acked_topups) >= 3, (acked_launches, acked_topups)

    # Every acknowledged launch is there; every acknowledged stop took.
    instances = {i["id"]: i for i in
                 cluster.call("GET", "/v1/instances?limit=500", key).json()["items"]}
    assert set(acked_launches) <= set(instances)
    for victim in acked_stops:
        assert instances[victim]["state"] in ("stopping", "stopped"), instances[victim]
    # Every acknowledged top-up is in the ledger once, and the balance is what the ledger says.
    # The running instances are metered meanwhile: the ledger is compared with a balance read on
    # both sides of it, unchanged (no charge landed between the reads).
    def balance():
        return cluster.call("GET", "/v1/billing/balance", key).json()["balance_micros"]
    for _ in range(50):
        before = balance()
        transfers = cluster.call("GET", "/v1/billing/transfers?limit=1000", key).json()["items"]
        if balance() == before:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the balance never held still across a read of the ledger")
    ids = [t["id"] for t in transfers]
    assert len(ids) == len(set(ids))
    topups = {t["id"]: t["amount_micros"] for t in transfers if t["kind"] == "topup"}
    for topup_id, amount in acked_topups:
        assert topups.get(topup_id) == amount, (topup_id, topups)
    cash = f"tenant:{tenant_id}:cash"
    flows = sum(t["amount_micros"] for t in transfers if t["to_account"] == cash) - sum(
        t["amount_micros"] for t in transfers if t["from_account"] == cash)
    assert before == flows
    # No GPU is held by two instances, and no instance runs twice.
    held = [gpu for i in instances.values() if i["state"] in ("running", "starting", "stopping")
            for gpu in i.get("gpus", [])]
    assert len(held) == len(set(held)), held
    assert len(held) <= 4


def test_an_installation_moves_from_sqlite_to_postgresql_and_is_backed_up_online(tmp_path,
                                                                                 database):
    admin_key = "gpr_" + secrets.token_urlsafe(32)
    env = dict(os.environ)
    workdir = str(tmp_path)

    def serve(name, *args):
        port = free_port()
        server = Process(["server", "--listen", f"127.0.0.1:{port}", "--admin-key", admin_key,
                          *args], workdir, env, name)
        url = f"http://127.0.0.1:{port}"

        def serving():
            assert server.proc.poll() is None, server.output()
            try:
                return http(url, path="/healthz", timeout=2).json()["status"] == "ok"
            except (OSError, urllib.error.URLError):
                return False
        wait_for(serving, what=f"{name} to serve")
        return server, url

    def state(url):
        tenants = http(url, path="/v1/tenants", key=admin_key).json()["items"]
        tenant = next(t for t in tenants if t["name"] == "moving")
        balance = http(url, path=f"/v1/billing/balance?tenant={tenant['id']}",
                       key=admin_key).json()["balance_micros"]
        volumes = http(url, path=f"/v1/volumes?tenant={tenant['id']}",
                       key=admin_key).json()["items"]
        transfers = http(url, path=f"/v1/billing/transfers?tenant={tenant['id']}",
                         key=admin_key).json()["items"]
        return tenant["id"], balance, sorted(v["id"] for v in volumes), transfers

    sqlite_dir = os.path.join(workdir, "sqlite-data")
    server, url = serve("sqlite", "--data-dir", sqlite_dir)
    tenant = http(url, "POST", "/v1/tenants", admin_key, {"name": "moving"}).json()
    assert http(url, "POST", "/v1/billing/topups", admin_key,
                {"tenant_id": tenant["id"], "amount_micros": 7_000_000}).status == 201
    key = http(url, "POST", "/v1/api-keys", admin_key,
               {"tenant_id": tenant["id"], "role": "tenant"}).json()["key"]
    volume = http(url, "POST", "/v1/volumes", key, {"name": "datasets", "size_gb": 10})
    assert volume.status == 201, volume.body
    before = state(url)
    assert before[1] == 7_000_000 and len(before[2]) == 1 and len(before[3]) == 1, before
    assert server.stop() == 0

    migrated = subprocess.run([BINARY, "store", "migrate", "--from", f"sqlite:{sqlite_dir}",
                               "--to", database], capture_output=True, text=True)
    assert migrated.returncode == 0, migrated.stderr
    assert "Copied 2 tenants, 0 instances" in migrated.stdout
    again = subprocess.run([BINARY, "store", "migrate", "--from", f"sqlite:{sqlite_dir}",
                            "--to", database], capture_output=True, text=True)
    assert again.returncode != 0 and "store_not_empty" in again.stderr

    server, url = serve("postgres", "--data-dir", os.path.join(workdir, "pg-data"), "--store",
                        database)
    assert state(url) == before
    # Online: the server goes on while the backup reads one consistent view.
    backup_file = os.path.join(workdir, "backup.db")
    backup = subprocess.run([BINARY, "backup", "--store", database, "--output", backup_file],
                            capture_output=True, text=True)
    assert backup.returncode == 0, backup.stderr
    assert http(url, "POST", "/v1/billing/topups", admin_key,
                {"tenant_id": tenant["id"], "amount_micros": 1}).status == 201
    assert server.stop() == 0
    # The backup is a store a server runs on.
    restored_dir = os.path.join(workdir, "restored")
    os.makedirs(restored_dir)
    os.rename(backup_file, os.path.join(restored_dir, "gpurent.db"))
    server, url = serve("restored", "--data-dir", restored_dir)
    assert state(url) == before
    server.stop()
