#!/usr/bin/env bash
# Installs what is missing, builds, and starts `gpurent dev`: the control plane with embedded
# SQLite and one local agent (simulated GPUs unless the host has NVIDIA GPUs). Arguments go to
# `gpurent dev` (e.g. --listen 127.0.0.1:0 --sim-gpus 4xa100-80g,2xrtx4090-24g).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
scripts/build.sh
exec build/gpurent dev "$@"
