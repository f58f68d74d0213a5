"""AsyncClient: its HTTP/1.1 transport and retries against a scripted server (503 then 200,
429, idempotency keys, failover, keep-alive, framing), and the same groups and methods as Client
against the session's `gpurent dev` (concurrency, pagination, streams, waits, uploads)."""
import asyncio
import inspect
import json

import pytest

import gpurent
from gpurent import models
from scripted import Answer, ScriptedServer, dead_url, header, problem

TIMEOUT = 30


def run(coroutine):
    return asyncio.run(coroutine)


def client(url, **kwargs):
    """An AsyncClient whose sleeps are recorded instead of waited."""
    c = gpurent.AsyncClient(url=url, api_key="gpr_test", **kwargs)
    c.sleeps = []

    async def sleep(seconds):
        c.sleeps.append(seconds)
    c._sleep = sleep
    return c


@pytest.fixture
def server():
    """Makes scripted servers, closed after the test."""
    servers = []

    def make(answers):
        s = ScriptedServer(answers)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.close()


# ---- the same surface as Client ------------------------------------------------------------------
def test_async_client_has_every_method_of_client():
    sync = gpurent.Client(url="http://x", api_key="k")
    c = gpurent.AsyncClient(url="http://x", api_key="k")
    for name, group in gpurent.api.Api._GROUPS.items():
        assert type(getattr(sync, name)) is type(getattr(c, name)) is group
    assert inspect.iscoroutine(coro := c.whoami())
    coro.close()  # never sent
    assert hasattr(c.instances.list(), "__aiter__")


# ---- retries ------------------------------------------------------------------------------------
def test_503_then_200_honours_retry_after(server):
    s = server([Answer(503, problem(503, "no_leader"), {"Retry-After": "2"}),
                Answer(200, b'{"status": "ok"}')])

    async def main():
        async with client(s.url) as c:
            assert (await c.health()).status == "ok"
            return c.sleeps
    sleeps = run(main())
    assert len(s.requests) == 2 and len(sleeps) == 1 and sleeps[0] >= 2.0


def test_429_retried_then_raised_when_retries_run_out(server):
    s = server([Answer(429, problem(429, "rate_limited"), {"Retry-After": "1"})] * 3)

    async def main():
        async with client(s.url, retries=2) as c:
            with pytest.raises(gpurent.RateLimited) as e:
                await c.whoami()
            return e.value, c.sleeps
    error, sleeps = run(main())
    assert error.retry_after == 1.0 and len(s.requests) == 3 and len(sleeps) == 2


def test_4xx_not_retried_and_mapped(server):
    s = server([Answer(404, problem(404, "instance_not_found", "no such instance"))])

    async def main():
        async with client(s.url) as c:
            with pytest.raises(gpurent.NotFound) as e:
                await c.instances.get("i-x")
            return e.value
    error = run(main())
    assert (error.status, error.code, error.detail) == (404, "instance_not_found",
                                                        "no such instance")
    assert len(s.requests) == 1 and s.requests[0][1] == "/v1/instances/i-x"


def test_creation_retried_under_one_idempotency_key(server):
    s = server([Answer(502, problem(502, "upstream_failed")),
                Answer(201, json.dumps({"id": "j-1"}).encode())])

    async def main():
        async with client(s.url) as c:
            return await c.request("POST", "/v1/jobs", body={"command": "true"})
    assert run(main()) == {"id": "j-1"}
    keys = [header(r, "Idempotency-Key") for r in s.requests]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]


def test_post_without_key_not_retried_after_upstream_failed(server):
    s = server([Answer(502, problem(502, "upstream_failed")), Answer(200)])

    async def main():
        async with client(s.url) as c:
            with pytest.raises(gpurent.ServerError):
                await c.instances.stop("i-1")
    run(main())
    assert len(s.requests) == 1 and header(s.requests[0], "Idempotency-Key") is None


def test_connection_refused_retried_then_connection_failed():
    async def main():
        async with client(dead_url(), retries=2) as c:
            with pytest.raises(gpurent.ConnectionFailed):
                await c.whoami()
            return c.sleeps
    sleeps = run(main())
    assert len(sleeps) == 2 and all(0 <= d <= 30 for d in sleeps)


def test_failover_to_the_second_url(server):
    s = server([Answer(200, b'{"status": "ok"}')])

    async def main():
        async with client(f"{dead_url()},{s.url}") as c:
            assert (await c.health()).status == "ok"
            return c.url
    assert run(main()) == s.url


# ---- the HTTP/1.1 transport ----------------------------------------------------------------------
def test_keep_alive_and_a_pool_for_concurrent_calls(server):
    s = server([Answer(200, b'{"status": "ok"}')] * 13)

    async def main():
        async with client(s.url) as c:
            for _ in range(3):
                await c.health()
            assert s.connections == 1
            await asyncio.gather(*(c.health() for _ in range(10)))
    run(main())
    assert len(s.requests) == 13 and 1 < s.connections <= 11


