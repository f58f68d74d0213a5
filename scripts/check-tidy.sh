#!/usr/bin/env bash
# Runs clang-tidy (the checks in .clang-tidy, every one an error) over the C++ files that changed,
# and fails, printing each finding, if any check fails. Only the .cc files of src/ and bench/ that
# the build compiles (build/compile_commands.json) are run; the headers of src/ are checked through
# them. A changed header brings in its own .cc beside it, where there is one.
#
#   scripts/check-tidy.sh            files changed since the base (below), committed or not
#   scripts/check-tidy.sh BASE       files changed since BASE (a commit, a branch: HEAD~15)
#   scripts/check-tidy.sh --all      every file
#   scripts/check-tidy.sh FILE.cc... just these files
#   scripts/check-tidy.sh --list ... prints the files it would check, and checks none
#
# The base is $TIDY_BASE if set, else the merge base with origin/main where that ref exists and is
# not HEAD itself, else HEAD~1 (the last commit: what CI, on a fresh clone of main, checks).
# $BUILD_DIR (default build) holds compile_commands.json; $JOBS files run at once (default nproc).
#
# Clang-tidy 19, not Debian 12's default 14: clang 14 cannot parse libstdc++ 12's <expected> in
# C++23 (it lacks conditionally trivial special members), so it would stop on every file.
# Boost 1.74's Asio enables its coroutines for clang only with <experimental/coroutine>, which
# clang 19 no longer has; BOOST_ASIO_HAS_CO_AWAIT tells it clang 19's C++20 coroutines will do.
# The compile commands are GCC's: -Wno-error keeps clang's own warnings (which .clang-tidy leaves
# off; GCC's -Werror build has its own) from stopping a file, and GCC-only flags are let pass.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
tidy=${CLANG_TIDY:-clang-tidy-19}
db="$build_dir/compile_commands.json"

if ! command -v "$tidy" >/dev/null; then
  echo "check-tidy: $tidy not found (scripts/install-deps.sh test installs it)" >&2
  exit 2
fi
if [[ ! -f "$db" ]]; then
  echo "check-tidy: no $db: configure the build first (scripts/build.sh)" >&2
  exit 2
fi

# The .cc files of src/ and bench/ the build compiles, relative to the repository root.
mapfile -t compiled < <(python3 - "$db" "$PWD" <<'EOF'
import json, os, sys
root = os.path.realpath(sys.argv[2])
seen = set()
for entry in json.load(open(sys.argv[1])):
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.endswith(".cc") and rel.split("/")[0] in ("src", "bench") and rel not in seen:
        seen.add(rel)
        print(rel)
EOF
)

changed_since() {  # the files that differ between $1 and the working tree, plus untracked ones
  git diff --name-only --diff-filter=d "$1" -- src bench
  git ls-files --others --exclude-standard -- src bench
}

list_only=""
if [[ "${1:-}" == "--list" ]]; then
  list_only=1
  shift
fi
what=""
files=()
if [[ "${1:-}" == "--all" ]]; then
  files=("${compiled[@]}")
  what="every file"
elif [[ $# -gt 0 && "$1" == *.cc ]]; then
  files=("$@")
  what="the files named"
else
  base=${1:-${TIDY_BASE:-}}
  if [[ -z "$base" ]]; then
    if git rev-parse -q --verify origin/main >/dev/null &&
      [[ "$(git merge-base HEAD origin/main)" != "$(git rev-parse HEAD)" ]]; then
      base=$(git merge-base HEAD origin/main)
    elif git rev-parse -q --verify HEAD~1 >/dev/null; then
      base=HEAD~1
    elif [[ "$(git rev-parse --is-shallow-repository)" == "true" ]]; then
      # A shallow clone has no parent to diff against: what changed is unknown, and checking the
      # whole tree (--all) is a separate, longer job. Say so rather than guess.
      echo "tidy: shallow clone without HEAD's parent: no changed files to check (run --all)"
      exit 0
    else
      base=$(git hash-object -t tree /dev/null)  # one commit: everything is new
    fi
  fi
  git rev-parse -q --verify "$base^{tree}" >/dev/null ||
    { echo "check-tidy: no such base: $base" >&2; exit 2; }
  declare -A in_db=() wanted=()
  for f in "${compiled[@]}"; do in_db[$f]=1; done
  while read -r f; do
    [[ "$f" == *.h ]] && f=${f%.h}.cc
    [[ -n "${in_db[$f]:-}" ]] && wanted[$f]=1
  done < <(changed_since "$base" | sort -u)
  files=("${!wanted[@]}")
  what="the files changed since $(git rev-parse --short "$base" 2>/dev/null || echo "$base")"
fi

if ((${#files[@]} == 0)); then
  echo "tidy: no C++ file to check ($what)"
  exit 0
fi
mapfile -t files < <(printf '%s\n' "${files[@]}" | sort)
if [[ -n "$list_only" ]]; then
  echo "tidy: would check ${#files[@]} files ($what):"
  printf '  %s\n' "${files[@]}"
  exit 0
fi
echo "tidy: $tidy over ${#files[@]} files, $jobs at once ($what)"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One clang-tidy per file; its findings go to a file of their own, so that parallel runs do not
# interleave, and a line says how each ended.
export tidy build_dir out
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} bash -c '
  log="$out/$(echo "$1" | tr / _).log"
  start=$SECONDS
  if "$tidy" -p "$build_dir" --quiet --extra-arg=-DBOOST_ASIO_HAS_CO_AWAIT=1 \
      --extra-arg=-Wno-error --extra-arg=-Wno-unknown-warning-option "$1" >"$log" 2>&1; then
    echo "  ok    $1 ($((SECONDS - start)) s)"
    rm -f "$log"
  else
    echo "  FAIL  $1 ($((SECONDS - start)) s)"
  fi' _ {}

failed=("$out"/*.log)
if [[ ! -e "${failed[0]}" ]]; then
  echo "tidy: ${#files[@]} files pass .clang-tidy"
  exit 0
fi
echo
# A header's finding shows once, however many files include it.
cat "${failed[@]}" | python3 -c '
import re, sys
seen, block, blocks = set(), [], []
for line in sys.stdin:
    if re.match(r"^(\d+ (warnings?|errors?) (and \d+ errors? )?generated|\d+ warnings? treated as|"
                r"Error while processing|Suppressed \d+ warnings|Use -header-filter|Found compiler "
                r"error)", line):
        continue
    if re.match(r"^\S.*: (warning|error): ", line):
        blocks.append(block)
        block = []
    block.append(line)
blocks.append(block)
counts = {}
for b in blocks:
    if not b or not re.match(r"^\S.*: (warning|error): ", b[0]):
        continue
    key = b[0]
    if key in seen:
        continue
    seen.add(key)
    sys.stdout.write("".join(b))
    m = re.search(r"\[([^\]]+)\]$", b[0].strip())
    check = m.group(1).split(",")[0] if m else "?"
    counts[check] = counts.get(check, 0) + 1
print()
print("tidy: findings by check:")
for check, n in sorted(counts.items(), key=lambda kv: -kv[1]):
    print(f"  {n:5d}  {check}")
'
echo "tidy: ${#failed[@]} of ${#files[@]} files fail .clang-tidy (see above; a check that is" \
  "wrong about a line takes // NOLINT(check): why, on that line)"
exit 1
