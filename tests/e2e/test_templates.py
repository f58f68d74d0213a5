"""Templates end to end: the catalog over REST and the CLI, operators' own templates, launching
from a template in the process form on `gpurent dev`, and a job from the pytorch template that
trains a small model with Debian's python3-torch (on the CPU here) and exits 0."""

import json

import pytest

from conftest import Platform, problem, wait_for

# The process runtime runs the host's software. On this project's machines a pyenv Python comes
# first on PATH; Debian's python3, which has python3-torch, is the one a GPU host would run.
HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"

TRAIN = """
import torch
torch.manual_seed(0)
x = torch.linspace(-1, 1, 64).unsqueeze(1)
y = 3 * x + 1
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
first = None
for step in range(30):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    first = first if first is not None else loss.item()
    print(f"step {step} loss {loss.item():.6f}")
assert loss.item() < first / 100, (first, loss.item())
print(f"trained: torch {torch.__version__}, cuda available: {torch.cuda.is_available()}")
"""


@pytest.fixture
def host_platform(tmp_path):
    p = Platform(str(tmp_path))
    p.env["PATH"] = HOST_PATH
    p.start()
    yield p
    p.shutdown()


def test_catalog_lists_the_built_in_templates_to_every_tenant(platform):
    _, key = platform.new_tenant("reader")
    listing = platform.call("GET", "/v1/templates", key)
    assert listing.status == 200, listing.body
    by_name = {t["name"]: t for t in listing.json()["items"]}
    assert set(by_name) == {"base", "pytorch", "tensorflow", "resnet50-bench", "jupyter"}
    assert all(t["builtin"] for t in by_name.values())
    assert by_name["tensorflow"]["runtimes"] == ["container"]
    assert by_name["pytorch"]["runtimes"] == ["process", "container"]
    assert by_name["jupyter"]["services"] == ["jupyter"]
    one = platform.call("GET", "/v1/templates/jupyter", key)
    assert one.status == 200 and one.json() == by_name["jupyter"]
    problem(platform.call("GET", "/v1/templates/nope", key), 404, "template_not_found")

    table = platform.cli("template", "ls", key=key).stdout
    assert "pytorch" in table and "process, container" in table, table
    assert "jupyter" in platform.cli("template", "show", "jupyter", key=key).stdout


def test_operators_add_their_own_templates_and_cannot_change_the_built_in_ones(platform):
    _, key = platform.new_tenant("tenant")
    body = {"description": "an echo service", "process_command": "echo from-template; sleep 600",
            "env": {"GREETING": "hi"}, "services": ["web"]}
    problem(platform.call("PUT", "/v1/templates/echo", key, body), 403, "forbidden")
    saved = platform.call("PUT", "/v1/templates/echo", body=body)
    assert saved.status == 200, saved.body
    assert saved.json()["process_command"] == ["/bin/sh", "-c", "echo from-template; sleep 600"]
    assert saved.json()["builtin"] is False

    problem(platform.call("PUT", "/v1/templates/pytorch", body=body), 409, "builtin_template")
    problem(platform.call("DELETE", "/v1/templates/base"), 409, "builtin_template")
    problem(platform.call("PUT", "/v1/templates/Bad_Name", body=body), 400, "invalid_template")
    problem(platform.call("PUT", "/v1/templates/x", body={"env": {"A": "b"}}), 400,
            "invalid_template")
    problem(platform.call("PUT", "/v1/templates/x",
                          body={"process_command": "true", "env": {"GPURENT_RUN": "9"}}), 400,
            "invalid_template")
    problem(platform.call("PUT", "/v1/templates/x", body={"process_command": "true", "x": 1}),
            400, "unknown_field")
    problem(platform.call("PUT", "/v1/templates/x", raw=b"{not json"), 400)

    # A tenant launches from it; its own env is laid over the template's.
    launched = platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "template": "echo", "env": {"EXTRA": "1"}})
    assert launched.status == 201, launched.body
    instance = launched.json()
    assert instance["template"] == "echo"
    assert instance["env"] == {"EXTRA": "1", "GREETING": "hi"}
    platform.wait_state(instance["id"], "running", key)
    wait_for(lambda: "from-template" in platform.cli("logs", instance["id"], key=key).stdout,
             what="the template's command to run")

    # Deleting the template leaves what was made from it alone; the name is gone after.
    gone = platform.call("DELETE", "/v1/templates/echo")
    assert gone.status == 204, gone.body
    assert platform.instance(instance["id"], key)["state"] == "running"
    problem(platform.call("GET", "/v1/templates/echo"), 404, "template_not_found")
    problem(platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "template": "echo"}), 422, "template_not_found")

    # The catalog survives a restart of the server.
    platform.call("PUT", "/v1/templates/kept", body={"process_command": "true"})
    platform.restart()
    assert platform.call("GET", "/v1/templates/kept").status == 200


def test_launch_from_a_template_picks_the_form_the_node_can_run(platform):
    _, key = platform.new_tenant("launcher")
    launched = json.loads(platform.cli("launch", "--gpu", "h100-80g", "--template", "base",
                                       "-o", "json", key=key).stdout)
    assert launched["template"] == "base"
    # Both forms are kept; this node has no container engine, so it runs the process form.
    assert launched["image"] == "docker.io/library/ubuntu:24.04"
    assert launched["process_command"] == ["sleep", "infinity"]
    assert platform.wait_state(launched["id"], "running", key)["state"] == "running"

    process = json.loads(platform.cli("launch", "--gpu", "h100-80g", "--template", "pytorch",
                                      "--runtime", "process", "-o", "json", key=key).stdout)
    assert process["image"] is None and process["command"] == ["sleep", "infinity"]

    # TensorFlow has no process form (Debian has no package), and image-only work has no node.
    problem(platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "template": "tensorflow", "runtime": "process"}), 422,
        "template_runtime_unavailable")
    refused = problem(platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "template": "tensorflow"}), 422, "never_fits")
    assert "gpurent.io/container-runtime=true" in refused["detail"]
    problem(platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "runtime": "process"}), 400, "invalid_field")
    problem(platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "template": "base", "runtime": "hypervisor"}), 400,
        "invalid_field")
    # A VM of the base template's process form: no node here runs VMs (tests/e2e/test_vm.py).
    vm = problem(platform.call("POST", "/v1/instances", key, {
        "gpu_type": "h100-80g", "template": "base", "runtime": "vm"}), 422, "never_fits")
    assert "gpurent.io/vm-runtime=true" in vm["detail"]
    usage = platform.cli("launch", "--gpu", "h100-80g", "--runtime", "process", key=key,
                         check=False)
    assert usage.returncode == 2 and "--template" in usage.stderr


def test_a_pytorch_template_job_trains_a_small_model_and_exits_0(host_platform):
    platform = host_platform
    _, key = platform.new_tenant("trainer")
    job = json.loads(platform.cli("job", "submit", "--gpu", "h100-80g", "--template", "pytorch",
                                  "-o", "json", "--", "python3", "-c", TRAIN, key=key).stdout)
    assert job["template"] == "pytorch"

    def finished():
        current = platform.call("GET", f"/v1/jobs/{job['id']}", key).json()
        return current if current["state"] in {"succeeded", "failed"} else None

    # Importing torch takes seconds on two shared cores.
    done = wait_for(finished, timeout=180, what="the training job to finish")
    log = platform.call("GET", f"/v1/jobs/{job['id']}/logs?task=0&rank=0", key).body.decode()
    assert done["state"] == "succeeded", (done, log)
    assert done["tasks"][0]["exit_code"] == 0
    assert "step 29 loss" in log and "trained: torch" in log, log
