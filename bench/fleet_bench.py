#!/usr/bin/env python3
"""End to end through the real server (issue 3, "Benchmarks", first bullet).

For each fleet size N (default 1,000 and 5,000): a fresh `gpurent dev` (its own temp data dir,
admin key, its in-process agent with 8 simulated GPUs, so N + 1 nodes), a join token, and one
`gpurent agent --sim-nodes N --sim-gpus 8xh100-80g` process. Then:

0. registration: from starting the fleet process to every node ready (GET /v1/offers shows
   8 x (N + 1) h100-80g GPUs, polled every 50 ms), plus the agent's own `sim_fleet_ready` figure;
   then the dev's own node is cordoned (unless --use-local-node: its workloads are real
   processes forked from the server's process, which stalls the server), and a 3 s settle so
   that every node's long-poll is parked.
(a) array: one POST /v1/jobs with `array: TASKS` one-GPU tasks; the time from before the POST to
   `task_counts.running == TASKS`, polling GET /v1/jobs/{id} every 5 ms on one keep-alive
   connection. Also: when the POST answered (placement and the commit happen before the answer),
   and the server's own timestamps (the members' `started_at`, ms). Then cancel and wait until
   every GPU is free again.
(b) separate: TASKS POST /v1/jobs of one task each, over C keep-alive connections (P processes x
   T threads), then the time until all TASKS jobs run. After the last POST answered, GET
   /v1/jobs?state=queued&limit=500 is polled every 200 ms until none of ours is queued, then the
   whole paginated list until every task runs (it is not polled while the POSTs run); the
   server's `started_at` timestamps give the precise end.

The admin tenant is topped up first (8,000 H100s cost about 40 CNY per second; the dev credit of
1,000 CNY would run out within a run). Each phase (registration, array, separate, each cancel) is
cut off after --phase-limit seconds and reported as not finished; when (a) does not end in time,
its server and fleet are stopped (SIGTERM, SIGKILL after 20 s: a clean stop would first finish
the commit in progress) and (b) runs on a fresh pair. The server's resident set is sampled every
0.5 s during (a); the CPU time of each thread of the server and the fleet is read when (a) starts
and when its last task is seen running (the server names its threads: api, committer, ...).

The fleet sends GPU telemetry with every report (its default, every 1 s: the realistic setup);
--telemetry-interval 0 turns it off, for comparison.

--store postgres://... runs `gpurent server` on that (empty) PostgreSQL database instead of
`gpurent dev`: no local node, the same phases.

Diagnostics: --phases array (or separate) runs one of the two; --array-split K submits (a) as K
arrays of TASKS / K, one POST after the other, polling each job until it runs.

Usage: bench/fleet_bench.py [--binary build-bench/gpurent] [--nodes 1000,5000] [--tasks 8000]
                            [--procs 2] [--threads 8] [--phase-limit 90] [--phases array,separate]
                            [--array-split 1] [--telemetry-interval S] [--json FILE]
                            [--keep-logs DIR] [--perf DIR] [--store postgres://...]
Prints a Markdown block for bench/RESULTS.md.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone

from devserver import all_items, start_dev, start_server
from procstats import ProcSampler, cpu_delta, start_perf, stop_perf, thread_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU_TYPE = "h100-80g"
GPUS_PER_NODE = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_time(text):
    """RFC 3339 UTC with milliseconds -> seconds since the epoch."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc).timestamp()


class Client:
    """One keep-alive HTTP/1.1 connection; reconnects once if the server closed it."""

    def __init__(self, port, key, timeout=60):
        self.port, self.key, self.timeout = port, key, timeout
        self.conn = None

    def call(self, method, path, body=None, timeout=None):
        headers = {"Authorization": "Bearer " + self.key}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                       timeout=timeout or self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise

    def json(self, method, path, body=None, expect=(200,), timeout=None):
        status, data = self.call(method, path, body, timeout)
        if status not in expect:
            raise SystemExit(f"{method} {path} -> {status}: {data[:500]!r}")
        return json.loads(data)

    def close(self):
        if self.conn:
            self.conn.close()


