#!/usr/bin/env bash
# The example ladder of numerical substructures (docs/models.md), written by `rths-numerical model`:
#   shear100   a 100-storey shear building (100 DOFs)      committed
#   shear1000  a 1000-storey shear building (1000 DOFs)    committed
#   frame10k   a plane steel frame, 33 bays x 98 storeys (9996 DOFs, 2.6 MB of files): written here,
#              not committed (examples/models/.gitignore)
# Each folder: mass.mtx, stiffness.mtx, dofs.csv and NAME.textproto (KR-alpha, one remote site).
# Usage: examples/models/generate.sh [--numerical PATH]   (default: build/bin/rths-numerical)
set -euo pipefail
cd "$(dirname "$0")"
numerical=../../build/bin/rths-numerical
case "${1:-}" in
  --numerical) numerical=$2 ;;
  -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "generate.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
esac
[[ -x $numerical ]] || { echo "generate.sh: $numerical is missing: build it first (deploy/setup.sh --target rths-numerical build)" >&2; exit 2; }
"$numerical" model shear-building --storeys 100 --out shear100
"$numerical" model shear-building --storeys 1000 --out shear1000
"$numerical" model frame --bays 33 --storeys 98 --out frame10k
