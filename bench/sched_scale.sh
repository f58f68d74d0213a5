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

echo "| run | wall s | decisions/s | placed µs | refused µs | placed | failed | unallocated GPU % at 100 % |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for round in $(seq 1 "$rounds"); do
  start=$(date +%s.%N)
  "$bin" simulate --nodes "$inputs/nodes.csv" --workload "$inputs/work.csv" --fill 1.0 -o json \
    > "$inputs/fill.json"
  end=$(date +%s.%N)
  /usr/bin/python3 - "$inputs/fill.json" "$round" "$start" "$end" <<'EOF'
import json
import sys

r = json.load(open(sys.argv[1]))
wall = float(sys.argv[4]) - float(sys.argv[3])
print(f"| fill {sys.argv[2]} | {wall:.1f} | {r['decisions_per_sec']:,} | {r['placed_decision_us']} "
      f"| {r['refused_decision_us']} | {r['placed']:,} | {r['failed']:,} "
      f"| {r['unallocated_gpu_pct_at_100']} |")
EOF
done

if [ "${REPLAY:-0}" = 1 ]; then
  start=$(date +%s.%N)
  if timeout "${REPLAY_TIMEOUT:-600}" "$bin" simulate --nodes "$inputs/nodes.csv" \
    --workload "$inputs/work.csv" -o json > "$inputs/replay.json"; then
    end=$(date +%s.%N)
    /usr/bin/python3 - "$inputs/replay.json" "$start" "$end" <<'EOF'
import json
import sys

r = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"\nreplay: {wall:.1f} s wall, {r['decisions_per_sec']:,} decisions/s, placed {r['placed']:,}, "
      f"failed {r['failed']:,}, preempted {r['preempted']:,}, wait p50/p99 "
      f"{r['wait_s']['p50']:.0f}/{r['wait_s']['p99']:.0f} s")
EOF
  else
    echo
    echo "replay: did not finish within ${REPLAY_TIMEOUT:-600} s"
  fi
fi