def test_a_connection_the_server_closed_while_idle_is_not_reused(server):
    s = server([Answer(200, b'{"status": "ok"}', close_after=True),
                Answer(202, json.dumps({"id": "i-1"}).encode())])

    exchanges = []

    async def main():
        async with client(s.url, on_request=exchanges.append) as c:
            await c.health()
            await asyncio.sleep(0.1)  # idle: the server's close arrives
            # A POST without an Idempotency-Key is not repeatable: it must not be lost.
            return await c.request("POST", "/v1/instances/i-1/stop", idempotency_key=False), c
    answer, c = run(main())
    assert answer == {"id": "i-1"} and s.connections == 2 and c.sleeps == []
    assert [e.status for e in exchanges] == [200, 202]  # not even tried on the closed one


def test_framing_chunked_content_length_and_until_close(server):
    big = json.dumps({"items": ["x" * 1000] * 300, "next_cursor": None}).encode()
    s = server([Answer(200, [b'{"status"', b': "o', b'k"}']),
                Answer(200, big),
                Answer(200, b'{"status": "closed"}', until_close=True),
                Answer(200, b'{"status": "again"}')])

    async def main():
        async with client(s.url) as c:
            assert (await c.health()).status == "ok"
            assert len(await c.request("GET", "/v1/things")) == 2
            assert (await c.health()).status == "closed"
            assert (await c.health()).status == "again"  # on a new connection
    run(main())
    assert s.connections == 2


def test_stream_lines_across_chunks(server):
    s = server([Answer(200, [b"line 1\nli", b"ne 2\n", b"tail"],
                       {"Content-Type": "text/plain"})])

    async def main():
        async with client(s.url) as c:
            return [line async for line in c.instances.stream_logs("i-1")]
    assert run(main()) == ["line 1\n", "line 2\n", "tail"]
    assert s.requests[0][1] == "/v1/instances/i-1/logs?follow=true"


def test_error_answer_to_a_stream_is_raised(server):
    s = server([Answer(409, problem(409, "instance_not_running"))])

    async def main():
        async with client(s.url) as c:
            with pytest.raises(gpurent.Conflict) as e:
                async for _ in c.instances.exec_stream("i-1", ["true"]):
                    pass
            return e.value
    assert run(main()).code == "instance_not_running"


# ---- against gpurent dev -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tenant_key(dev):
    return dev.new_tenant("sdk-async")[1]


def test_concurrent_launches_pagination_and_waits(dev, tenant_key):
    async def main():
        async with dev.async_client(tenant_key) as c:
            made = await asyncio.gather(*(
                c.instances.create(name=f"async-{i}", gpu_type="h100-80g", gpu_milli=100,
                                   command=f"echo hello {i}") for i in range(6)))
            assert all(isinstance(i, models.Instance) for i in made)
            ended = await asyncio.gather(*(
                c.instances.wait_until(i.id, "stopped", timeout=TIMEOUT) for i in made))
            assert {e.exit_code for e in ended} == {0}
            listed = [i.id async for i in c.instances.list(limit=2)]
            assert sorted(listed) == sorted(i.id for i in made)
            logs = await asyncio.gather(*(c.instances.logs(i.id) for i in made))
            assert logs == [f"hello {i}\n" for i in range(6)]
    run(main())


def test_streams_exec_and_copies(dev, tenant_key, tmp_path):
    (tmp_path / "notes.txt").write_text("async copy\n")

    async def main():
        async with dev.async_client(tenant_key) as c:
            inst = await c.instances.create(gpu_type="h100-80g", gpu_milli=100,
                                            command="echo one; echo two; sleep 1000")
            await c.wait_until(inst.id, "running", timeout=TIMEOUT)
            copied = await c.instances.copy(inst.id, str(tmp_path / "notes.txt"))
            assert copied.names == ["notes.txt"]
            result = await c.instances.exec(inst.id, "cat notes.txt; exit 7")
            assert (result.stdout, result.exit_code) == ("async copy\n", 7)
            frames = [f async for f in c.instances.exec_stream(inst.id, ["echo", "x"])]
            assert (frames[0].data, frames[-1].exit_code) == ("x\n", 0)
            stream = c.instances.stream_logs(inst.id, read_timeout=TIMEOUT)
            first = [await stream.__anext__(), await stream.__anext__()]
            await stream.aclose()  # leaving a follow early closes its connection
            assert first == ["one\n", "two\n"]
            await c.instances.delete(inst.id)
            with pytest.raises(gpurent.NotFound) as e:
                await c.jobs.get("j-nope")
            assert e.value.code == "job_not_found"
    run(main())


def test_array_job_task_logs(dev, tenant_key):
    async def main():
        async with dev.async_client(tenant_key) as c:
            job = await c.jobs.create(gpu_type="h100-80g", gpu_milli=100, array=4,
                                      command="echo $((GPURENT_ARRAY_INDEX * 10))")
            done = await c.jobs.wait_until(job.id, gpurent.JOB_FINAL_STATES, timeout=TIMEOUT)
            assert done.state == "succeeded"
            assert await c.jobs.task_logs(job.id) == {i: f"{i * 10}\n" for i in range(4)}
    run(main())
