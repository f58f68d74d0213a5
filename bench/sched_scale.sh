#!/usr/bin/env bash
# The scheduler on the realistic large case of issue 29: 10,000 nodes x 8 GPUs (three types) and
# 100,000 mixed requests (bench/sched_scale_inputs.py), in fill mode at fill 1.0 (everything asked
# at once; about two thirds refused once the cluster is full) and, with REPLAY=1, in time-based
# replay through the real controller.
#
# Usage: bench/sched_scale.sh [ROUNDS]   (default 3)
# Environment: GPURENT_BIN (default build/gpurent), NODES (10000), ITEMS (100000), SEED (42),
# REPLAY (0: fill only), REPLAY_TIMEOUT (seconds, default 600).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${GPURENT_BIN:-build/gpurent}
rounds=${1:-3}
inputs=$(mktemp -d)
trap 'rm -rf "$inputs"' EXIT
/usr/bin/python3 bench/sched_scale_inputs.py --out "$inputs" --nodes "${NODES:-10000}" \
  --items "${ITEMS:-100000}" --seed "${SEED:-42}"

# One line of a report from a run's JSON: `summary fill ROUND START END` for a fill round's table
# row, `summary replay - START END` for the replay.
summary() {
  /usr/bin/python3 - "$inputs/$1.json" "$1" "$2" "$3" "$4" <<'EOF'
import json
import sys

path, mode, round_, start, end = sys.argv[1:]
r = json.load(open(path))
wall = float(end) - float(start)
if mode == "fill":
    print(f"| fill {round_} | {wall:.1f} | {r['decisions_per_sec']:,} | {r['placed_decision_us']} "
          f"| {r['refused_decision_us']} | {r['placed']:,} | {r['failed']:,} "
          f"| {r['unallocated_gpu_pct_at_100']} |")
else:
    print(f"\nreplay: {wall:.1f} s wall, {r['decisions_per_sec']:,} decisions/s, "
          f"placed {r['placed']:,}, failed {r['failed']:,}, preempted {r['preempted']:,}, "
          f"wait p50/p99 {r['wait_s']['p50']:.0f}/{r['wait_s']['p99']:.0f} s")
EOF
}

echo "| run | wall s | decisions/s | placed µs | refused µs | placed | failed | unallocated GPU % at 100 % |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for round in $(seq 1 "$rounds"); do
  start=$(date +%s.%N)
  "$bin" simulate --nodes "$inputs/nodes.csv" --workload "$inputs/work.csv" --fill 1.0 -o json \
    > "$inputs/fill.json"
  summary fill "$round" "$start" "$(date +%s.%N)"
done

if [ "${REPLAY:-0}" = 1 ]; then
  start=$(date +%s.%N)
  if timeout "${REPLAY_TIMEOUT:-600}" "$bin" simulate --nodes "$inputs/nodes.csv" \
    --workload "$inputs/work.csv" -o json > "$inputs/replay.json"; then
    summary replay - "$start" "$(date +%s.%N)"
  else
    echo
    echo "replay: did not finish within ${REPLAY_TIMEOUT:-600} s"
  fi
fi