def start_fleet(binary, workdir, port, token, nodes, telemetry_interval=None):
    """telemetry_interval: the fleet's --telemetry-interval (None: its default, 1 s)."""
    out = open(os.path.join(workdir, "fleet.log"), "wb")
    telemetry = ([] if telemetry_interval is None else
                 ["--telemetry-interval", f"{telemetry_interval:g}"])
    return subprocess.Popen([binary, "agent", "--server", f"http://127.0.0.1:{port}",
                             "--join-token", token, "--sim-nodes", str(nodes),
                             "--sim-gpus", "8xh100-80g", "--name", "fleet",
                             "--data-dir", os.path.join(workdir, "fleet")] + telemetry,
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc, timeout=60):
    """SIGTERM, then wait; SIGKILL only if it does not stop in time."""
    if proc is None or proc.poll() is not None:
        return None
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
        return proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return "killed"


def h100_offer(client):
    offers = client.json("GET", "/v1/offers")
    for offer in offers["items"] if isinstance(offers, dict) else offers:
        if offer["gpu_type"] == GPU_TYPE:
            return offer["total"], offer["free"]
    return 0, 0


def wait_idle(client, total, limit_s):
    """Seconds until every GPU of the type is free again, or None."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if h100_offer(client) == (total, total):
            return time.monotonic() - start
        time.sleep(0.05)
    return None


def job_body(tasks):
    return {"name": "fleet-bench", "gpu_type": GPU_TYPE, "gpu_count": 1, "array": tasks,
            "command": ["sleep", "infinity"]}


def instance_started(client, job_id):
    """The members' started_at (epoch s) and node ids, read back page by page."""
    started, nodes, cursor = [], {}, None
    while True:
        path = f"/v1/instances?job={job_id}&limit=500" + (f"&cursor={cursor}" if cursor else "")
        page = client.json("GET", path, timeout=120)
        for item in page["items"]:
            if item.get("started_at"):
                started.append(parse_time(item["started_at"]))
            nodes[item.get("node_id")] = nodes.get(item.get("node_id"), 0) + 1
        cursor = page.get("next_cursor")
        if not cursor:
            return started, nodes


