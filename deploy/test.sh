#!/usr/bin/env bash
# Builds rths with warnings as errors (installing what is missing) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh build -DRTHS_WERROR=ON
cd build
status=0
ctest --output-on-failure -j "$(nproc)" "$@" || status=$?
../deploy/skip-reasons.sh . # ctest shows nothing of a skipped test: say why each one was skipped
exit "$status"
