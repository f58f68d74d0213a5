#!/usr/bin/env bash
# Installs what gpurent needs to build, test and benchmark, from Debian's packages only.
# Idempotent: installs only what is missing, and runs apt-get update only then.
set -euo pipefail

build_packages=(
  cmake ninja-build g++ ccache pkg-config clang-format
  libboost1.74-dev libboost-system1.74-dev nlohmann-json3-dev libsimdjson-dev libsqlite3-dev libpq-dev libsodium-dev libssl-dev libjemalloc-dev
  ca-certificates
  libspdlog-dev libfmt-dev libcli11-dev libtoml11-dev libgtest-dev libbenchmark-dev
)
# The container runtime's tests run a real Podman (Docker Engine API on a unix socket) with runc
# and an image built from the static busybox (src/agent/runtime/podman_test_env.h). The
# templates' process forms run Debian's PyTorch and Jupyter (tests/e2e/test_templates.py);
# tests/e2e/test_jupyter.py talks to a kernel over the proxied WebSocket with websocket-client.
# tests/e2e/test_monitoring.py has a real Prometheus scrape /metrics, and makes the certificate of
# an https webhook receiver with openssl; tests/e2e/test_tls_proxy.py puts nginx in front as a TLS
# proxy for an agent and the CLI. scripts/check-tidy.sh needs clang-tidy 19 (Debian 12's default
# 14 cannot parse libstdc++ 12's C++23 headers). tests/e2e/test_console.py drives Debian's headless
# Chromium through the DevTools protocol (nothing downloads a browser). The PostgreSQL store's
# tests run against a throwaway cluster of Debian's server (scripts/test-postgres.sh). The
# libFuzzer harnesses (scripts/fuzz.sh) build with clang 19 and its fuzzer and sanitizer runtimes
# (clang 14 cannot parse libstdc++ 12's <expected>); llvm's symbolizer names the crash's frames.
# The VM runtime's tests boot real VMs with QEMU (under TCG where KVM does not work) from Debian's
# kernel and a busybox initramfs (scripts/vm-test-image.sh; qemu-utils makes disk overlays), and
# from a cloud image made without mounts (scripts/vm-cloud-image.sh: mmdebstrap, syslinux through
# mtools, dosfstools, sfdisk), whose sshd the tests log in to with OpenSSH's client; the VMs reach
# the network through passt (the agent's default --vm-network outbound).
test_packages=(postgresql-15 python3 python3-pytest python3-venv python3-pip python3-setuptools python3-wheel sqlite3 podman runc conmon netavark busybox-static zsh fish
  python3-torch python3-torchvision jupyter-notebook python3-websocket prometheus openssl
  nginx-light clang-tidy-19 chromium clang-19 libclang-rt-19-dev llvm qemu-system-x86 qemu-utils
  mmdebstrap syslinux syslinux-common mtools dosfstools fdisk openssh-client passt)
bench_packages=(wrk)

wanted=("${build_packages[@]}")
case "${1:-build}" in
  build) ;;
  test) wanted+=("${test_packages[@]}") ;;
  bench) wanted+=("${test_packages[@]}" "${bench_packages[@]}") ;;
  *) echo "usage: $0 [build|test|bench]" >&2; exit 2 ;;
esac

missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
apt_install() {
  echo "installing: $*"
  local sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "$@" >/dev/null
}
if ((${#missing[@]})); then apt_install "${missing[@]}"; fi

# The console's front-end packages (web/package-lock.json), which the build embeds: with the
# machine's Node.js and npm, else Debian's.
if ! command -v npm >/dev/null; then apt_install nodejs npm; fi
web="$(dirname "$0")/../web"
if [[ ! -f "$web/node_modules/.package-lock.json" ||
      "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]]; then
  echo "installing: the console's npm packages (web/package-lock.json)"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
fi
