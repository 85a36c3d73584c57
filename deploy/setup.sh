#!/usr/bin/env bash
# Installs the Debian packages rths needs (only those missing), then configures and builds it.
# Usage: deploy/setup.sh [BUILD_DIR] [extra cmake options...]   (default BUILD_DIR: build)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build}
shift || true

packages=(g++ cmake make pkg-config libasio-dev libeigen3-dev libprotobuf-dev protobuf-compiler
          libspdlog-dev libfmt-dev libsodium-dev libgtest-dev libgmock-dev libbenchmark-dev iproute2
          gnuplot-nox parallel)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
