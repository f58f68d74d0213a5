#!/usr/bin/env bash
# Installs what is missing, checks the format, builds, runs clang-tidy over the changed files
# (scripts/check-tidy.sh), and runs every test: the unit tests (ctest), the libFuzzer harnesses for
# a bounded time (scripts/fuzz.sh, GPURENT_FUZZ_SECONDS per target, default 20), the Python SDK's
# (sdk/python/tests, and its generated models checked against docs/openapi.json) and the
# multi-process end-to-end tests (pytest against the real binary), the PostgreSQL ones against a
# throwaway PostgreSQL (scripts/test-postgres.sh), the VM runtime's with its test image
# (scripts/vm-test-image.sh) and cloud image (scripts/vm-cloud-image.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/check-format.sh
scripts/build.sh
scripts/check-tidy.sh
# The PostgreSQL store's tests need a server: a throwaway one, and they may not skip.
GPURENT_TEST_POSTGRES="$(scripts/test-postgres.sh)"
export GPURENT_TEST_POSTGRES GPURENT_REQUIRE_POSTGRES=1
# The VM runtime's tests boot its test image (Debian's kernel, a busybox initramfs); nor may they.
GPURENT_TEST_VM_IMAGE="$(scripts/vm-test-image.sh)"
GPURENT_TEST_VM_CLOUD_IMAGE="$(scripts/vm-cloud-image.sh)"
export GPURENT_TEST_VM_IMAGE GPURENT_TEST_VM_CLOUD_IMAGE GPURENT_REQUIRE_VM=1
echo "== unit tests"
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
echo "== fuzzing (fuzz/README.md: the regression inputs, then each harness for a bounded time)"
scripts/fuzz.sh "${GPURENT_FUZZ_SECONDS:-20}"
echo "== Python SDK (sdk/python): its models as docs/openapi.json makes them, and its tests"
/usr/bin/python3 sdk/python/gen_models.py --check
GPURENT_BIN="$PWD/${BUILD_DIR:-build}/gpurent" PYTHONPATH=sdk/python \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider sdk/python/tests
echo "== end-to-end tests"
GPURENT_BIN="$PWD/${BUILD_DIR:-build}/gpurent" /usr/bin/python3 -m pytest -q tests/e2e "$@"
