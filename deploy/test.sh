#!/usr/bin/env bash
# Builds rths with warnings as errors (installing what is missing) and runs the whole test suite.
# Usage: deploy/test.sh [--containers] [--no-skips] [CTEST_OPTION...]
#   --containers  also install podman and make the container images from this build
#                 (deploy/containers/run.sh --prepare --from-build build), so that the container
#                 test runs instead of being skipped: seconds once the base image exists
#   --no-skips    a skipped test fails the run, unless its reason is that the kernel forbids what it
#                 needs ("the kernel forbids ...") or that the machine was too loaded to keep a
#                 real-time comparison's timing in any of its runs ("this machine cannot keep ..."):
#                 what CI may not leave untested
set -euo pipefail
cd "$(dirname "$0")/.."
readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"
# shellcheck source=deploy/lib/stage.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/stage.sh"

containers=0
no_skips=0
ctest_options=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --containers) containers=1; shift ;;
    --no-skips) no_skips=1; shift ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) ctest_options+=("$1"); shift ;;
  esac
done

# The Debian packages the container topology needs on this host (docs/containers.md), then the base
# image (its debootstrap tarball cached in .cache/containers, which .gitignore keeps out) and the
# rths image from the executables just built. Exit 77 of run.sh (containers cannot run here) is the
# container test's to report. The base image is a debootstrap when there is no tarball: about two
# minutes of download and unpacking and little CPU, made in the background while the build compiles.
readonly BASE_LOG=.cache/containers/base-image.log
container_packages() {
  install_missing --no-install-recommends podman podman-compose debootstrap runc netavark aardvark-dns iptables
}
base_pid=""
start_base_image() {
  mkdir -p .cache/containers
  deploy/containers/run.sh --prepare-base --from-build build --cache .cache/containers >"$BASE_LOG" 2>&1 &
  base_pid=$!
  # A failed build ends this script: the base image's debootstrap goes with it.
  trap '[[ -z $base_pid ]] || kill "$base_pid" 2>/dev/null || true' EXIT
}
# shellcheck disable=SC2317  # called through stage
container_images() {
  local rc=0
  if [[ -n $base_pid ]]; then
    wait "$base_pid" || rc=$?
    base_pid=""
    if ((rc != 0)); then
      cat "$BASE_LOG" >&2
      [[ $rc -eq $EXIT_SKIPPED ]] || return "$rc"
      rc=0
    fi
  fi
  deploy/containers/run.sh --prepare --from-build build --cache .cache/containers || rc=$?
  [[ $rc -ne $EXIT_SKIPPED ]] || rc=0
  return "$rc"
}

if ((containers)); then
  container_packages
  start_base_image
fi
deploy/setup.sh build -DRTHS_WERROR=ON
# The console's end-to-end test loads its page in Debian's chromium.
install_missing --no-install-recommends chromium fonts-liberation
status=0
if ((containers)); then
  stage "container images" container_images || status=1
fi
ctest --test-dir build --output-on-failure -j "$(nproc)" "${ctest_options[@]+"${ctest_options[@]}"}" || status=1
# ctest shows nothing of a skipped test: say why each one was skipped.
skips=$(deploy/skip-reasons.sh build)
[[ -z $skips ]] || printf '%s\n' "$skips"
if ((no_skips)); then
  # A real-time comparison that could not keep its timing in several runs on an overloaded machine
  # skips saying so (with its counts printed): it would measure the machine, and the timing rules it
  # rests on have exact tests of their own.
  untested=$(printf '%s\n' "$skips" | grep -v -e '^$' -e 'the kernel forbids' -e 'this machine cannot keep' || true)
  if [[ -n $untested ]]; then
    note "$(printf '%s\n' "$untested" | wc -l) tests skipped for a reason other than the kernel (--no-skips):" \
      "install or prepare what they name"
    status=1
  fi
fi
exit "$status"
