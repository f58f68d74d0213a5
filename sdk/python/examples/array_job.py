#!/usr/bin/env python3
"""Submit an array job (a learning-rate sweep) and collect each task's result.

    export GPURENT_URL=https://gpus.example.com GPURENT_API_KEY=gpr_...   # or the CLI's config
    python3 array_job.py [--tasks 6] [--gpu-type h100-80g]

Each task of the array gets its index in GPURENT_ARRAY_INDEX, picks its learning rate from it,
fits a model and prints its result as a JSON line; the example waits for the job, reads every
task's log (c.jobs.task_logs) and prints the results, best first. A task that fails is run once
more (`retries=1`). With torch on the node the fit runs on the GPU; without, in plain Python.
"""
import argparse
import json
import sys

from gpurent import JOB_FINAL_STATES, Client, GpurentError

TASK = r"""
import json, os, random
index = int(os.environ["GPURENT_ARRAY_INDEX"])
lr = 0.4 / 2 ** index            # the sweep: 0.4, 0.2, 0.1, ...
random.seed(index)
try:
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(512, 4, device=device)
    noise = 0.1 * torch.randn(512, device=device)
    y = x @ torch.tensor([1.0, -2.0, 3.0, 0.5], device=device) + noise
    w = torch.zeros(4, device=device, requires_grad=True)
    for _ in range(20):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            w.grad.zero_()
    loss, backend = loss.item(), f"torch on {device}"
except ImportError:
    xs = [random.uniform(-1, 1) for _ in range(256)]
    data = [(x, 2 * x - 1 + random.gauss(0, 0.1)) for x in xs]
    w = b = 0.0
    for _ in range(20):
        gw = sum(2 * (w * x + b - y) * x for x, y in data) / len(data)
        gb = sum(2 * (w * x + b - y) for x, y in data) / len(data)
        w, b = w - lr * gw, b - lr * gb
    loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
    backend = "plain Python"
print(json.dumps({"task": index, "lr": lr, "loss": loss, "backend": backend}))
"""


def result_of(log: str):
    """The task's result: the last line of its log that is a JSON object, or None."""
    for line in reversed(log.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6, help="tasks in the array")
    parser.add_argument("--gpu-type", default="h100-80g")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for it")
    args = parser.parse_args()

    client = Client()  # GPURENT_URL / GPURENT_API_KEY, else ~/.config/gpurent/config.toml
    job = client.jobs.create(name="lr-sweep", template="pytorch", gpu_type=args.gpu_type,
                             gpu_count=1, array=args.tasks, retries=1, max_runtime_s=3600,
                             command=["python3", "-c", TASK])
    print(f"submitted {job.id}: {job.array} tasks")
    done = client.jobs.wait_until(job.id, JOB_FINAL_STATES, timeout=args.timeout)
    print(f"{job.id} {done.state}: {done.task_counts}")

    results, missing = [], []
    for index, log in sorted(client.jobs.task_logs(job.id).items()):
        result = result_of(log)
        if result is None:
            missing.append(index)
        else:
            results.append(result)
    for r in sorted(results, key=lambda r: r["loss"]):
        print(f"task {r['task']}: lr {r['lr']:<8g} loss {r['loss']:.6f}  ({r['backend']})")
    if results:
        best = min(results, key=lambda r: r["loss"])
        print(f"best learning rate: {best['lr']:g} (task {best['task']})")
    if missing:
        print(f"no result from task(s) {', '.join(map(str, missing))}", file=sys.stderr)
    return 0 if done.state == "succeeded" and not missing else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GpurentError as e:
        sys.exit(f"error: {e}")
