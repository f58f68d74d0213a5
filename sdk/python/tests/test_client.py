"""Tests of the Python SDK's Client: error mapping, retries against a scripted server, config, the
generator's --check, and a first run against a real `gpurent dev` (tests/devserver.py; skipped
without a binary). test_routes.py calls every other route; test_async.py does the same for
AsyncClient.

    GPURENT_BIN=build/gpurent PYTHONPATH=sdk/python python3 -m pytest sdk/python/tests -q
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

from devserver import SDK, find_binary, shared_dev
from scripted import Answer, ScriptedServer, dead_url, problem

import gpurent
from gpurent import errors, models
from gpurent.config import resolve_settings


class ErrorMappingTest(unittest.TestCase):
    def test_status_classes(self):
        cases = {400: errors.BadRequest, 401: errors.Unauthorized, 402: errors.PaymentRequired,
                 403: errors.Forbidden, 404: errors.NotFound, 405: errors.MethodNotAllowed,
                 409: errors.Conflict, 413: errors.PayloadTooLarge, 422: errors.Unprocessable,
                 429: errors.RateLimited, 500: errors.ServerError, 502: errors.ServerError,
                 503: errors.ServerError, 418: errors.ApiError}
        for status, cls in cases.items():
            e = errors.error_from_response(status, problem(status, "some_code", "why"))
            self.assertIs(type(e), cls, status)
            self.assertEqual((e.status, e.code, e.title, e.detail),
                             (status, "some_code", "T", "why"))
            self.assertIsInstance(e, errors.ApiError)

    def test_retry_after_and_non_json(self):
        e = errors.error_from_response(429, problem(429, "rate_limited"), {"Retry-After": "3"})
        self.assertEqual(e.retry_after, 3.0)
        e = errors.error_from_response(502, b"<html>bad gateway</html>", {})
        self.assertIsInstance(e, errors.ServerError)
        self.assertEqual(e.code, "")
        self.assertIn("bad gateway", e.detail)


class RetryTest(unittest.TestCase):
    def client(self, server, **kw):
        c = gpurent.Client(url=server.url, api_key="gpr_test", **kw)
        c.sleeps = []
        c._sleep = c.sleeps.append
        return c

    def test_503_then_200_honours_retry_after(self):
        s = ScriptedServer([(503, {"Retry-After": "2"}, problem(503, "no_leader")),
                            (200, {}, b'{"status": "ok"}')])
        self.addCleanup(s.close)
        c = self.client(s)
        self.assertEqual(c.request("GET", "/healthz"), {"status": "ok"})
        self.assertEqual(len(s.requests), 2)
        self.assertEqual(len(c.sleeps), 1)
        self.assertGreaterEqual(c.sleeps[0], 2.0)

    def test_429_retried_then_raised_when_retries_run_out(self):
        s = ScriptedServer([(429, {"Retry-After": "1"}, problem(429, "rate_limited"))] * 3)
        self.addCleanup(s.close)
        c = self.client(s, retries=2)
        with self.assertRaises(errors.RateLimited) as cm:
            c.request("GET", "/v1/whoami")
        self.assertEqual(cm.exception.retry_after, 1.0)
        self.assertEqual(len(s.requests), 3)

    def test_4xx_not_retried(self):
        s = ScriptedServer([(404, {}, problem(404, "instance_not_found"))])
        self.addCleanup(s.close)
        c = self.client(s)
        with self.assertRaises(errors.NotFound):
            c.instances.get("i-x")
        self.assertEqual(len(s.requests), 1)

    def test_post_carries_idempotency_key_and_retries_with_the_same(self):
        s = ScriptedServer([(502, {}, problem(502, "upstream_failed")), (201, {}, b"{}")])
        self.addCleanup(s.close)
        c = self.client(s)
        c.request("POST", "/v1/things", body={"a": 1})
        keys = [r[2].get("Idempotency-Key") for r in s.requests]
        self.assertEqual(len(keys), 2)
        self.assertTrue(keys[0])
        self.assertEqual(keys[0], keys[1])

    def test_post_without_key_not_retried_after_upstream_failed(self):
        s = ScriptedServer([(502, {}, problem(502, "upstream_failed")), (200, {}, b"{}")])
        self.addCleanup(s.close)
        c = self.client(s)
        with self.assertRaises(errors.ServerError):
            c.request("POST", "/v1/x", idempotency_key=False)
        self.assertEqual(len(s.requests), 1)

    def test_connection_refused_retried_then_connection_failed(self):
        c = gpurent.Client(url=dead_url(), api_key="k", retries=2)
        sleeps = []
        c._sleep = sleeps.append
        with self.assertRaises(errors.ConnectionFailed):
            c.request("GET", "/healthz")
        self.assertEqual(len(sleeps), 2)
        self.assertTrue(all(0 <= d <= 30 for d in sleeps))

    def test_failover_to_second_url(self):
        s = ScriptedServer([(200, {}, b'{"ok": true}')])
        self.addCleanup(s.close)
        c = gpurent.Client(url=f"{dead_url()},{s.url}", api_key="k")
        c._sleep = lambda d: None
        self.assertEqual(c.request("GET", "/healthz"), {"ok": True})

    def test_keep_alive_reuses_one_connection(self):
        s = ScriptedServer([(200, {}, b"{}")] * 3)
        self.addCleanup(s.close)
        c = self.client(s)
        for _ in range(3):
            c.request("GET", "/healthz")
        self.assertEqual(len(s.requests), 3)
        self.assertIsNotNone(c._conn)

    def test_a_connection_the_server_closed_while_idle_is_not_reused(self):
        s = ScriptedServer([Answer(200, b'{"status": "ok"}', close_after=True),
                            Answer(202, b'{"id": "i-1"}')])
        self.addCleanup(s.close)
        exchanges = []
        c = self.client(s, on_request=exchanges.append)
        c.request("GET", "/healthz")
        time.sleep(0.1)  # idle: the server's close arrives
        # A POST without an Idempotency-Key is not repeatable: it must not be lost.
        self.assertEqual(c.request("POST", "/v1/instances/i-1/stop", idempotency_key=False),
                         {"id": "i-1"})
        self.assertEqual((s.connections, c.sleeps), (2, []))
        # Not even tried on the closed connection (which a write may or may not notice).
        self.assertEqual([e.status for e in exchanges], [200, 202])

    def test_stream_lines_across_chunks_and_errors(self):
        s = ScriptedServer([Answer(200, [b"line 1\nli", b"ne 2\n", b"tail"],
                                   {"Content-Type": "text/plain"}),
                            Answer(409, problem(409, "instance_not_running"))])
        self.addCleanup(s.close)
        c = self.client(s)
        self.assertEqual(list(c.instances.stream_logs("i-1")), ["line 1\n", "line 2\n", "tail"])
        with self.assertRaises(errors.Conflict) as cm:
            list(c.instances.exec_stream("i-1", ["true"]))
        self.assertEqual(cm.exception.code, "instance_not_running")

    def test_upload_goes_on_where_the_server_is_after_an_offset_mismatch(self):
        piece = gpurent.api.UPLOAD_PIECE_BYTES
        data = bytes(range(256)) * (piece // 256) + b"tail"

        def upload(received, complete=False):
            return json.dumps({"id": "u-1", "size": len(data), "sha256": "s", "received": received,
                               "complete": complete, "created_at": "t"}).encode()
        s = ScriptedServer([Answer(201, upload(0)),
                            # the first piece had arrived before (a retry after a lost answer)
                            Answer(409, problem(409, "upload_offset_mismatch")),
                            Answer(200, upload(piece)),
                            Answer(200, upload(len(data), complete=True))])
        self.addCleanup(s.close)
        done = self.client(s).uploads.upload(data)
        self.assertTrue(done.complete)
        self.assertEqual([(m, p) for m, p, _, _ in s.requests], [
            ("POST", "/v1/uploads"), ("PUT", "/v1/uploads/u-1?offset=0"),
            ("GET", "/v1/uploads/u-1"), ("PUT", f"/v1/uploads/u-1?offset={piece}")])
        self.assertEqual(s.requests[3][3], b"tail")

    def test_pagination_follows_cursor(self):
        s = ScriptedServer([
            (200, {}, json.dumps({"items": [{"n": 1}, {"n": 2}], "next_cursor": "c2"}).encode()),
            (200, {}, json.dumps({"items": [{"n": 3}], "next_cursor": None}).encode())])
        self.addCleanup(s.close)
        c = self.client(s)
        self.assertEqual([i["n"] for i in c.paginate("/v1/things", limit=2)], [1, 2, 3])
        self.assertIn("limit=2", s.requests[0][1])
        self.assertIn("cursor=c2", s.requests[1][1])


class ConfigTest(unittest.TestCase):
    def test_precedence(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "gpurent"))
            with open(os.path.join(d, "gpurent", "config.toml"), "w") as f:
                f.write('url = "http://file:1"\napi_key = "gpr_file"\n')
            env = {"XDG_CONFIG_HOME": d}
            self.assertEqual(resolve_settings(env=env),
                             gpurent.Settings("http://file:1", "gpr_file"))
            env["GPURENT_URL"] = "http://env:2"
            self.assertEqual(resolve_settings(env=env).url, "http://env:2")
            self.assertEqual(resolve_settings(env=env).api_key, "gpr_file")
            self.assertEqual(resolve_settings(api_key="gpr_arg", env=env).api_key, "gpr_arg")

    def test_malformed_file_and_default(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.toml")
            with open(path, "w") as f:
                f.write("url = \n")
            with self.assertRaises(gpurent.ConfigError):
                resolve_settings(env={"GPURENT_CONFIG": path})
            s = resolve_settings(env={"GPURENT_CONFIG": os.path.join(d, "missing.toml")})
            self.assertEqual(s, gpurent.Settings("http://127.0.0.1:8080", ""))


class ModelsTest(unittest.TestCase):
    def test_generator_check_mode(self):
        run = subprocess.run([sys.executable, os.path.join(SDK, "gen_models.py"), "--check"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)

    def test_generator_check_detects_stale_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write("# stale\n")
        self.addCleanup(os.unlink, f.name)
        run = subprocess.run([sys.executable, os.path.join(SDK, "gen_models.py"), "--check",
                              "--out", f.name], capture_output=True, text=True)
        self.assertEqual(run.returncode, 1)

    def test_unknown_keys_ignored_and_round_trip(self):
        d = {"tenant_id": "t", "balance_micros": 5, "currency": "CNY", "new_field": 1}
        b = models.Balance.from_dict(d)
        self.assertEqual(b.balance_micros, 5)
        self.assertEqual(b.to_dict(), {"tenant_id": "t", "balance_micros": 5, "currency": "CNY"})
        with self.assertRaises(ValueError):
            models.Balance.from_dict({"tenant_id": "t"})

    def test_keyword_field_and_optional_omitted(self):
        report = {"from": "2026-12-01T00:00:00Z", "to": "2026-12-02T00:00:00Z",
                  "currency": "CNY", "total_micros": 5, "credits_micros": 0,
                  "by_gpu_type": {"h100-80g": 5}, "by_tenant": {"t-1": 5}}
        r = models.RevenueReport.from_dict(report)
        self.assertEqual(r.from_, "2026-12-01T00:00:00Z")
        self.assertEqual(r.to_dict(), report)
        self.assertEqual(models.InstanceCreate(gpu_type="h100-80g").to_dict(),
                         {"gpu_type": "h100-80g"})


@unittest.skipUnless(find_binary(), "no gpurent binary (set GPURENT_BIN)")
class IntegrationTest(unittest.TestCase):
    """Against a real `gpurent dev` on a free port, as tests/e2e/conftest.py starts it."""

    @classmethod
    def setUpClass(cls):
        cls.c = shared_dev().client(timeout=10)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_identity_balance_offers_estimate(self):
        self.assertEqual(self.c.whoami().role, "admin")
        self.assertEqual(self.c.balance().currency, self.c.offers()[0].currency)
        e = self.c.estimate(gpu_type="h100-80g", gpu_count=2)
        self.assertEqual(e.per_hour_micros.gpu, 2 * e.gpu_price_per_gpu_hour_micros)

    def test_instance_lifecycle_logs_and_pagination(self):
        c = self.c
        inst = c.instances.create(gpu_type="h100-80g",
                                  command=["sh", "-c", "echo hello; echo world; sleep 1000"])
        self.assertIsInstance(inst, models.Instance)
        running = c.wait_until(inst.id, "running", timeout=30)
        self.assertEqual(running.id, inst.id)
        deadline = time.monotonic() + 10
        while "world" not in c.instances.logs(inst.id) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(c.instances.logs(inst.id), "hello\nworld\n")
        more = [c.instances.create(gpu_type="h100-80g", gpu_milli=100, command=["true"])
                for _ in range(4)]
        ids = [i.id for i in c.instances.list(limit=2)]  # three pages at least
        for i in [inst, *more]:
            self.assertIn(i.id, ids)
        self.assertEqual(len(ids), len(set(ids)))
        page = c.instances.list_page(limit=2)
        self.assertEqual(len(page.items), 2)
        self.assertIsNotNone(page.next_cursor)
        stopped = c.instances.stop(inst.id)
        self.assertIn(stopped.state, ("stopping", "stopped"))
        c.wait_until(inst.id, "stopped", timeout=30)
        with self.assertRaises(gpurent.UnexpectedState):
            c.wait_until(inst.id, "running", timeout=5)
        c.instances.start(inst.id)
        c.wait_until(inst.id, "running", timeout=30)
        c.instances.delete(inst.id)
        c.wait_until(inst.id, "terminated", timeout=30)

    def test_stream_logs_follows_until_the_end(self):
        inst = self.c.instances.create(
            gpu_type="h100-80g", gpu_milli=100,
            command=["sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.2; done"])
        lines = list(self.c.instances.stream_logs(inst.id, read_timeout=30))
        self.assertEqual(lines, ["line 1\n", "line 2\n", "line 3\n"])

    def test_errors_mapped(self):
        with self.assertRaises(gpurent.NotFound) as cm:
            self.c.instances.get("i-doesnotexist")
        self.assertEqual(cm.exception.code, "instance_not_found")
        with self.assertRaises(gpurent.Unprocessable) as cm:
            self.c.instances.create(gpu_type="no-such-gpu")
        self.assertEqual(cm.exception.code, "unknown_gpu_type")
        with self.assertRaises(gpurent.BadRequest):
            self.c.request("POST", "/v1/instances", body={"gpu_type": "h100-80g", "bogus": 1})
        bad = gpurent.Client(url=self.c.url, api_key="gpr_" + "x" * 40)
        with self.assertRaises(gpurent.Unauthorized):
            bad.whoami()

    def test_idempotent_create_returns_the_same_instance(self):
        a = self.c.instances.create(gpu_type="h100-80g", gpu_milli=100, command=["true"],
                                    idempotency_key="sdk-test-key-1")
        b = self.c.instances.create(gpu_type="h100-80g", gpu_milli=100, command=["true"],
                                    idempotency_key="sdk-test-key-1")
        self.assertEqual(a.id, b.id)


if __name__ == "__main__":
    unittest.main()
