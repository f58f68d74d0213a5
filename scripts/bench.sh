#!/usr/bin/env bash
# Installs what is missing (wrk, nginx), builds, and runs the benchmarks; prints Markdown rows
# for bench/RESULTS.md, and fails if the creation guard finds a regression.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh bench
scripts/build.sh
/usr/bin/python3 bench/api_bench.py "$@"
# Jupyter through the server's proxy against Jupyter directly (needs jupyter-notebook: test deps).
/usr/bin/python3 bench/proxy_bench.py
# Last, and loud: exits 1 when durable creations regressed (32 connections no faster than one,
# or either more than 20 % below bench/baselines.json's figure for this machine kind).
/usr/bin/python3 bench/creation_guard.py
