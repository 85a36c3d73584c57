#!/usr/bin/env bash
# Builds rths (installing what is missing) and runs the built-in demo experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh build
exec build/node_numerical/rths-numerical run examples/demo.textproto --out runs/demo "$@"
