#!/usr/bin/env python3
"""Writes the realistic inputs of issue 29 for `gpurent simulate`: a full-size cluster and a mixed
workload that fills it and goes on arriving once it is full.

  bench/sched_scale_inputs.py --out DIR [--nodes 10000] [--items 100000] [--seed 42]

DIR/nodes.csv: NODES GPU nodes of 8 GPUs, three GPU types (h100-80g 50 %, a100-80g 30 %,
l40s-48g 20 %), 2 NVLink domains on the H100/A100 nodes, 128 cores and 1 TiB of memory each, in
fabric groups of 32 nodes.

DIR/work.csv: ITEMS requests: GPU counts 1 (60 %), 2, 4, 8 (40 % between them) and a few gangs of
2 x 8; a fifth of the one-GPU requests fractional (250, 500 or 750 milli); a fifth of the requests
untyped, the rest pinned to one type or to two acceptable types; CPU and memory scaled with the
GPU count (with noise, so the shapes vary); on-demand 70 %, spot 30 %; arrivals spread over a day,
durations from ten minutes to a day. Asked all at once (fill mode), roughly two thirds of them
cannot fit: the cluster is full after about a third.

Deterministic for a seed (Python's random with that seed).
"""
import argparse
import csv
import os
import random

TYPES = [("h100-80g", 0.5, 2), ("a100-80g", 0.3, 2), ("l40s-48g", 0.2, 1)]


def write_nodes(path, count):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "gpu_type", "gpu_count", "cpu", "memory_gb", "nvlink_domains",
                    "fabric"])
        start = 0
        for gpu_type, share, domains in TYPES:
            n = round(count * share) if gpu_type != TYPES[-1][0] else count - start
            for i in range(start, start + n):
                w.writerow([f"n{i:05d}", gpu_type, 8, 128, 1024, domains, f"f{i // 32:04d}"])
            start += n


def request(rng):
    roll = rng.random()
    nodes = 1
    if roll < 0.60:
        gpus = 1
    elif roll < 0.78:
        gpus = 2
    elif roll < 0.90:
        gpus = 4
    elif roll < 0.99:
        gpus = 8
    else:
        gpus, nodes = 8, 2
    milli = ""
    if gpus == 1 and rng.random() < 0.2:
        milli = rng.choice([250, 500, 750])
    share = (milli or 1000) / 1000 * gpus
    cpu = max(1, round(share * rng.choice([4, 8, 12, 16])))
    memory = max(4, round(share * rng.choice([32, 64, 96, 128])))
    typed = rng.random()
    if typed < 0.2:
        gpu_type = ""
    elif typed < 0.85:
        gpu_type = rng.choices([t for t, _, _ in TYPES], weights=[s for _, s, _ in TYPES])[0]
    else:
        gpu_type = "|".join(rng.sample([t for t, _, _ in TYPES], 2))
    return gpu_type, gpus, milli, cpu, memory, nodes


def write_work(path, count, rng):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "arrival_s", "duration_s", "gpu_type", "gpu_count", "gpu_milli", "cpu",
                    "memory_gb", "pricing", "nodes", "tenant"])
        for i in range(count):
            gpu_type, gpus, milli, cpu, memory, nodes = request(rng)
            arrival = int(i * 86400 / count)
            duration = rng.randint(600, 86400)
            pricing = "spot" if rng.random() < 0.3 else "on_demand"
            w.writerow([f"w{i:06d}", arrival, duration, gpu_type, gpus, milli, cpu, memory,
                        pricing, nodes, f"t{rng.randint(0, 49)}"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    write_nodes(os.path.join(args.out, "nodes.csv"), args.nodes)
    write_work(os.path.join(args.out, "work.csv"), args.items, random.Random(args.seed))


if __name__ == "__main__":
    main()