def run_array(client, tasks, limit_s, poll_s, split=1, server_pid=None, perf=None, fleet_pid=None):
    """(a): one array job of `tasks` tasks (or `split` arrays of tasks / split, submitted one
    after the other on one connection); returns a dict of figures. perf: (pids, output file) to
    profile during the phase."""
    result = {"tasks": tasks, "split": split}
    poller = Client(client.port, client.key, timeout=limit_s)
    recorder = None
    if perf:
        recorder = start_perf(*perf)
        time.sleep(1.0)  # perf attaches to every thread before the clock starts
    sampler = ProcSampler(server_pid) if server_pid else None
    cpu_before = {"server": thread_cpu(server_pid) if server_pid else {},
                  "fleet": thread_cpu(fleet_pid) if fleet_pid else {}}
    sizes = [tasks // split + (1 if i < tasks % split else 0) for i in range(split)]
    wall0 = time.time()
    t0 = time.monotonic()
    jobs = []
    try:
        for size in sizes:
            status, data = poller.call("POST", "/v1/jobs", job_body(size), timeout=limit_s)
            if status != 201:
                raise SystemExit(f"POST /v1/jobs -> {status}: {data[:500]!r}")
            jobs.append(json.loads(data))
    except (socket.timeout, TimeoutError):
        result["post_s"] = None
        result["all_running_s"] = None
        result["running_at_end"] = 0
        result["jobs_answered"] = len(jobs)
        log(f"array: POST not answered within {limit_s} s")
        poller.close()
        if sampler:
            result.update(sampler.stop(t0))
        if recorder:
            stop_perf(recorder)
        return result
    t_post = time.monotonic() - t0
    result["post_s"] = t_post
    log(f"array: {len(jobs)} POST(s) answered after {t_post:.3f} s")
    # Polls the first job that is not yet all running; a finished one is not asked again.
    pending = [(job["id"], size) for job, size in zip(jobs, sizes)]
    samples, polls, last = [], 0, -1
    done_running = 0
    t_done = None
    while pending and time.monotonic() - t0 < limit_s:
        job_id, size = pending[0]
        try:
            view = poller.json("GET", f"/v1/jobs/{job_id}",
                               timeout=max(1.0, limit_s - (time.monotonic() - t0)))
        except (socket.timeout, TimeoutError):
            break
        polls += 1
        now = time.monotonic() - t0
        running = view["task_counts"]["running"]
        if running == size:
            pending.pop(0)
            done_running += size
            if not pending:
                t_done = now
        seen = done_running + (running if running != size else 0)
        if seen != last:
            samples.append((round(now, 4), seen))
            last = seen
        if pending and running != size:
            time.sleep(poll_s)
    # Up to the moment the last task was seen running (or the phase was cut off).
    result["cpu_s"] = {
        "server": cpu_delta(cpu_before["server"], thread_cpu(server_pid) if server_pid else {}),
        "fleet": cpu_delta(cpu_before["fleet"], thread_cpu(fleet_pid) if fleet_pid else {})}
    if sampler:
        result.update(sampler.stop(t0))
    if recorder:
        stop_perf(recorder)
    result["polls"] = polls
    result["samples"] = samples
    result["all_running_s"] = t_done
    result["running_at_end"] = last
    first = next((t for t, r in samples if r > 0), None)
    result["first_running_s"] = first
    log(f"array: all running after {t_done} s (first running seen at {first}, {polls} polls)")
    # The server's own timestamps (ms, wall clock of the same machine).
    started, nodes = [], {}
    for job in jobs:
        more_started, more_nodes = instance_started(client, job["id"])
        started += more_started
        for node, count in more_nodes.items():
            nodes[node] = nodes.get(node, 0) + count
    if started:
        result["server_first_started_s"] = min(started) - wall0
        result["server_last_started_s"] = max(started) - wall0
    result["nodes_used"] = len(nodes)
    result["job_ids"] = [job["id"] for job in jobs]
    poller.close()
    return result


def post_worker(port, key, indices, threads, start_event, out_queue):
    """One process: `threads` keep-alive connections POSTing one-task jobs for `indices`."""
    results = []
    lock = threading.Lock()
    chunks = [indices[i::threads] for i in range(threads)]

    def worker(chunk):
        client = Client(port, key, timeout=120)
        mine = []
        client.call("GET", "/v1/whoami")  # open the connection before the clock starts
        start_event.wait()
        for _ in chunk:
            sent = time.monotonic()
            status, data = client.call("POST", "/v1/jobs", job_body(1))
            answered = time.monotonic()
            if status != 201:
                mine.append((None, sent, answered, status))
                continue
            mine.append((json.loads(data)["id"], sent, answered, status))
        client.close()
        with lock:
            results.extend(mine)

    workers = [threading.Thread(target=worker, args=(chunk,)) for chunk in chunks]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    out_queue.put(results)


def list_all(client, path, limit_s, keep):
    """Every item of a paginated listing (500 per page) that `keep` accepts."""
    items, cursor = [], None
    while True:
        sep = "&" if "?" in path else "?"
        page = client.json("GET", f"{path}{sep}limit=500" + (f"&cursor={cursor}" if cursor else ""),
                           timeout=limit_s)
        items += [i for i in page["items"] if keep(i)]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


def run_separate(client, tasks, procs, threads, limit_s, list_poll_s):
    """(b): `tasks` one-task jobs over procs x threads connections."""
    result = {"tasks": tasks, "connections": procs * threads, "procs": procs, "threads": threads}
    ctx = multiprocessing.get_context("fork")
    start_event = ctx.Event()
    out_queue = ctx.Queue()
    workers = [ctx.Process(target=post_worker,
                           args=(client.port, client.key, list(range(tasks))[p::procs], threads,
                                 start_event, out_queue))
               for p in range(procs)]
    for w in workers:
        w.start()
    time.sleep(1.0)  # every connection open and waiting
    wall0 = time.time()
    t0 = time.monotonic()
    start_event.set()
    answers = []
    for _ in workers:
        answers.extend(out_queue.get(timeout=limit_s))
    for w in workers:
        w.join()
    failed = [a for a in answers if a[0] is None]
    ids = {a[0] for a in answers if a[0] is not None}
    result["post_failures"] = len(failed)
    result["first_sent_s"] = min(a[1] for a in answers) - t0
    result["posts_done_s"] = max(a[2] for a in answers) - t0
    latencies = sorted(a[2] - a[1] for a in answers)
    result["post_p50_ms"] = latencies[len(latencies) // 2] * 1000
    result["post_p99_ms"] = latencies[int(len(latencies) * 0.99)] * 1000
    result["post_rate"] = len(answers) / result["posts_done_s"]
    log(f"separate: {len(answers)} POSTs answered by {result['posts_done_s']:.3f} s "
        f"({result['post_rate']:.0f}/s, {len(failed)} failed)")
    # Then, every list_poll_s: the jobs still queued (GET /v1/jobs?state=queued, one page) until
    # none of ours is; from then on the whole list, page by page, until every task runs (a job is
    # no longer queued once its member is placed, but its task runs only when the member does).
    lister = Client(client.port, client.key, timeout=limit_s)
    t_done, polls, list_cost, jobs = None, 0, [], []
    running = 0
    none_queued = False
    while time.monotonic() - t0 < limit_s:
        began = time.monotonic()
        if not none_queued:
            none_queued = not [j for j in lister.json("GET", "/v1/jobs?state=queued&limit=500",
                                                      timeout=limit_s)["items"] if j["id"] in ids]
        if none_queued:
            jobs = list_all(lister, "/v1/jobs", limit_s, lambda j: j["id"] in ids)
            running = sum(1 for j in jobs if j["task_counts"].get("running") == 1)
        list_cost.append(time.monotonic() - began)
        polls += 1
        if running == len(ids):
            t_done = time.monotonic() - t0
            break
        time.sleep(list_poll_s)
    result["all_running_s"] = t_done
    result["running_at_end"] = running
    result["list_polls"] = polls
    result["list_cost_ms"] = sorted(list_cost)[len(list_cost) // 2] * 1000 if list_cost else None
    started = [parse_time(j["started_at"]) for j in jobs if j.get("started_at")]
    created = [parse_time(j["created_at"]) for j in jobs]
    if started:
        result["server_last_started_s"] = max(started) - wall0
        result["server_first_created_s"] = min(created) - wall0
        result["server_last_created_s"] = max(created) - wall0
    result["job_ids"] = sorted(ids)
    log(f"separate: all running after {t_done} s ({polls} list polls, "
        f"median {result['list_cost_ms']} ms each)")
    lister.close()
    return result


def cancel_all(client, job_ids, total, limit_s, connections=16):
    """Cancels the jobs (over `connections` keep-alive connections), then waits until every GPU
    is free; returns seconds or None."""
    t0 = time.monotonic()
    failed = []

    def worker(chunk):
        canceller = Client(client.port, client.key, timeout=limit_s)
        try:
            for job_id in chunk:
                canceller.call("POST", f"/v1/jobs/{job_id}/cancel")
        except (socket.timeout, TimeoutError, OSError):
            failed.append(True)
        canceller.close()

    workers = [threading.Thread(target=worker, args=(job_ids[i::connections],))
               for i in range(min(connections, len(job_ids)))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failed:
        return None
    idle = wait_idle(client, total, max(0.0, limit_s - (time.monotonic() - t0)))
    return None if idle is None else time.monotonic() - t0


class Platform:
    """A fresh `gpurent dev` and one simulated fleet of `nodes` nodes, in a temp directory."""

    def __init__(self, binary, nodes, keep_dir=None, tag="", telemetry_interval=None,
                 store=None):
        self.binary, self.nodes, self.keep_dir, self.tag = binary, nodes, keep_dir, tag
        self.telemetry_interval = telemetry_interval
        self.store = store  # a postgres:// URL: `gpurent server --store` and no local node
        self.workdir = tempfile.mkdtemp(prefix=f"gpurent-fleet-{nodes}-")
        self.key = "gpr_" + secrets.token_urlsafe(32)
        self.dev = self.fleet = None
        self.local_nodes = 0 if store else 1
        self.total = GPUS_PER_NODE * (nodes + self.local_nodes)
        self.exits = {}

    def start(self, limit_s):
        """Starts both; returns (seconds until every node is ready or None, fleet's figure,
        nodes ready at the end)."""
        if self.store:
            self.port = free_port()
            self.dev = start_server(self.binary, self.workdir, self.key, self.store, self.port)
        else:
            self.dev, self.port = start_dev(self.binary, self.workdir, self.key)
        self.client = Client(self.port, self.key)
        deadline = time.monotonic() + 30
        while h100_offer(self.client)[0] < GPUS_PER_NODE * self.local_nodes:  # the dev's node
            if time.monotonic() > deadline:
                raise SystemExit("the dev agent did not join")
            time.sleep(0.05)
        tenant = self.client.json("GET", "/v1/whoami")["tenant_id"]
        self.client.json("POST", "/v1/billing/topups",
                         {"tenant_id": tenant, "amount_micros": 10_000_000 * 1_000_000,
                          "reference": "fleet bench"}, expect=(201,))
        token = self.client.json("POST", "/v1/join-tokens", {"description": "fleet bench"},
                                 expect=(201,))["token"]
        t0 = time.monotonic()
        self.fleet = start_fleet(self.binary, self.workdir, self.port, token, self.nodes,
                                 self.telemetry_interval)
        ready = 0
        while time.monotonic() - t0 < limit_s:
            seen = h100_offer(self.client)[0]
            ready = seen // GPUS_PER_NODE - self.local_nodes
            if seen == self.total:
                break
            if self.fleet.poll() is not None:
                raise SystemExit("the fleet exited:\n" + self.fleet_log()[-3000:])
            time.sleep(0.05)
        else:
            return None, None, ready
        registered = time.monotonic() - t0
        deadline = time.monotonic() + 30
        while "sim_fleet_ready" not in self.fleet_log() and time.monotonic() < deadline:
            time.sleep(0.05)
        found = re.search(r"sim_fleet_ready .*seconds=([\d.]+)", self.fleet_log())
        time.sleep(3.0)  # every long-poll parked, the first reports in
        return registered, float(found.group(1)) if found else None, ready

    def fleet_log(self):
        return open(os.path.join(self.workdir, "fleet.log"), errors="replace").read()

    def close(self, wait_s=60):
        """SIGTERM the fleet, then the server, waiting up to wait_s for each (then SIGKILL);
        then removes the temp dir."""
        if getattr(self, "client", None):
            self.client.close()
        self.exits["fleet"] = stop(self.fleet, wait_s)
        self.exits["dev"] = stop(self.dev, wait_s)
        if self.keep_dir:
            os.makedirs(self.keep_dir, exist_ok=True)
            for name in ("dev.log", "fleet.log"):
                source = os.path.join(self.workdir, name)
                if os.path.exists(source):
                    shutil.copy(source, os.path.join(self.keep_dir,
                                                     f"{self.nodes}{self.tag}-{name}"))
        shutil.rmtree(self.workdir, ignore_errors=True)
        return self.exits


def cordon_local_node(platform):
    """Cordons the dev's own node (the one not of the simulated fleet); returns its name. It runs
    real processes, forked from the server's process: each start there stalls the server with
    copy-on-write faults (about 1.3 s for the 8 tasks it would get), which is not what a fleet of
    separate agents costs; cordoned, every task lands on the simulated fleet."""
    name = None
    for node in all_items(lambda path: platform.client.json("GET", path), "/v1/nodes"):
        if "-sim-" not in node["name"]:
            status, data = platform.client.call("POST", f"/v1/nodes/{node['id']}/cordon")
            if status != 200:
                raise SystemExit(f"cordon {node['name']} -> {status}: {data[:300]!r}")
            platform.total -= GPUS_PER_NODE
            name = node["name"]
    return name


def run_size(binary, nodes, tasks, procs, threads, phase_limit_s, phases=("array", "separate"),
             split=1, keep_dir=None, use_local_node=False, perf_dir=None,
             telemetry_interval=None, store=None):
    figures = {"nodes": nodes, "load_before": os.getloadavg()[0]}
    platform = Platform(binary, nodes, keep_dir, telemetry_interval=telemetry_interval,
                        store=store)
    try:
        # 0. Registration.
        registered, fleet_says, ready = platform.start(phase_limit_s)
        figures["registration_s"] = registered
        figures["fleet_ready_s"] = fleet_says
        if registered is None:
            figures["registration_rate"] = ready / phase_limit_s
            log(f"{nodes} nodes: only {ready} ready within {phase_limit_s} s")
            return figures
        log(f"{nodes} nodes registered in {registered:.2f} s (fleet says {fleet_says} s)")
        if not use_local_node and not store:
            figures["cordoned_local_node"] = cordon_local_node(platform)

        # (a) One array request.
        if "array" in phases:
            perf = None
            if perf_dir:
                os.makedirs(perf_dir, exist_ok=True)
                perf = ([platform.dev.pid, platform.fleet.pid],
                        os.path.join(perf_dir, f"array-{nodes}.perf.data"))
            array = run_array(platform.client, tasks, phase_limit_s, 0.005, split,
                              platform.dev.pid, perf, platform.fleet.pid)
            figures["array"] = array
            idle = None
            if array.get("job_ids"):
                idle = cancel_all(platform.client, array.pop("job_ids"), platform.total,
                                  phase_limit_s)
            figures["array_cancel_idle_s"] = idle
            log(f"array cancelled; idle again after {idle} s")
            if "separate" not in phases:
                return figures
            if idle is None:
                # The server is still busy with the array: (b) gets a fresh server and fleet.
                # A clean stop would first finish the commit in progress (minutes): 20 s, then
                # SIGKILL.
                figures["exits_a"] = platform.close(wait_s=20)
                log(f"array phase: processes stopped with {figures['exits_a']}")
                figures["separate_fresh_server"] = True
                platform = Platform(binary, nodes, keep_dir, tag="-b",
                                    telemetry_interval=telemetry_interval, store=store)
                registered, _, _ = platform.start(phase_limit_s)
                if registered is None:
                    return figures
                if not use_local_node and not store:
                    cordon_local_node(platform)
            else:
                time.sleep(3.0)

        # (b) Separate POSTs.
        if "separate" in phases:
            separate = run_separate(platform.client, tasks, procs, threads, phase_limit_s, 0.2)
            figures["separate"] = separate
            idle = cancel_all(platform.client, separate.pop("job_ids"), platform.total,
                              phase_limit_s)
            figures["separate_cancel_idle_s"] = idle
            log(f"separate jobs cancelled; idle again after {idle} s")
        return figures
    finally:
        busy = (figures.get("array", {}).get("all_running_s") is None
                and "separate" not in figures and "array" in figures)
        figures["exits"] = platform.close(wait_s=20 if busy else 60)
        figures["load_after"] = os.getloadavg()[0]


def fmt_s(value, digits=3):
    return "did not finish" if value is None else f"{value:.{digits}f} s"


def markdown(args, results):
    command = (f"bench/fleet_bench.py --binary {args.binary_arg} --nodes {args.nodes} "
               f"--tasks {args.tasks} --procs {args.procs} --threads {args.threads} "
               f"--phase-limit {args.phase_limit:g}")
    if args.phases != "array,separate":
        command += f" --phases {args.phases}"
    if args.array_split != 1:
        command += f" --array-split {args.array_split}"
    if args.use_local_node:
        command += " --use-local-node"
    if args.telemetry_interval is not None:
        command += f" --telemetry-interval {args.telemetry_interval:g}"
    if args.store:
        command += " --store postgres://..."
    array_what = (f"one POST /v1/jobs with `array: {args.tasks}`" if args.array_split == 1 else
                  f"{args.array_split} POST /v1/jobs of `array: "
                  f"{args.tasks // args.array_split}` one after the other on one connection")
    telemetry = ("GPU telemetry off" if args.telemetry_interval == 0 else
                 f"GPU telemetry every {args.telemetry_interval or 1:g} s, sent with every report")
    local = ("the dev's own node takes work too" if args.use_local_node else
             "the dev's own node is cordoned, so every task runs on the simulated fleet")
    setup = ("Each size: a fresh `gpurent server` on an empty PostgreSQL database (N nodes, 8 N "
             "GPUs)" if args.store else
             "Each size: a fresh `gpurent dev` (its in-process agent adds one 8-GPU node, so N + 1 "
             f"nodes and 8 (N + 1) GPUs; {local})")
    lines = [
        f"Command: `{command}`",
        "Machine: Debian 12 VM, 2 cores, 24 GiB; the server, the fleet process and the Python "
        f"clients share the two cores. Date: {datetime.now(timezone.utc):%Y-%m-%d}. "
        "Build: Release (-O2).",
        "",
        f"{setup}, one `gpurent agent --sim-nodes N --sim-gpus "
        f"8xh100-80g` ({telemetry}); "
        f"{args.tasks} one-GPU h100-80g tasks, command `[\"sleep\", \"infinity\"]`. Array: "
        f"{array_what}, then GET /v1/jobs/{{id}} every 5 ms on one keep-alive connection until "
        f"`task_counts.running` is the task count. Separate: {args.tasks} POST /v1/jobs over "
        f"{args.procs * args.threads} keep-alive connections ({args.procs} processes × "
        f"{args.threads} threads), then GET /v1/jobs?state=queued every 200 ms until none is queued, "
        f"then the whole paginated list until every task runs. "
        f"\"server\" columns: the instances' and jobs' `started_at` (ms), from the client's "
        f"first submit. Every phase is cut off after {args.phase_limit:g} s.",
        "",
        "| nodes | registration (all ready) | array: POST answered | array: first running "
        "| array: all running | array (server timestamps) | separate: all POSTs answered "
        "| separate: all running | separate (server timestamps) | target (array < 0.5 s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        a = r.get("array", {})
        s = r.get("separate", {})
        reg = fmt_s(r.get("registration_s"), 2)
        if r.get("registration_s") is None and "registration_rate" in r:
            reg = f"not within the limit ({r['registration_rate']:.0f} nodes/s)"
        elif r.get("fleet_ready_s") is not None:
            reg += f" (fleet: {r['fleet_ready_s']:.2f} s)"
        if not a:
            post = first = arr_all = a_server = met = "—"
        else:
            post = fmt_s(a.get("post_s"))
            if a.get("post_s") is None:
                post = f"not answered within {args.phase_limit:g} s"
            first = fmt_s(a.get("first_running_s")) if a.get("post_s") else "—"
            arr_all = fmt_s(a.get("all_running_s"))
            if a.get("all_running_s") is None:
                arr_all = f"not within {args.phase_limit:g} s ({a.get('running_at_end')} running)"
            a_server = (f"first started {a['server_first_started_s']:.3f} s, last "
                        f"{a['server_last_started_s']:.3f} s"
                        if "server_last_started_s" in a else "—")
            met = "met" if (a.get("all_running_s") or 99) < 0.5 else "**missed**"
        if not s:
            s_posts = s_all = s_server = "—"
        else:
            s_posts = (f"{s['posts_done_s']:.3f} s ({s['post_rate']:.0f}/s; p50 "
                       f"{s['post_p50_ms']:.1f} ms, p99 {s['post_p99_ms']:.1f} ms)")
            s_all = fmt_s(s.get("all_running_s"))
            if s.get("all_running_s") is None:
                s_all = f"not within {args.phase_limit:g} s ({s.get('running_at_end')} running)"
            s_server = (f"last created {s['server_last_created_s']:.3f} s, last started "
                        f"{s['server_last_started_s']:.3f} s"
                        if "server_last_started_s" in s else "—")
        lines.append(f"| {r['nodes']} | {reg} | {post} | {first} | {arr_all} | {a_server} | "
                     f"{s_posts} | {s_all} | {s_server} | {met} |")
    lines.append("")
    for r in results:
        extra = []
        a = r.get("array", {})
        if a:
            if a.get("post_s") is not None:
                extra.append(f"array: {a['polls']} polls, tasks on {a['nodes_used']} nodes; "
                             "running over time (s: tasks) " + ", ".join(
                                 f"{t}: {n}" for t, n in thin(a["samples"], 10)))
            if "server_peak_rss_mib" in a:
                extra.append(f"server during the array phase: peak RSS "
                             f"{a['server_peak_rss_mib']:,.0f} MiB (reached at "
                             f"{a['server_peak_rss_at_s']:.0f} s)")
            if a.get("cpu_s"):
                extra.append("CPU from the POST to all running, by thread: " + "; ".join(
                    f"{who} {sum(threads.values()):.2f} s (" + ", ".join(
                        f"{name} {cpu:.2f}" for name, cpu in
                        sorted(threads.items(), key=lambda kv: -kv[1])) + ")"
                    for who, threads in a["cpu_s"].items()))
            extra.append(f"array cancel -> idle {fmt_s(r.get('array_cancel_idle_s'), 2)}")
        if r.get("separate_fresh_server"):
            extra.append("(b) ran on a fresh server and fleet, since (a) did not end in time "
                         f"(processes of (a) stopped: {r.get('exits_a')})")
        s = r.get("separate", {})
        if s:
            extra.append(f"separate: {s['list_polls']} list polls, median "
                         f"{s['list_cost_ms']:.0f} ms each; {s['post_failures']} POSTs failed; "
                         f"cancel -> idle {fmt_s(r.get('separate_cancel_idle_s'), 2)}")
        extra.append(f"exits {r.get('exits')}; load average {r['load_before']:.1f} before, "
                     f"{r.get('load_after', 0):.1f} after")
        lines.append(f"- {r['nodes']} nodes: " + "; ".join(extra))
    return "\n".join(lines)


def thin(samples, keep):
    if len(samples) <= keep:
        return samples
    step = (len(samples) - 1) / (keep - 1)
    return [samples[round(i * step)] for i in range(keep)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join("build-bench", "gpurent"))
    parser.add_argument("--nodes", default="1000,5000")
    parser.add_argument("--tasks", type=int, default=8000)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--phase-limit", type=float, default=90.0,
                        help="seconds each phase (registration, array, separate, idle) may take")
    parser.add_argument("--phases", default="array,separate",
                        help="which of (a) array and (b) separate to run")
    parser.add_argument("--array-split", type=int, default=1,
                        help="diagnostic: submit (a) as this many arrays of tasks/K each")
    parser.add_argument("--json", help="also write the raw figures here")
    parser.add_argument("--keep-logs", help="copy the dev and fleet logs into this directory")
    parser.add_argument("--store", help="a postgres:// database: `gpurent server --store` "
                        "instead of `gpurent dev` (no local node)")
    parser.add_argument("--use-local-node", action="store_true",
                        help="leave the dev's own node (real processes) schedulable, as before")
    parser.add_argument("--telemetry-interval", type=float,
                        help="the fleet's --telemetry-interval (default: its own, 1 s; 0: off)")
    parser.add_argument("--perf", metavar="DIR",
                        help="diagnostic: `perf record` the server and the fleet during the "
                             "array phase into DIR/array-NODES.perf.data")
    args = parser.parse_args()
    args.binary_arg = args.binary
    binary = args.binary if os.path.isabs(args.binary) else os.path.join(ROOT, args.binary)

    results = []
    for n in [int(x) for x in args.nodes.split(",")]:
        log(f"=== {n} nodes ===")
        results.append(run_size(binary, n, args.tasks, args.procs, args.threads,
                                args.phase_limit, args.phases.split(","), args.array_split,
                                args.keep_logs, args.use_local_node, args.perf,
                                args.telemetry_interval, args.store))
        log(json.dumps({k: v for k, v in results[-1].items()
                        if k not in ("array", "separate")}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    print(markdown(args, results))


if __name__ == "__main__":
    main()
