#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, ASan and UBSan (build-fuzz) and runs each for a bounded
# time (docs/reliability.md). Targets (tests/fuzz/fuzz_<target>.cpp): config, ground_motion, nodes.
# Usage: deploy/fuzz.sh [TARGET]... [--seconds S] [--jobs N] [--replay-only] [--build DIR]
#   (no target named: all)  --seconds S  fuzzing time per target (default 60)
#   --jobs N       targets fuzzed at once (default: nproc)
#   --replay-only  only replay the seed corpus and the regression inputs
#   --build DIR    use DIR, a build configured with RTHS_FUZZ=ON (CI passes build-asan, whose clang
#                  ASan build holds the targets), if it is one; otherwise build-fuzz is configured
# First every input in tests/fuzz/regressions/<target>/ and tests/fuzz/corpus/<target>/ runs once;
# then each target fuzzes from its corpus (new inputs go to build-fuzz/corpus/<target>/, never into
# the repository). A crash, sanitizer report, leak, timeout or out-of-memory fails the stage, with
# the input left in build-fuzz/findings/<target>/: fix the bug, then move the input to
# tests/fuzz/regressions/<target>/ so that every later run replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"

all_targets=(config ground_motion nodes)
targets=()
seconds=60
jobs=$(nproc)
replay_only=false
build_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) need_value "$@"; seconds=$2; shift 2 ;;
    --jobs) need_value "$@"; jobs=$2; shift 2 ;;
    --replay-only) replay_only=true; shift ;;
    --build) need_value "$@"; build_dir=$2; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) bad_usage "unknown option $1" ;;
    *)
      [[ " ${all_targets[*]} " == *" $1 "* ]] || bad_usage "unknown target $1; expected one of ${all_targets[*]}"
      targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || bad_usage "--seconds: expected a whole number > 0, got $seconds"
[[ $jobs =~ ^[0-9]+$ && $jobs -gt 0 ]] || bad_usage "--jobs: expected a whole number > 0, got $jobs"

# libFuzzer comes with clang's runtime libraries; nothing else is needed beyond deploy/setup.sh's.
install_missing --no-install-recommends clang-14 libclang-rt-14-dev
export CMAKE_BUILD_PARALLEL_LEVEL=$jobs
fuzz_targets=()
for t in "${targets[@]}"; do fuzz_targets+=(--target "rths_fuzz_$t"); done
if [[ -n $build_dir ]] && grep -qx 'RTHS_FUZZ:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null; then
  build=$build_dir
  echo "fuzz: the targets of $build"
  cmake --build "$build" "${fuzz_targets[@]}"
else
  [[ -z $build_dir ]] || echo "fuzz: $build_dir is not a build with RTHS_FUZZ=ON; configuring build-fuzz"
  build="build-fuzz"
  deploy/setup.sh "${fuzz_targets[@]}" "$build" -DCMAKE_CXX_COMPILER=clang++-14 -DRTHS_FUZZ=ON \
    -DRTHS_BUILD_TESTS=OFF -DRTHS_WERROR=ON -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE=-O1
fi

export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Every regression and seed input once: a fixed bug that came back fails here, before any fuzzing.
failed=0
for t in "${targets[@]}"; do
  inputs=()
  for dir in "tests/fuzz/regressions/$t" "tests/fuzz/corpus/$t"; do
    [[ -d $dir ]] || continue
    while IFS= read -r -d '' f; do inputs+=("$f"); done < <(find "$dir" -type f ! -name '*.md' -print0 | sort -z)
  done
  [[ ${#inputs[@]} -gt 0 ]] || continue
  if "$build/bin/rths_fuzz_$t" "${inputs[@]}" >"$build/replay_$t.log" 2>&1; then
    echo "fuzz: $t: ${#inputs[@]} corpus and regression inputs replayed"
  else
    echo "fuzz: $t: replaying its corpus and regression inputs FAILED:" >&2
    tail -n 40 "$build/replay_$t.log" >&2
    failed=$((failed + 1))
  fi
done
if $replay_only || [[ $failed -gt 0 ]]; then
  echo "fuzz: $(( ${#targets[@]} - failed )) passed, $failed failed"
  exit $((failed > 0))
fi

# fuzz_one TARGET: S seconds from the seed corpus; its exit status in build-fuzz/status_TARGET, the
# findings, if any, in build-fuzz/findings/TARGET/.
fuzz_one() {
  local t=$1 status=0
  mkdir -p "$build/corpus/$t" "$build/findings/$t"
  local seeds=()
  for dir in "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t"; do [[ -d $dir ]] && seeds+=("$dir"); done
  # -timeout: one input that takes 10 s is a hang; -rss_limit_mb: one that takes 2 GB is a finding.
  "$build/bin/rths_fuzz_$t" "$build/corpus/$t" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/findings/$t/" >"$build/fuzz_$t.log" 2>&1 ||
    status=$?
  echo "$status" >"$build/status_$t"
}

running=0
for t in "${targets[@]}"; do
  if [[ $running -ge $jobs ]]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
for t in "${targets[@]}"; do
  if [[ $(cat "$build/status_$t") -eq 0 ]]; then
    runs=$(grep -m1 'stat::number_of_executed_units' "$build/fuzz_$t.log" | awk '{print $2}')
    cov=$(grep -o 'cov: [0-9]*' "$build/fuzz_$t.log" | tail -n 1)
    echo "fuzz: $t: no finding in ${seconds} s (${runs:-?} inputs, ${cov:-cov: ?})"
  else
    echo "fuzz: $t: FINDING (log: $build/fuzz_$t.log, input: $build/findings/$t/):" >&2
    grep -A 30 -m1 -E '==[0-9]+==ERROR|runtime error|finding:|deadly signal' "$build/fuzz_$t.log" >&2 ||
      tail -n 40 "$build/fuzz_$t.log" >&2
    ls "$build/findings/$t/" >&2
    failed=$((failed + 1))
  fi
done
echo "fuzz: $(( ${#targets[@]} - failed )) passed, $failed failed"
exit $((failed > 0))
