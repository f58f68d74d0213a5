#!/usr/bin/env bash
# Installs what is missing, checks the format, builds, runs clang-tidy over the changed files
# (scripts/check-tidy.sh), and runs every test: the unit tests (ctest) and the multi-process
# end-to-end tests (pytest against the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/check-format.sh
scripts/build.sh
scripts/check-tidy.sh
echo "== unit tests"
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
echo "== end-to-end tests"
GPURENT_BIN="$PWD/${BUILD_DIR:-build}/gpurent" /usr/bin/python3 -m pytest -q tests/e2e "$@"
