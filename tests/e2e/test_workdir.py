"""Getting code to an instance: `--workdir DIR` packs a local directory, uploads it (resumable, in
pieces, checked by SHA-256) and the node unpacks it into the instance's home before the command
starts, once per instance, for launches and for every task of a job; the upload API refuses bad
input and other tenants."""

import hashlib
import json
import os

from conftest import problem, wait_for


def logs(platform, instance_id, key):
    return platform.call("GET", f"/v1/instances/{instance_id}/logs", key).body.decode()


def make_project(tmp_path):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "train.py").write_text(
        "import os\n"
        "print('training on', open('data/x.txt').read().strip())\n"
        "print('ignored present:', os.path.exists('weights.bin'))\n"
        "open('runs.txt', 'a').write('run\\n')\n"
        "print('runs so far:', len(open('runs.txt').read().split()))\n")
    (project / "data" / "x.txt").write_text("the data\n")
    (project / "weights.bin").write_bytes(b"\0" * 4096)
    (project / ".gpurentignore").write_text("*.bin\n")
    return project


def test_launch_with_a_workdir_runs_the_local_code_and_keeps_its_changes(platform, tmp_path):
    _, key = platform.new_tenant("alice")
    project = make_project(tmp_path)
    launched = platform.cli("launch", "--gpu", "h100-80g", "--workdir", str(project), "-o", "json",
                            "--", "python3", "train.py", key=key)
    assert "uploaded as u-" in launched.stderr, launched.stderr
    instance = json.loads(launched.stdout)
    assert instance["workdir"].startswith("u-")
    platform.wait_state(instance["id"], "stopped", key)
    out = wait_for(lambda: (lambda text: text if "runs so far" in text else None)(
        logs(platform, instance["id"], key)), what="the run's output")
    assert "training on the data" in out and "ignored present: False" in out, out
    assert "runs so far: 1" in out, out

    # A second run finds what the first one left: the workdir is unpacked once per instance.
    platform.cli("start", instance["id"], key=key)
    wait_for(lambda: "runs so far: 2" in logs(platform, instance["id"], key),
             what="the second run's output")


def test_every_task_of_a_job_gets_the_workdir(platform, tmp_path):
    _, key = platform.new_tenant("bob")
    project = tmp_path / "job"
    project.mkdir()
    (project / "task.sh").write_text("echo task $GPURENT_ARRAY_INDEX of $(cat name.txt)\n")
    (project / "name.txt").write_text("the sweep\n")
    submitted = platform.cli("job", "submit", "--gpu", "h100-80g", "--array", "3", "--workdir",
                             str(project), "-o", "json", "--", "sh", "task.sh", key=key)
    job = json.loads(submitted.stdout)
    wait_for(lambda: platform.call("GET", f"/v1/jobs/{job['id']}", key).json()["state"] ==
             "succeeded", what="the job to succeed")
    for index in range(3):
        out = platform.cli("job", "logs", job["id"], "--task", str(index), key=key).stdout
        assert f"task {index} of the sweep" in out, out


def test_the_upload_api_resumes_checks_and_refuses(platform):
    _, key = platform.new_tenant("carol")
    _, other_key = platform.new_tenant("mallory")
    data = os.urandom(2_500_000)
    digest = hashlib.sha256(data).hexdigest()
    problem(platform.call("POST", "/v1/uploads", key, body={"size": 0, "sha256": digest}), 400)
    problem(platform.call("POST", "/v1/uploads", key, body={"size": 10, "sha256": "xyz"}), 400)
    problem(platform.call("POST", "/v1/uploads", key,
                          body={"size": 300 << 20, "sha256": digest}), 413, "upload_too_large")
    created = platform.call("POST", "/v1/uploads", key, body={"size": len(data), "sha256": digest})
    assert created.status == 201, created.body
    upload_id = created.json()["id"]
    put = lambda offset, chunk, k=key: platform.call(  # noqa: E731
        "PUT", f"/v1/uploads/{upload_id}?offset={offset}", k, raw=chunk,
        headers={"Content-Type": "application/octet-stream"})
    assert put(0, data[:1_000_000]).status == 200
    # A piece sent again (its answer was lost) says where to go on.
    problem(put(0, data[:1_000_000]), 409, "upload_offset_mismatch")
    problem(put(1_000_000, data[1_000_000:1_000_100], other_key), 404)
    problem(platform.call("GET", f"/v1/uploads/{upload_id}", other_key), 404)
    # Not complete yet: no instance may name it.
    problem(platform.call("POST", "/v1/instances", key,
                          body={"gpu_type": "h100-80g", "workdir": upload_id}), 409,
            "upload_incomplete")
    status = platform.call("GET", f"/v1/uploads/{upload_id}", key).json()
    assert status["received"] == 1_000_000 and not status["complete"]
    assert put(1_000_000, data[1_000_000:2_000_000]).status == 200
    done = put(2_000_000, data[2_000_000:])
    assert done.status == 200 and done.json()["complete"], done.body
    # Another tenant cannot run it.
    problem(platform.call("POST", "/v1/instances", other_key,
                          body={"gpu_type": "h100-80g", "workdir": upload_id}), 404,
            "upload_not_found")

    # Bytes that do not match the declared SHA-256 are discarded.
    bad = platform.call("POST", "/v1/uploads", key, body={"size": 4, "sha256": digest}).json()
    problem(platform.call("PUT", f"/v1/uploads/{bad['id']}?offset=0", key, raw=b"abcd",
                          headers={"Content-Type": "application/octet-stream"}), 422,
            "checksum_mismatch")
    assert platform.call("GET", f"/v1/uploads/{bad['id']}", key).json()["received"] == 0
