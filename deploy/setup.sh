#!/usr/bin/env bash
# Installs the Debian packages rths needs (only those missing), then configures and builds it.
# Usage: deploy/setup.sh [--target NAME]... [BUILD_DIR] [--target NAME]... [extra cmake options...]
#   (default BUILD_DIR: build; without --target everything is built, tests included; a --target may
#   stand before or after BUILD_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
readonly SELF=${0##*/}
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"

targets=()
build_dir=""
cmake_options=()
while [ $# -gt 0 ]; do
  if [ "$1" = --target ]; then
    [ $# -ge 2 ] || { echo "$SELF: --target needs a value" >&2; exit 2; }
    targets+=(--target "$2")
    shift 2
  elif [ -z "$build_dir" ] && [ "${1#-}" = "$1" ]; then
    build_dir=$1
    shift
  else
    cmake_options+=("$1")
    shift
  fi
done
build_dir=${build_dir:-build}

# Recommends would pull in about 260 packages (X libraries, documentation) that nothing here uses.
install_missing --no-install-recommends g++ cmake make pkg-config libasio-dev libeigen3-dev libprotobuf-dev \
  protobuf-compiler libspdlog-dev libfmt-dev libsodium-dev libgtest-dev libgmock-dev libbenchmark-dev iproute2 \
  gnuplot-nox parallel libspectra-dev
# The console's page draws with uPlot, from the npm registry at the version console/web/package-lock.json
# pins (its only package: the console's browser test drives chromium with no npm package, on Debian's
# Node.js 18 as on later ones). Node.js and npm from Debian unless the machine has them already (a
# NodeSource Node.js brings its own npm). npm's warnings are printed, not hidden.
command -v npm >/dev/null || install_missing --no-install-recommends npm
if [[ ! -f console/web/node_modules/.package-lock.json ||
  console/web/package-lock.json -nt console/web/node_modules/.package-lock.json ]]; then
  (cd console/web && npm ci --no-audit --no-fund) ||
    echo "$SELF: npm ci in console/web failed: rths-console will say uPlot is missing" >&2
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${cmake_options[@]+"${cmake_options[@]}"}" >/dev/null
cmake --build "$build_dir" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" "${targets[@]+"${targets[@]}"}"
