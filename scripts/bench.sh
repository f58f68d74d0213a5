#!/usr/bin/env bash
# Installs what is missing (wrk, nginx), builds, and runs the benchmarks; prints Markdown rows
# for bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench
scripts/build.sh
/usr/bin/python3 bench/api_bench.py "$@"
# Jupyter through the server's proxy against Jupyter directly (needs jupyter-notebook: test deps).
/usr/bin/python3 bench/proxy_bench.py
