#!/usr/bin/env bash
# The FGD paper's experiment on the Alibaba default trace: `gpurent simulate --alibaba ... --fill
# 1.3 --shuffle` for seeds 42-51, unallocated GPU % at arrived = 100 %, mean ± SD (sample SD, n-1)
# against the paper's FGD and BestFit from the trace folder's fgd_default_unallocated.csv.
#
# Usage: bench/alibaba_fill.sh [POLICY ...]   (default: binpack)
# Environment: GPURENT_BIN (default build/gpurent), GPURENT_ALIBABA_TRACE (default
# ../shared/traces/alibaba-gpu-v2023 beside the repository), FILL (default 1.3).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${GPURENT_BIN:-build/gpurent}
trace=${GPURENT_ALIBABA_TRACE:-../shared/traces/alibaba-gpu-v2023}
fill=${FILL:-1.3}
policies=("$@")
[ ${#policies[@]} -gt 0 ] || policies=(binpack)

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for policy in "${policies[@]}"; do
  for seed in $(seq 42 51); do
    "$bin" simulate --alibaba "$trace/openb_node_list_gpu_node.csv" \
      "$trace/openb_pod_list_default.csv" --fill "$fill" --shuffle --seed "$seed" \
      --policy "$policy" -o json | tr -d '\n' >> "$results"
    echo >> "$results"
  done
done

/usr/bin/python3 - "$results" "$trace/fgd_default_unallocated.csv" <<'EOF'
import csv
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
paper = {r["policy"]: r for r in csv.DictReader(open(sys.argv[2]))
         if r["workload"] == "openb_pod_list_default" and r["arrived_pct"] == "100"}

print("| policy | seed | unallocated GPU % at 100 % | fragmented GPU % | placed | failed | decisions/s |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['policy']} | {r['seed']} | {r['unallocated_gpu_pct_at_100']:.2f} | "
          f"{r['fragmented_gpu_pct']:.2f} | {r['placed']} | {r['failed']} | "
          f"{r['decisions_per_sec']:,} |")
print()
for policy in dict.fromkeys(r["policy"] for r in rows):
    mine = [r for r in rows if r["policy"] == policy]
    values = [r["unallocated_gpu_pct_at_100"] for r in mine]
    rates = [r["decisions_per_sec"] for r in mine]
    print(f"gpurent {policy}: unallocated GPU % at arrived = 100 %: {statistics.mean(values):.2f} "
          f"± {statistics.stdev(values):.2f} over {len(values)} seeds (min {min(values):.2f}, "
          f"max {max(values):.2f}); decisions/s median {statistics.median(rates):,.0f}")
for name in ("FGD", "BestFit"):
    r = paper[name]
    print(f"paper {name}: {float(r['unalloc_gpu_pct_mean']):.2f} ± {float(r['unalloc_gpu_pct_sd']):.2f}")
EOF
