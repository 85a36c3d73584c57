#!/usr/bin/env bash
# Builds the test suite with sanitizers, each in its own folder, and runs it (docs/reliability.md).
#   asan   AddressSanitizer + UndefinedBehaviorSanitizer (build-asan): the unit and realtime tiers
#          of the suite (ASAN_TIERS below: their test programs alone are built), against sanitized
#          rths-numerical, rths-physical, rths-relay and rths-study, and the fuzz targets' corpora
#          and regression inputs. With clang the build also holds the libFuzzer targets
#          (RTHS_FUZZ), for deploy/fuzz.sh --build build-asan.
#   tsan   ThreadSanitizer (build-tsan): the tests of threaded code (TSAN_TESTS below).
# Usage: deploy/check-sanitizers.sh [asan|tsan]... [--jobs N] [--compiler CXX] [--build-only|--test-only]
#   (no stage named: both)   --jobs N  build and test jobs (default: nproc)
#   --build-only, --test-only  only build, or only test what an earlier --build-only built (.ci/run
#                   builds one sanitizer's suite while another's tests run)
#   --compiler CXX  the C++ compiler of both stages. Default: clang++-14 for asan (installed with its
#                   sanitizer runtimes when missing; it builds the instrumented suite in about 60 % of
#                   g++'s time), g++ for tsan (clang's TSan runtime defines operator new itself, which
#                   the allocation-counting tests replace)
# Any sanitizer report fails the test that caused it, and so the stage (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
# shellcheck source=deploy/lib/stage.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/stage.sh"
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"

# The tests that exercise threads, as a ctest regex: the live status line of a real-time run, the
# study runner's worker pool (StudyTest starts rths-study with several jobs; StudyRunner drives the
# pool itself), and the recorder's writing thread (the Recording tests in virtual time).
# (tests/CMakeLists.txt builds their files alone into rths_thread_tests, registered as "threads:NAME".)
readonly TSAN_TESTS='^threads:(StatusLine|StudyTest|StudyRunner|Recording\.(Streamed|OrderlyStop|RecordAllocates|ExperimentStopped))'
# The tiers (ctest labels, tests/<module>/<tier>/) the ASan stage runs: every tier but the acceptance
# tests, the seed tables (the unit tests' code paths run for minutes each under instrumentation,
# Eigen 20-40 times slower), which it leaves to the Release suite; and but the namespace and container
# comparisons: the same processes as the real-time tests here, through the kernel's veths and podman,
# whose tolerances assume uninstrumented step times and whose runs must go one at a time (about 90 s
# of this stage's time).
readonly ASAN_TIERS=(unit realtime)

stages=()
jobs=$(nproc)
compiler=""
steps="both"
while [[ $# -gt 0 ]]; do
  case "$1" in
    asan | tsan) stages+=("$1"); shift ;;
    --jobs) need_value "$@"; jobs=$2; shift 2 ;;
    --compiler) need_value "$@"; compiler=$2; shift 2 ;;
    --build-only) steps="build"; shift ;;
    --test-only) steps="test"; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) bad_usage "unknown argument $1" ;;
  esac
done
[[ ${#stages[@]} -gt 0 ]] || stages=(asan tsan)
export CMAKE_BUILD_PARALLEL_LEVEL=$jobs
if [[ -z $compiler || $compiler == clang++-14 ]] && [[ " ${stages[*]} " == *" asan "* ]]; then
  install_missing --no-install-recommends clang-14 libclang-rt-14-dev
fi

# Reports go to stderr, which ctest shows for a failed test; the process then exits non-zero.
# halt_on_error: the first report ends the process (the build also has -fno-sanitize-recover=all).
export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# The sanitized executables that the tests start inherit these.

# configure_and_build DIR SANITIZERS CXX FUZZ TARGET...: a build with every target instrumented, at -O1
# with asserts (Eigen's too), and with FUZZ (ON/OFF) the libFuzzer targets' coverage. Measured under
# ASan+UBSan: -O2 -DNDEBUG built for 400 s more CPU than it saved in the suite (1131 + 275 s against
# 735 + 307 s).
# shellcheck disable=SC2317  # called through stage
configure_and_build() {
  local dir=$1 sanitizers=$2 cxx=$3 fuzz=$4
  shift 4
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  deploy/setup.sh "${targets[@]}" "$dir" -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE=-O1 \
    -DCMAKE_CXX_COMPILER="$cxx" -DRTHS_WERROR=ON -DRTHS_SANITIZE="$sanitizers" -DRTHS_FUZZ="$fuzz"
}

# built DIR: true when DIR holds a configured build; otherwise says what to run first.
built() {
  [[ -f $1/CTestTestfile.cmake ]] && return 0
  echo "$SELF: $1 holds no build: run this stage with --build-only (or without --test-only) first" >&2
  return 1
}

asan() {
  # rths_tests_<tier> builds the test programs of a tier and the executables they start; the unit
  # tier's brings the fuzz replays. With clang the libFuzzer targets come along (their coverage
  # instrumentation costs the suite about a tenth), so that the fuzz stage need not build the
  # libraries a second time.
  local cxx=${compiler:-clang++-14} fuzz=OFF targets=() tier
  for tier in "${ASAN_TIERS[@]}"; do targets+=("rths_tests_$tier"); done
  if [[ $cxx == clang* ]]; then
    fuzz=ON
    targets+=(rths_fuzz)
  fi
  if [[ $steps != test ]]; then
    stage "asan+ubsan: build" configure_and_build build-asan address,undefined "$cxx" "$fuzz" "${targets[@]}" || return 1
  fi
  [[ $steps != build ]] || return 0
  built build-asan || return 1
  # By label, not by excluding the others: the programs of the tiers not built are registered as
  # NAME_NOT_BUILT, with no label.
  local labels
  labels=$(IFS='|'; echo "${ASAN_TIERS[*]}")
  stage "asan+ubsan: test" ctest --test-dir build-asan --output-on-failure -j "$jobs" -L "^($labels)\$"
}

tsan() {
  if [[ $steps != test ]]; then
    stage "tsan: build" configure_and_build build-tsan thread "${compiler:-g++}" OFF rths_thread_tests || return 1
  fi
  [[ $steps != build ]] || return 0
  built build-tsan || return 1
  stage "tsan: test" ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R "$TSAN_TESTS"
}

status=0
for s in "${stages[@]}"; do
  case $s in
    asan) asan || status=1 ;;
    tsan) tsan || status=1 ;;
  esac
done
exit "$status"
