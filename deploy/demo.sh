#!/usr/bin/env bash
# Builds the two executables the demo runs (installing what is missing, and only what they need: no
# test libraries, no Node.js) and runs the built-in demo experiment. It shares build/ and its flags
# with deploy/test.sh (warnings as errors), so neither builds again what the other has built.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh --nodes-only build --target rths-numerical --target rths-physical -DRTHS_WERROR=ON
# The single-site loopback: the numerical node and a site process talking UDP over 127.0.0.1 in real
# time, then the evaluation against the monolithic reference.
exec build/bin/rths-numerical loopback examples/demo.textproto --out runs/demo "$@"
