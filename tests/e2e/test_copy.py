"""`gpurent cp` on the real binary: a local file or directory is packed, uploaded (resumable,
checked by SHA-256) and unpacked by the node into a running instance (as the instance's user) or a
volume (which the instances mounting it then see and may change); other tenants, stopped
instances, paths that climb out and links that lead out are refused with problem+json."""

import gzip
import hashlib
import io
import json
import tarfile

from conftest import problem


def launch_sleeper(platform, key, *volume_args):
    launched = platform.cli("launch", "--gpu", "h100-80g", *volume_args, "-o", "json", "--",
                            "sleep", "600", key=key)
    instance_id = json.loads(launched.stdout)["id"]
    platform.wait_state(instance_id, "running", key)
    return instance_id


def run(platform, key, instance_id, script):
    ran = platform.cli("exec", instance_id, "--", "sh", "-c", script, key=key, check=False)
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    return ran.stdout


def cp(platform, key, *args, check=True):
    return platform.cli("cp", *args, key=key, check=check, timeout=120)


def tar_gz(files):
    """A tar.gz of {name: bytes}, as the CLI's packing would make it."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o664
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def upload(platform, key, data, pieces=1):
    declared = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    created = platform.call("POST", "/v1/uploads", key, body=declared)
    assert created.status in (200, 201), created.body
    upload_id = created.json()["id"]
    step = -(-len(data) // pieces)
    for offset in range(0, len(data), step):
        put = platform.call("PUT", f"/v1/uploads/{upload_id}?offset={offset}", key,
                            raw=data[offset:offset + step],
                            headers={"Content-Type": "application/octet-stream"})
        assert put.status == 200, put.body
    return upload_id


def local_dir(tmp_path):
    """A directory of local files apart from the platform's own (its data is in tmp_path)."""
    local = tmp_path / "local"
    local.mkdir(exist_ok=True)
    return local


def test_cp_copies_files_and_directories_into_a_running_instance(platform, tmp_path):
    _, key = platform.new_tenant("alice")
    instance_id = launch_sleeper(platform, key)
    tmp_path = local_dir(tmp_path)
    (tmp_path / "train.py").write_text("print('hello from cp')\n")
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "x.txt").write_text("the data\n")
    (data / "sub" / "y.txt").write_text("deeper\n")

    copied = cp(platform, key, str(tmp_path / "train.py"), f"{instance_id}:")
    assert "uploaded as u-" in copied.stderr, copied.stderr
    assert "copied 1 file" in copied.stdout, copied.stdout
    # A directory lands under its own name; with a trailing slash, its contents do.
    as_json = json.loads(cp(platform, key, str(data), f"{instance_id}:inputs", "-o", "json").stdout)
    assert as_json["files"] == 2 and as_json["directories"] == 2, as_json
    assert as_json["bytes"] == len("the data\n") + len("deeper\n")
    assert as_json["path"].endswith(f"/{instance_id}/inputs"), as_json
    assert "data/sub/y.txt" in as_json["names"], as_json
    cp(platform, key, str(data) + "/", f"{instance_id}:flat")

    out = run(platform, key, instance_id,
              "cat train.py inputs/data/x.txt inputs/data/sub/y.txt; ls flat; "
              "test $(stat -c %u train.py) = $(id -u) && echo owned")
    assert out == "print('hello from cp')\nthe data\ndeeper\nsub\nx.txt\nowned\n", out

    # An instance may be named by its name, as everywhere.
    named = json.loads(platform.cli("launch", "--gpu", "h100-80g", "--name", "trainer", "-o",
                                    "json", "--", "sleep", "600", key=key).stdout)["id"]
    platform.wait_state(named, "running", key)
    cp(platform, key, str(tmp_path / "train.py"), "trainer:byname")
    assert run(platform, key, named, "cat byname/train.py") == "print('hello from cp')\n"

    # An absolute destination inside the home is the same place.
    home = run(platform, key, instance_id, "pwd").strip()
    cp(platform, key, str(tmp_path / "train.py"), f"{instance_id}:{home}/abs")
    assert run(platform, key, instance_id, "cat abs/train.py") == "print('hello from cp')\n"


def test_cp_into_a_volume_is_seen_by_the_instances_that_mount_it(platform, tmp_path):
    _, key = platform.new_tenant("bob")
    tmp_path = local_dir(tmp_path)
    volume = json.loads(platform.cli("volumes", "create", "datasets", "--size-gb", "10", "-o",
                                     "json", key=key).stdout)
    (tmp_path / "corpus.txt").write_text("tokens\n")
    # A new volume is on no node until an instance that mounts it is placed.
    refused = cp(platform, key, str(tmp_path / "corpus.txt"), f"{volume['id']}:", "-o", "json",
                 check=False)
    assert refused.returncode == 1 and json.loads(refused.stdout)["code"] == "volume_not_placed"

    first = launch_sleeper(platform, key, "--volume", f"{volume['id']}:/data")
    copied = json.loads(cp(platform, key, str(tmp_path / "corpus.txt"), f"{volume['id']}:text",
                           "-o", "json").stdout)
    assert copied["path"] == "/text" and copied["files"] == 1, copied
    # The instance reads it and may change it: the volume is shared through the tenant's group.
    assert run(platform, key, first, "cat data/text/corpus.txt; echo more >> data/text/corpus.txt"
               ) == "tokens\n"
    # Through the instance, its mount path reaches the volume too.
    cp(platform, key, str(tmp_path / "corpus.txt"), f"{first}:/data/via-instance")

    platform.cli("stop", first, key=key)
    platform.wait_state(first, "stopped", key)
    second = launch_sleeper(platform, key, "--volume", f"{volume['id']}:/mnt")
    assert run(platform, key, second, "cat mnt/text/corpus.txt mnt/via-instance/corpus.txt") == \
        "tokens\nmore\ntokens\n"


