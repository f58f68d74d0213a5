#!/usr/bin/env python3
"""Pod lists derived from the Alibaba default trace, to test the scheduler where the default list
is mild (issue 29): many pods pinning GPU models, sharing GPUs, asking for several GPUs, or
CPU-heavy; then the FGD paper's fill experiment on each (fill 1.3, shuffled, seeds 42-51,
unallocated GPU % at arrived = 100 %, mean ± SD), for each policy: binpack (gpurent's) and fgd
(the paper's fragmentation measure as its simulator computes it, the reference to beat).

  bench/alibaba_variants.py [--out DIR] [--lists default,pinned,...] [--seeds 42-51]
                            [--policies binpack,fgd]

The lists (each from the default one, with random.Random(7), so they are the same every run):
- default: the trace's own list.
- pinned: a third of the GPU pods pin one GPU model (drawn by the models' share of the cluster's
  GPUs) or two (a third of those), as gpu_spec.
- pinned-uniform: the same with the models drawn uniformly, rare ones (A10: 2 GPUs) as often as
  G2 (4,392), so that much pinned work cannot fit at all.
- sharing: half of the whole one-GPU pods share a GPU instead (gpu_milli 100..900).
- multi: a third of the one-GPU pods ask for 2, 4 or 8 whole GPUs (CPU and memory scaled).
- cpu-heavy: a third of the pods ask for three times their CPU.
Environment: GPURENT_BIN (default build/gpurent), GPURENT_ALIBABA_TRACE (default
../shared/traces/alibaba-gpu-v2023 beside the repository).
"""
import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def model_shares(nodes):
    counts = {}
    for n in nodes:
        if n["model"]:
            counts[n["model"]] = counts.get(n["model"], 0) + int(n["gpu"])
    return counts


def pinned(pods, nodes, rng, uniform=False):
    shares = model_shares(nodes)
    models = list(shares)
    weights = [1] * len(models) if uniform else list(shares.values())
    for p in pods:
        if int(p["num_gpu"]) > 0 and rng.random() < 1 / 3:
            first = rng.choices(models, weights)[0]
            chosen = {first}
            if rng.random() < 1 / 3:
                chosen.add(rng.choices(models, weights)[0])
            p["gpu_spec"] = "|".join(sorted(chosen))
    return pods


def sharing(pods, nodes, rng):
    for p in pods:
        if p["num_gpu"] == "1" and p["gpu_milli"] == "1000" and rng.random() < 0.5:
            p["gpu_milli"] = str(rng.randrange(100, 901, 10))
    return pods


def multi(pods, nodes, rng):
    for p in pods:
        if p["num_gpu"] == "1" and rng.random() < 1 / 3:
            gpus = rng.choice([2, 4, 8])
            p["num_gpu"], p["gpu_milli"] = str(gpus), "1000"
            p["cpu_milli"] = str(int(p["cpu_milli"]) * gpus)
            p["memory_mib"] = str(int(p["memory_mib"]) * gpus)
    return pods


def cpu_heavy(pods, nodes, rng):
    for p in pods:
        if rng.random() < 1 / 3:
            p["cpu_milli"] = str(int(p["cpu_milli"]) * 3)
    return pods


VARIANTS = {"default": None, "pinned": pinned,
            "pinned-uniform": lambda pods, nodes, rng: pinned(pods, nodes, rng, uniform=True),
            "sharing": sharing, "multi": multi, "cpu-heavy": cpu_heavy}


def seeds(text):
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="keep the lists here (default: a temporary directory)")
    parser.add_argument("--lists", default=",".join(VARIANTS))
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--policies", default="binpack,fgd")
    args = parser.parse_args()
    trace = os.environ.get("GPURENT_ALIBABA_TRACE",
                           os.path.join(REPO, "..", "shared", "traces", "alibaba-gpu-v2023"))
    binary = os.environ.get("GPURENT_BIN", os.path.join(REPO, "build", "gpurent"))
    node_list = os.path.join(trace, "openb_node_list_gpu_node.csv")
    nodes = read(node_list)
    default = os.path.join(trace, "openb_pod_list_default.csv")
    with open(default, newline="") as f:
        fields = csv.DictReader(f).fieldnames
    out = args.out or tempfile.mkdtemp(prefix="alibaba-variants-")
    os.makedirs(out, exist_ok=True)
    policies = args.policies.split(",")
    # With two policies, the seeds where the first leaves less unallocated (a paired comparison:
    # both run each seed's same arrivals).
    paired = len(policies) == 2
    print("| list | " + " | ".join(f"{p}: unallocated GPU % (mean ± SD)" for p in policies)
          + " | " + " | ".join(f"{p}: decisions/s (median)" for p in policies)
          + (f" | seeds where {policies[0]} < {policies[1]}" if paired else "") + " |")
    print("| --- " * (1 + 2 * len(policies) + paired) + "|")
    for name in args.lists.split(","):
        make = VARIANTS[name]
        path = default
        if make:
            path = os.path.join(out, f"openb_pod_list_{name}.csv")
            write(path, make(read(default), nodes, random.Random(7)), fields)
        cells, speeds, by_policy = [], [], []
        for policy in policies:
            values, rates = [], []
            for seed in seeds(args.seeds):
                run = subprocess.run([binary, "simulate", "--alibaba", node_list, path, "--fill",
                                      "1.3", "--shuffle", "--seed", str(seed), "--policy", policy,
                                      "-o", "json"], check=True, capture_output=True, text=True)
                report = json.loads(run.stdout)
                values.append(report["unallocated_gpu_pct_at_100"])
                rates.append(report["decisions_per_sec"])
            by_policy.append(values)
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.mean(values):.2f} ± {sd:.2f}")
            speeds.append(f"{statistics.median(rates):,.0f}")
        wins = ""
        if paired:
            below = sum(a < b for a, b in zip(by_policy[0], by_policy[1]))
            wins = f" | {below} of {len(by_policy[0])}"
        print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(speeds) + wins + " |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
