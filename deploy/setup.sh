#!/usr/bin/env bash
# Installs the Debian packages rths needs (only those missing), then configures and builds it.
# Usage: deploy/setup.sh [BUILD_DIR] [--target NAME]... [extra cmake options...]
#   (default BUILD_DIR: build; without --target everything is built, tests included)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build}
shift || true
targets=()
cmake_options=()
while [ $# -gt 0 ]; do
  if [ "$1" = --target ] && [ $# -ge 2 ]; then
    targets+=("$2")
    shift 2
  else
    cmake_options+=("$1")
    shift
  fi
done

packages=(g++ cmake make pkg-config libasio-dev libeigen3-dev libprotobuf-dev protobuf-compiler
          libspdlog-dev libfmt-dev libsodium-dev libgtest-dev libgmock-dev libbenchmark-dev iproute2
          gnuplot-nox parallel)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # Recommends would pull in about 260 packages (X libraries, documentation) that nothing here uses.
  echo "setup: installing ${#missing[@]} Debian packages and what they depend on (${missing[*]}) with apt-get;" \
    "this may take a few minutes and prints nothing until it is done"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${cmake_options[@]+"${cmake_options[@]}"}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" ${targets[@]+--target "${targets[@]}"}
