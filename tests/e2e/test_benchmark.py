"""The node benchmark end to end (docs/node-benchmark.md): a joining agent's simulated GPUs are
measured before they take work, offers show the figures and TFLOPS per price and sort by it, an
operator measures a node's idle GPUs through the CLI, the figures survive a restart, bad
requests get a clear 4xx, and the ResNet-50 job runs (on the CPU here), says its images/s, and
an operator records them for the type: offers show them per price and estimates time and price N
epochs from them."""

import json

from conftest import Platform, problem, wait_for


def measured_offer(platform, gpu_type):
    return wait_for(lambda: platform.offers().get(gpu_type, {}).get("measured"),
                    what=f"{gpu_type}'s figures")


def the_node(platform, name=None):
    nodes = platform.call("GET", "/v1/nodes").json()["items"]
    return next(n for n in nodes if name is None or n["name"] == name)


def test_offers_show_measured_figures_and_performance_per_price(platform, tmp_path):
    h100 = measured_offer(platform, "h100-80g")
    assert h100["gpus"] == 8 and h100["simulated"] is True
    # The catalog's 989.5 dense BF16 TFLOPS at the simulated 70 %.
    assert h100["figures"]["training_tflops"] == 692.65
    assert h100["figures"]["gemm_tflops"]["fp8"] == 1385.3
    offer = platform.offers()["h100-80g"]
    price = offer["price_per_gpu_hour_micros"]
    assert abs(h100["perf_per_price"] - 692.65 * 1_000_000 / price) < 1e-6
    node = the_node(platform)
    assert node["benchmark_pending"] is None
    for gpu in node["gpus"]:
        assert gpu["benchmark"]["reason"] == "join"
        assert gpu["benchmark"]["slow"] is False and gpu["benchmark"]["shortfall_percent"] == 0
    events = platform.call("GET", "/v1/events?kind=node.benchmarked").json()["items"]
    assert [e["object_id"] for e in events] == [node["id"]]

    # A second node of another type: offers sort by what a currency unit buys an hour.
    token = platform.call("POST", "/v1/join-tokens", body={"description": "l4 rack"}).json()
    platform.start_process(
        ["agent", "--server", platform.url, "--join-token", token["token"], "--sim-gpus",
         "4xl4-24g", "--data-dir", str(tmp_path / "agent2"), "--name", "l4-rack"], "agent2")
    l4 = measured_offer(platform, "l4-24g")
    by_value = platform.call("GET", "/v1/offers?sort=perf_per_price").json()["items"]
    ranked = [o["measured"]["perf_per_price"] for o in by_value if o["measured"]]
    assert ranked == sorted(ranked, reverse=True) and len(ranked) == 2
    listed = json.loads(platform.cli("offers", "--sort", "perf-per-price", "-o", "json").stdout)
    assert [o["gpu_type"] for o in listed] == [o["gpu_type"] for o in by_value]
    table = platform.cli("offers", "--sort", "perf-per-price").stdout
    assert "TFLOPS PER UNIT-H" in table and "* simulated GPUs" in table
    assert l4["gpus"] == 4
    problem(platform.call("GET", "/v1/offers?sort=fastest"), 400, "invalid_sort")


def test_an_operator_measures_a_nodes_idle_gpus_and_the_figures_survive_a_restart(platform):
    measured_offer(platform, "h100-80g")
    node = the_node(platform)
    ran = platform.cli("nodes", "bench", node["id"], "--wait", "-o", "json")
    history = json.loads(ran.stdout)
    assert len(history) == 8
    assert all([r["reason"] for r in gpu["runs"]] == ["join", "operator"] for gpu in history)
    assert "measures GPUs 0,1,2,3,4,5,6,7" in ran.stderr
    # The NVLink domain's peers are kept with each GPU.
    assert history[0]["runs"][-1]["peers"], history[0]
    shown = platform.cli("nodes", "benchmarks", node["id"]).stdout
    assert "operator" in shown and "at or above median" in shown

    # Tenants may not ask; unknown nodes are not found; a busy node has nothing to measure.
    _, key = platform.new_tenant("acme")
    problem(platform.call("POST", f"/v1/nodes/{node['id']}/benchmark", key=key), 403)
    problem(platform.call("POST", "/v1/nodes/n-nope/benchmark"), 404, "node_not_found")
    problem(platform.call("GET", f"/v1/nodes/{node['id']}/benchmarks", key=key), 403)
    launched = platform.call("POST", "/v1/instances", key=key,
                             body={"gpu_type": "h100-80g", "gpu_count": 8,
                                   "command": "sleep 600"})
    assert launched.status == 201, launched.body
    platform.wait_state(launched.json()["id"], "running", key=key)
    problem(platform.call("POST", f"/v1/nodes/{node['id']}/benchmark"), 409, "no_idle_gpus")

    platform.restart()
    after = platform.call("GET", f"/v1/nodes/{node['id']}/benchmarks").json()["items"]
    assert [len(gpu["runs"]) for gpu in after] == [2] * 8
    assert platform.offers()["h100-80g"]["measured"]["gpus"] == 8
    assert the_node(platform)["benchmark_pending"] is None, "a known node is not asked again"


