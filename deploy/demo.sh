#!/usr/bin/env bash
# Builds rths (installing what is missing) and runs the built-in demo experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh build
# The single-site loopback: the numerical node and a site process talking UDP over 127.0.0.1 in real
# time, then the evaluation against the monolithic reference.
exec build/bin/rths-numerical loopback examples/demo.textproto --out runs/demo "$@"
