#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests and benchmarks: a cluster in a temporary directory, on a
# free port of 127.0.0.1, run as an unprivileged user (PostgreSQL refuses to run as root).
# Idempotent: when the cluster already runs, it is reused.
#
#   scripts/test-postgres.sh          start it if needed; print its URL (postgres://...)
#   scripts/test-postgres.sh stop     stop it and delete its directory
#
# GPURENT_PG_DIR chooses the directory (default /tmp/gpurent-test-pg). GPURENT_PG_DURABLE=1 keeps
# fsync on (the benchmarks measure durable commits); the tests run without it, as nothing of a
# throwaway cluster has to survive a power loss.
set -euo pipefail

dir="${GPURENT_PG_DIR:-/tmp/gpurent-test-pg}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
if [[ -z "$bin" || ! -x "$bin/initdb" ]]; then
  echo "PostgreSQL's server is not installed: run scripts/install-deps.sh test" >&2
  exit 1
fi

as_owner() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

url() { echo "postgres://gpurent@127.0.0.1:$(cat "$dir/port")/postgres"; }

if [[ "${1:-start}" == "stop" ]]; then
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
  fi
  rm -rf "$dir"
  exit 0
fi

if [[ -f "$dir/port" ]] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
  url
  exit 0
fi

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

mkdir -p "$dir"
if [[ "$(id -u)" -eq 0 ]]; then chown postgres: "$dir"; fi
if [[ ! -f "$dir/data/PG_VERSION" ]]; then
  rm -rf "$dir/data"
  as_owner "$bin/initdb" -D "$dir/data" --username=gpurent --auth=trust --encoding=UTF8 \
    --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
fi
port="$(free_port)"
durable=off
[[ "${GPURENT_PG_DURABLE:-0}" == "1" ]] && durable=on
# Many servers of the tests connect at once (three per chaos test, several connections each).
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c fsync=$durable \
      -c full_page_writes=$durable -c max_connections=300" start >/dev/null ||
  { tail -n 20 "$dir/server.log" >&2; exit 1; }
echo "$port" >"$dir/port"
url
