#!/usr/bin/env bash
# Installs the Debian packages rths needs (only those missing), then configures and builds it.
# Usage: deploy/setup.sh [--target T]... [BUILD_DIR] [extra cmake options...]   (default BUILD_DIR: build)
#   --target T  build only target T (repeatable; default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."
readonly SELF=${0##*/}
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"

targets=()
while [[ ${1:-} == --target ]]; do
  [[ $# -ge 2 ]] || { echo "setup: --target needs a value" >&2; exit 2; }
  targets+=(--target "$2")
  shift 2
done
build_dir=${1:-build}
shift || true

install_missing g++ cmake make pkg-config libasio-dev libeigen3-dev libprotobuf-dev protobuf-compiler \
                libspdlog-dev libfmt-dev libsodium-dev libgtest-dev libgmock-dev libbenchmark-dev iproute2 gnuplot-nox parallel

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build_dir" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" "${targets[@]}"
