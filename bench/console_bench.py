#!/usr/bin/env python3
"""The web console in headless Chromium (Debian's, through tests/e2e/browser.py), against a real
`gpurent dev`:

  first load   the bytes transferred (compressed, as the network sends them) to load the signed-in
               dashboard with an empty cache: the page, its scripts and styles, and its API calls
  interactive  milliseconds from the start of navigation to the dashboard drawn with its data
               (performance.mark("gpurent-ready") in web/src/app.js), cold (empty cache) and warm
               (files revalidated by ETag)
  instances    with --instances N instances of the tenant, the milliseconds to show the instances
               page (its first page of 50) and to move to the next page: paged, it does not grow
               with N

Usage: bench/console_bench.py [--binary build/gpurent] [--instances 10000] [--runs 5]
"""
import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from browser import Browser  # noqa: E402
from devserver import Client, start_dev  # noqa: E402


def ready_ms(browser):
    browser.wait("document.body.dataset.ready === 'true'", timeout=60)
    return browser.eval("performance.getEntriesByName('gpurent-ready')[0].startTime")


def transferred_bytes(browser):
    """Bytes received for every request of the page since the last navigation."""
    return sum(params.get("encodedDataLength", 0)
               for method, params in browser.events if method == "Network.loadingFinished")


def sign_in(browser, url, key):
    browser.goto(url + "/")
    browser.wait("document.body.dataset.ready === 'true'")
    browser.type("#api-key", key)
    browser.click("button[type=submit]")
    browser.wait("document.querySelector('#tile-balance')")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                         "gpurent"))
    parser.add_argument("--instances", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="gpurent-console-bench-")
    key = "gpr_" + secrets.token_urlsafe(32)
    proc, port = start_dev(args.binary, workdir, key)
    url = f"http://127.0.0.1:{port}"
    client = Client(port, key)
    results = {}
    try:
        browser = Browser()
        try:
            browser.send("Network.enable")
            sign_in(browser, url, key)
            cold, warm, sizes = [], [], []
            for _ in range(args.runs):
                browser.send("Network.clearBrowserCache")
                browser.reload(ignore_cache=True)
                cold.append(ready_ms(browser))
                browser.pump(0.5)  # the last answers' loadingFinished
                sizes.append(transferred_bytes(browser))
                browser.reload()
                warm.append(ready_ms(browser))
            results["first_load_bytes"] = statistics.median(sizes)
            results["interactive_cold_ms"] = statistics.median(cold)
            results["interactive_warm_ms"] = statistics.median(warm)

            # Many instances: queued work of the admin's tenant (wait_for_capacity keeps each).
            body = {"gpu_type": "h100-80g", "gpu_count": 8, "command": ["sleep", "1"],
                    "wait_for_capacity": True}
            started = time.monotonic()
            for _ in range(args.instances):
                client.expect("POST", "/v1/instances", body, status=201)
            results["instances"] = args.instances
            results["instances_created_s"] = round(time.monotonic() - started, 1)
            first, following = [], []
            for _ in range(args.runs):
                browser.eval("location.hash = '#/'")
                browser.wait("!!document.querySelector('#tile-balance')")
                t0 = browser.eval("performance.now()")
                browser.eval("location.hash = '#/instances'")
                browser.wait("document.querySelectorAll('main tbody tr').length === 50")
                first.append(browser.eval("performance.now()") - t0)
                first_row = browser.eval("document.querySelector('main tbody tr').dataset.id")
                t0 = browser.eval("performance.now()")
                browser.eval("document.querySelector('#next-page').click()")
                browser.wait(f"document.querySelector('main tbody tr')?.dataset.id !== "
                             f"{json.dumps(first_row)} && "
                             "document.querySelectorAll('main tbody tr').length === 50")
                following.append(browser.eval("performance.now()") - t0)
            results["instances_page_ms"] = statistics.median(first)
            results["next_page_ms"] = statistics.median(following)
            if browser.errors:
                raise SystemExit(f"the page had errors: {browser.errors}")
        finally:
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
