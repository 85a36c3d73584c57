#!/usr/bin/env bash
# Installs the Debian packages rths needs (only those missing), then configures and builds it.
# Usage: deploy/setup.sh [--nodes-only] [--target NAME]... [BUILD_DIR] [--target NAME]... [extra cmake options...]
#   (default BUILD_DIR: build; without --target everything is built, tests included; a --target may
#   stand before or after BUILD_DIR)
#   --nodes-only  what building and running the executables needs, no more: no test or benchmark
#                 libraries, no Node.js and npm for the console's page, the tests not configured (a
#                 later run without it configures them in the same folder and rebuilds nothing else)
set -euo pipefail
cd "$(dirname "$0")/.."
readonly SELF=${0##*/}
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"

# console/web's npm packages when missing or older than its lock file (held under the package lock:
# two setups at once would write node_modules together).
console_packages() {
  if [[ ! -f console/web/node_modules/.package-lock.json ||
    console/web/package-lock.json -nt console/web/node_modules/.package-lock.json ]]; then
    (cd console/web && npm ci --no-audit --no-fund) ||
      echo "$SELF: npm ci in console/web failed: rths-console will say uPlot is missing" >&2
  fi
}

# names_a_compiler OPTION...: true when the cmake options choose the compiler themselves (the compiler
# or a toolchain file, in any -D spelling, or an initial cache file with -C).
names_a_compiler() {
  local o
  for o in "$@"; do
    [[ $o =~ ^-D[[:space:]]*CMAKE_(CXX_COMPILER|TOOLCHAIN_FILE)(:[A-Z]+)?= || $o == -C* ]] && return 0
  done
  return 1
}

targets=()
build_dir=""
cmake_options=()
nodes_only=0
while [ $# -gt 0 ]; do
  if [ "$1" = --nodes-only ]; then
    nodes_only=1
    shift
  elif [ "$1" = --target ]; then
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
  protobuf-compiler libspdlog-dev libfmt-dev libsodium-dev libspectra-dev gnuplot-nox
if ((nodes_only)); then
  cmake_options=(-DRTHS_BUILD_TESTS=OFF "${cmake_options[@]+"${cmake_options[@]}"}")
else
  install_missing --no-install-recommends libgtest-dev libgmock-dev libbenchmark-dev iproute2 parallel
  cmake_options=(-DRTHS_BUILD_TESTS=ON "${cmake_options[@]+"${cmake_options[@]}"}")
  # The console's page draws with uPlot, from the npm registry at the version
  # console/web/package-lock.json pins (its only package: the console's browser test drives chromium
  # with no npm package, on Debian's Node.js 18 as on later ones). Node.js and npm from Debian unless
  # the machine has them already (a NodeSource Node.js brings its own npm). npm's warnings are
  # printed, not hidden.
  command -v npm >/dev/null || install_missing --no-install-recommends npm
  with_package_lock console_packages
fi

# A new build folder compiles with Debian's clang 14: it builds this tree in about two thirds of g++
# 12's CPU time, and the real-time steps it compiles cost about what g++'s do (docs/performance.md,
# "The compiler"). g++ stays installed: clang uses its C++ library, and the TSan stage compiles with
# it. A folder configured before keeps its compiler; CXX=... or a compiler in the options (see
# names_a_compiler) chooses another.
compiler_options=()
if [[ ! -f $build_dir/CMakeCache.txt && -z ${CXX:-} ]] && ! names_a_compiler "${cmake_options[@]}"; then
  install_missing --no-install-recommends clang-14
  compiler_options=(-DCMAKE_CXX_COMPILER=clang++-14)
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${compiler_options[@]+"${compiler_options[@]}"}" \
  "${cmake_options[@]}" >/dev/null
cmake --build "$build_dir" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" "${targets[@]+"${targets[@]}"}"