def test_an_interrupted_upload_resumes_and_is_then_copied(platform):
    _, key = platform.new_tenant("carol")
    instance_id = launch_sleeper(platform, key)
    data = tar_gz({"resumed.txt": b"all of it\n" * 50_000})
    digest = hashlib.sha256(data).hexdigest()
    created = platform.call("POST", "/v1/uploads", key, body={"size": len(data), "sha256": digest})
    upload_id = created.json()["id"]
    half = len(data) // 2
    assert platform.call("PUT", f"/v1/uploads/{upload_id}?offset=0", key, raw=data[:half],
                         headers={"Content-Type": "application/octet-stream"}).status == 200
    # Not complete: nothing is copied yet, and the answer says where to go on.
    problem(platform.call("POST", f"/v1/instances/{instance_id}/files?upload={upload_id}", key),
            409, "upload_incomplete")
    # The client lost the id: declaring the same bytes again finds the upload where it stopped.
    again = platform.call("POST", "/v1/uploads", key, body={"size": len(data), "sha256": digest})
    assert again.json()["id"] == upload_id and again.json()["received"] == half, again.body
    assert platform.call("PUT", f"/v1/uploads/{upload_id}?offset={half}", key, raw=data[half:],
                         headers={"Content-Type": "application/octet-stream"}).status == 200
    copied = platform.call("POST",
                           f"/v1/instances/{instance_id}/files?upload={upload_id}&path=in/here",
                           key)
    assert copied.status == 200, copied.body
    assert copied.json()["names"] == ["resumed.txt"] and copied.json()["bytes"] == 500_000
    assert run(platform, key, instance_id, "wc -c < in/here/resumed.txt").strip() == "500000"


def test_copies_are_refused_to_others_stopped_instances_and_paths_that_leave(platform, tmp_path):
    _, key = platform.new_tenant("dave")
    _, other_key = platform.new_tenant("mallory")
    tmp_path = local_dir(tmp_path)
    instance_id = launch_sleeper(platform, key)
    upload_id = upload(platform, key, tar_gz({"f.txt": b"x\n"}))
    files = f"/v1/instances/{instance_id}/files?upload={upload_id}"

    # Another tenant's key finds no instance; its own instance cannot take this tenant's upload.
    problem(platform.call("POST", files, other_key), 404, "instance_not_found")
    other_instance = launch_sleeper(platform, other_key)
    problem(platform.call("POST", f"/v1/instances/{other_instance}/files?upload={upload_id}",
                          other_key), 404, "upload_not_found")
    problem(platform.call("POST", f"/v1/instances/{instance_id}/files", key), 400, "invalid_query")

    # Paths that climb out, or name a place outside the home and its volumes.
    problem(platform.call("POST", files + "&path=../escaped", key), 400, "invalid_path")
    problem(platform.call("POST", files + "&path=/etc/cron.d", key), 400, "path_outside_instance")
    # A link the tenant left in its home is not followed.
    run(platform, key, instance_id, "ln -s /tmp out && mkdir -p real && ln -s ../out real/deeper")
    problem(platform.call("POST", files + "&path=out", key), 422, "invalid_destination")
    problem(platform.call("POST", files + "&path=real/deeper/x", key), 422,
            "invalid_destination")
    assert platform.call("POST", files + "&path=real", key).status == 200

    # Too large to upload at all.
    problem(platform.call("POST", "/v1/uploads", key,
                          body={"size": 300 << 20, "sha256": "0" * 64}), 413, "upload_too_large")

    # Through the CLI: a bad destination, a stopped instance (with the command to run next).
    (tmp_path / "f.txt").write_text("x\n")
    bad = cp(platform, key, str(tmp_path / "f.txt"), instance_id, check=False)
    assert bad.returncode != 0 and "invalid_target" in bad.stderr, bad.stderr
    platform.cli("stop", instance_id, key=key)
    platform.wait_state(instance_id, "stopped", key)
    stopped = cp(platform, key, str(tmp_path / "f.txt"), f"{instance_id}:", "-o", "json",
                 check=False)
    body = json.loads(stopped.stdout)
    assert body["status"] == 409 and body["code"] == "instance_not_running", body
    assert f"gpurent start {instance_id}" in body["detail"], body
