#!/usr/bin/env bash
# Builds rths with warnings as errors (installing what is missing) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh build-test -DRTHS_WERROR=ON
cd build-test
exec ctest --output-on-failure -j "$(nproc)" "$@"