def test_the_resnet50_job_measures_training_throughput_on_the_cpu(tmp_path):
    """The resnet50-bench template through `gpurent bench resnet50`: here a process on Debian's
    CPU build of PyTorch, with a small batch and image so that it finishes in seconds."""
    platform = Platform(str(tmp_path))
    # The workload runs the python3 the agent finds first: Debian's, which has torch.
    platform.env["PATH"] = "/usr/bin:" + platform.env.get("PATH", "")
    platform.start()
    try:
        measured_offer(platform, "h100-80g")
        work = {"gpu_type": "h100-80g", "gpu_count": 2,
                "work": {"model": "resnet50", "epochs": 3, "images_per_epoch": 1000}}
        problem(platform.call("POST", "/v1/estimate", body=work), 409, "not_measured")

        ran = platform.cli("bench", "resnet50", "--gpu", "h100-80g", "--batch", "2",
                           "--steps", "2", "--warmup", "1", "--image-size", "64", "--record",
                           "-o", "json", timeout=600)
        answer = json.loads(ran.stdout)
        assert answer["gpu_type"] == "h100-80g"
        assert [r["precision"] for r in answer["results"]] == ["fp32", "amp"]
        for result in answer["results"]:
            assert result["images_per_s"] > 0 and result["batch"] == 2
            assert result["device"] == "cpu" and result["image_size"] == 64
        instance_id = answer["instance_id"]
        instance = platform.instance(instance_id)
        assert instance["state"] == "stopped" and instance["exit_code"] == 0
        recorded = answer["recorded"]
        assert recorded["gpu_type"] == "h100-80g" and recorded["run"]["instance_id"] == instance_id
        amp = next(r["images_per_s"] for r in answer["results"] if r["precision"] == "amp")
        assert abs(recorded["run"]["images_per_s"]["amp"] - amp) < 0.001

        # The type's figures in offers, and per price.
        trained = platform.offers()["h100-80g"]["measured"]["resnet50"]
        assert trained["gpus"] == 1 and trained["batch"] == 2 and trained["image_size"] == 64
        assert trained["images_per_s"] == recorded["run"]["images_per_s"]
        price = platform.offers()["h100-80g"]["price_per_gpu_hour_micros"]
        assert abs(trained["images_per_price"] - amp * 3600 * 1_000_000 / price) < 0.01 * amp
        by_images = platform.call("GET", "/v1/offers?sort=images_per_price").json()["items"]
        assert by_images[0]["gpu_type"] == "h100-80g"
        # Recording it again keeps one run; the GPU's history shows it.
        again = platform.call("POST", "/v1/training-benchmarks", body={"instance_id": instance_id})
        assert again.status == 200 and again.json() == recorded, again.body
        history = platform.call("GET", f"/v1/nodes/{recorded['node_id']}/benchmarks").json()
        gpu = next(g for g in history["items"] if g["uuid"] == recorded["gpu_uuid"])
        assert [t["instance_id"] for t in gpu["trainings"]] == [instance_id]

        # N epochs priced from the figure: 3,000 images on two GPUs.
        estimate = platform.call("POST", "/v1/estimate", body=work)
        assert estimate.status == 200, estimate.body
        timed = estimate.json()["work"]
        assert timed["images"] == 3000 and timed["precision"] == "amp"
        assert abs(timed["images_per_s"] - 2 * amp) < 0.01
        assert abs(timed["seconds"] - 3000 / (2 * amp)) <= 1
        hourly = estimate.json()["per_hour_micros"]["total"]
        billed = max(timed["seconds"], estimate.json()["minimum_billed_seconds"])
        assert timed["cost_micros"] == hourly * billed // 3600
        shown = platform.cli("estimate", "--gpu", "h100-80g", "--epochs", "90").stdout
        assert "Expected time" in shown and "Expected cost" in shown and "90 epochs" in shown

        # Bad requests: 4xx, nothing recorded.
        _, key = platform.new_tenant("acme")
        problem(platform.call("POST", "/v1/training-benchmarks", key=key,
                              body={"instance_id": instance_id}), 403)
        problem(platform.call("POST", "/v1/training-benchmarks", body={"instance_id": "i-nope"}),
                404, "instance_not_found")
        problem(platform.call("POST", "/v1/training-benchmarks", body={}), 400, "invalid_field")
        problem(platform.call("POST", "/v1/training-benchmarks",
                              body={"instance_id": instance_id, "x": 1}), 400, "unknown_field")
        other = platform.call("POST", "/v1/instances", key=key,
                              body={"gpu_type": "h100-80g", "command": "echo GPURENT_RESNET50"})
        assert other.status == 201, other.body
        platform.wait_state(other.json()["id"], "stopped", key=key)
        problem(platform.call("POST", "/v1/training-benchmarks",
                              body={"instance_id": other.json()["id"]}), 409, "not_a_benchmark")
        for bad in ({"model": "vgg16", "epochs": 1}, {"model": "resnet50", "epochs": 0},
                    {"model": "resnet50", "epochs": 1, "precision": "fp64"}):
            problem(platform.call("POST", "/v1/estimate", body={"gpu_type": "h100-80g",
                                                                 "work": bad}), 400, "invalid_field")

        # A newer run of another shape is the type's figure from then on; it survives a restart.
        table = platform.cli("bench", "resnet50", "--gpu", "h100-80g", "--batch", "2",
                             "--steps", "1", "--warmup", "0", "--image-size", "32", "--record",
                             timeout=600).stdout
        assert "IMAGES/S" in table and "amp" in table and "Recorded against GPU" in table
        platform.restart()
        trained = platform.offers()["h100-80g"]["measured"]["resnet50"]
        assert trained["image_size"] == 32 and trained["gpus"] == 1
        # A batch of one is refused before anything runs: batch normalisation needs two images.
        failed = platform.cli("bench", "resnet50", "--gpu", "h100-80g", "--batch", "1", check=False)
        assert failed.returncode != 0 and "--batch" in failed.stderr
        # A type nobody offers cannot run it: the launch's own error, and exit 1.
        refused = platform.cli("bench", "resnet50", "--gpu", "nope-1g", check=False)
        assert refused.returncode == 1 and "nope-1g" in refused.stderr
    finally:
        platform.shutdown()
