#!/usr/bin/env bash
# The libFuzzer harnesses (fuzz/README.md): builds them in build-fuzz/ with clang, replays every
# input of fuzz/regressions/<target>/ and fuzz/corpus/<target>/ (each must pass), then fuzzes each
# target for SECONDS (default 300) in one process, one target after another. A crash fails the run
# with the path of the input that caused it; the run goes on with the next target first, so one
# run reports every target that fails.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 20; scripts/fuzz.sh 600 router
#
# SECONDS 0 builds and replays only. FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (build
# parallelism, default 2), FUZZ_CXX (default clang++-19), FUZZ_KEEP=DIR (keep the inputs each
# target found, in DIR/<target>/, to grow the seed corpus by hand).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-300}"
if (($#)); then shift; fi
all_targets=(http_request router request_bodies model_codec agent_protocol telemetry_frame csv_inputs)
targets=("${all_targets[@]}")
if (($#)); then targets=("$@"); fi
build="${FUZZ_BUILD_DIR:-build-fuzz}"
cxx="${FUZZ_CXX:-clang++-19}"

# What each target reads: the longest input worth trying, and the dictionary that helps.
declare -A max_len=([http_request]=8192 [router]=1024 [request_bodies]=4096 [model_codec]=4096
                    [agent_protocol]=8192 [telemetry_frame]=4096 [csv_inputs]=4096)
declare -A dict=([http_request]=http [router]=http [request_bodies]=json [model_codec]=json
                 [agent_protocol]=json [csv_inputs]=csv)

for target in "${targets[@]}"; do
  if [[ -z "${max_len[$target]:-}" ]]; then
    echo "fuzz: unknown target '$target' (targets: ${all_targets[*]})" >&2
    exit 2
  fi
done

scripts/install-deps.sh test

started=$SECONDS
if [[ ! -f "$build/build.ninja" ]] || ! grep -q '^GPURENT_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DGPURENT_FUZZ=ON \
    -DGPURENT_TESTS=OFF -DGPURENT_JEMALLOC=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build" -j "${FUZZ_JOBS:-2}" "${targets[@]/#/fuzz_}"
echo "fuzz: built ${#targets[@]} harnesses in $((SECONDS - started)) s"

# Sanitizer reports end the run with a symbolized stack; leaks count as crashes.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:symbolize=1}"
for symbolizer in llvm-symbolizer-19 llvm-symbolizer llvm-symbolizer-14; do
  if command -v "$symbolizer" >/dev/null; then
    export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$(command -v "$symbolizer")}"
    break
  fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/gpurent-fuzz.XXXXXX")"
failed=()
# The line of a log that says what went wrong.
headline='runtime error|ERROR: (AddressSanitizer|LeakSanitizer)|fuzz invariant failed|uncaught exception'

# Replays: every regression input (a crash once found, now fixed) and every seed.
for target in "${targets[@]}"; do
  inputs=()
  for dir in "fuzz/regressions/$target" "fuzz/corpus/$target"; do
    [[ -d "$dir" ]] || continue
    while IFS= read -r -d '' file; do inputs+=("$file"); done \
      < <(find "$dir" -type f ! -name '*.md' -print0 | sort -z)
  done
  ((${#inputs[@]})) || continue
  log="$work/$target-replay.log"
  if "$build/fuzz_$target" -rss_limit_mb=2048 -timeout=30 "${inputs[@]}" >"$log" 2>&1; then
    echo "fuzz: $target: ${#inputs[@]} regression and seed inputs pass"
  else
    # The input that failed is the last one started (the run stops at it).
    input="$(grep -o 'Running: .*' "$log" | tail -n 1 | cut -d' ' -f2-)"
    tail -n 40 "$log" >&2
    grep -m 2 -A 1 -E "$headline" "$log" >&2 || true
    echo "fuzz: $target FAILS on the stored input ${input:-?} (log: $log)" >&2
    echo "  reproduce: $build/fuzz_$target ${input:-FILE}" >&2
    failed+=("$target (replay of ${input:-?})")
  fi
done

if ((seconds > 0)); then
  for target in "${targets[@]}"; do
    corpus="$work/corpus/$target"
    crashes="$work/crashes/$target"
    mkdir -p "$corpus" "$crashes"
    options=(-max_total_time="$seconds" -max_len="${max_len[$target]}" -rss_limit_mb=2048
             -timeout=30 -print_final_stats=1 -artifact_prefix="$crashes/")
    [[ -n "${dict[$target]:-}" ]] && options+=(-dict="fuzz/dict/${dict[$target]}.dict")
    seeds=()
    [[ -d "fuzz/corpus/$target" ]] && seeds+=("fuzz/corpus/$target")
    log="$work/$target.log"
    if "$build/fuzz_$target" "${options[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
      echo "fuzz: $target: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
        grep -o '[0-9]*$') runs in ${seconds} s, no crash," \
        "$(grep -c '' < <(find "$corpus" -type f)) new inputs"
    else
      tail -n 40 "$log" >&2
      grep -m 2 -A 1 -E "$headline" "$log" >&2 || true
      crash="$(find "$crashes" -type f | head -n 1)"
      echo "fuzz: $target FOUND A CRASH: ${crash:-(no input saved; see $log)}" >&2
      echo "  reproduce: $build/fuzz_$target ${crash:-FILE}" >&2
      echo "  minimize:  $build/fuzz_$target -minimize_crash=1 -runs=20000 ${crash:-FILE}" >&2
      echo "  then keep it as fuzz/regressions/$target/<name> once the bug is fixed" >&2
      failed+=("$target")
    fi
    if [[ -n "${FUZZ_KEEP:-}" ]]; then
      mkdir -p "$FUZZ_KEEP/$target"
      cp -n "$corpus"/* "$FUZZ_KEEP/$target/" 2>/dev/null || true
    fi
  done
fi

if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]} (inputs and logs kept in $work)" >&2
  exit 1
fi
rm -rf "$work"
echo "fuzz: all ${#targets[@]} targets pass ($((SECONDS - started)) s in all)"
