#!/usr/bin/env bash
# Runs an rths-study in N shards with GNU parallel, on this machine or on the hosts of an
# --sshloginfile, then merges them into one study folder (the same tables and plots as one
# unsharded run). See --help.
set -euo pipefail

readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/messages.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
readonly REPO

usage() {
  cat <<'EOF'
study-parallel.sh — an rths-study in shards with GNU parallel, then merged

Usage:
  deploy/cluster/study-parallel.sh STUDY --shards N --out DIR [OPTIONS]
  deploy/cluster/study-parallel.sh --help

Runs `rths-study run STUDY --shard K/N --out DIR/shards/K --jobs J --quiet` for K = 1..N with GNU
parallel (at most P shards at a time), then `rths-study merge DIR/shards/1 ... DIR/shards/N --out DIR`:
DIR/study.csv, DIR/pure.csv and the plots are then those of one unsharded run. A shard whose rows
failed (exit 1) is merged and reported (exit 1); a shard that did not run through (bad study,
interrupted, killed) stops before the merge, naming the shard and its log.

Options:
  --shards N            Number of shards (required).
  --out DIR             Study folder (created); shards go to DIR/shards/K, their logs to
                        DIR/shards/K.log, GNU parallel's job log to DIR/shards/joblog.
  --jobs-per-shard J    Threads per shard (rths-study --jobs; default 1).
  --parallel-jobs P     Shards at a time on each host (parallel --jobs; default: the host's cores / J).
  --sshloginfile FILE   Run the shards on the hosts listed in FILE (GNU parallel's format, e.g.
                        "8/user@node1"). Every host must see STUDY, its config and ground motion,
                        the rths-study binary and DIR at the same paths (a shared file system), and
                        take ssh logins without a password.
  --bin DIR             Folder holding rths-study (default: $RTHS_BIN, else build/bin of this
                        repository, else rths-study on PATH).
  -h, --help            This text.

Environment:
  RTHS_BIN              Default for --bin.

Example (4 shards of the nonlinear seed 002 study, 2 at a time, one thread each):
  deploy/cluster/study-parallel.sh examples/studies/seed002_nonlinear.study --shards 4 \
    --parallel-jobs 2 --out runs/nonlinear

Exit codes: 0 every row ran and merged; 1 a row failed (merged, see DIR/study.csv's error column)
or a shard did not run through; 2 bad command line; 77 GNU parallel is not installed (Debian:
parallel; deploy/setup.sh installs it).
EOF
}


STUDY="" SHARDS="" OUT="" JOBS_PER_SHARD=1 PARALLEL_JOBS="" SSHLOGINFILE="" BIN=${RTHS_BIN:-}
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --shards | --out | --jobs-per-shard | --parallel-jobs | --sshloginfile | --bin)
      need_value "$@"
      case "$1" in
        --shards) SHARDS=$2 ;;
        --out) OUT=$2 ;;
        --jobs-per-shard) JOBS_PER_SHARD=$2 ;;
        --parallel-jobs) PARALLEL_JOBS=$2 ;;
        --sshloginfile) SSHLOGINFILE=$2 ;;
        --bin) BIN=$2 ;;
      esac
      shift 2
      ;;
    -*) bad_usage "unknown option '$1'" ;;
    *)
      [[ -z $STUDY ]] || bad_usage "one STUDY only, found '$STUDY' and '$1'"
      STUDY=$1
      shift
      ;;
  esac
done
[[ -n $STUDY ]] || bad_usage "missing STUDY"
[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || bad_usage "--shards: expected a positive whole number, found '$SHARDS'"
[[ -n $OUT ]] || bad_usage "missing --out DIR"
[[ $JOBS_PER_SHARD =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs-per-shard: expected a positive whole number"
[[ -z $PARALLEL_JOBS || $PARALLEL_JOBS =~ ^[1-9][0-9]*$ ]] || bad_usage "--parallel-jobs: expected a positive whole number"
[[ -z $SSHLOGINFILE || -f $SSHLOGINFILE ]] || bad_usage "--sshloginfile: no file $SSHLOGINFILE"
[[ -f $STUDY ]] || bad_usage "no study file $STUDY"

if ! command -v parallel >/dev/null 2>&1; then
  echo "$SELF: skipped: GNU parallel is not installed (Debian package: parallel; deploy/setup.sh installs it)" >&2
  exit "$EXIT_SKIPPED"
fi
if [[ -z $BIN ]]; then
  if [[ -x $REPO/build/bin/rths-study ]]; then
    BIN=$REPO/build/bin
  elif command -v rths-study >/dev/null 2>&1; then
    BIN=$(dirname "$(command -v rths-study)")
  else
    die "no rths-study: build it (cmake --build build) or give --bin DIR / RTHS_BIN"
  fi
fi
[[ -x $BIN/rths-study ]] || die "no rths-study in $BIN"
BIN=$(cd "$BIN" && pwd)
STUDY=$(cd "$(dirname "$STUDY")" && pwd)/$(basename "$STUDY")
mkdir -p "$OUT/shards" || die "cannot create $OUT/shards"
OUT=$(cd "$OUT" && pwd)
[[ -n $PARALLEL_JOBS ]] || PARALLEL_JOBS=$(($(nproc) / JOBS_PER_SHARD > 0 ? $(nproc) / JOBS_PER_SHARD : 1))

# Remove shards of an earlier run into the same folder: a stale shard must not be merged.
for ((k = 1; k <= SHARDS; k++)); do
  rm -rf "${OUT:?}/shards/$k"
done
rm -f "$OUT/shards/joblog"

parallel_args=(--will-cite --jobs "$PARALLEL_JOBS" --joblog "$OUT/shards/joblog")
[[ -z $SSHLOGINFILE ]] || parallel_args+=(--sshloginfile "$SSHLOGINFILE")
echo "$SELF: $SHARDS shards of $STUDY, $PARALLEL_JOBS at a time, $JOBS_PER_SHARD thread(s) each" >&2
started_ns=$(date +%s%N)
# Each shard's stdout and stderr go to DIR/shards/K.log; parallel's exit code is checked per job below.
# shellcheck disable=SC2046  # one argument per shard number
parallel "${parallel_args[@]}" \
  "$BIN/rths-study run $(printf %q "$STUDY") --shard {}/$SHARDS --out $(printf %q "$OUT")/shards/{} --jobs $JOBS_PER_SHARD --quiet >$(printf %q "$OUT")/shards/{}.log 2>&1" \
  ::: $(seq 1 "$SHARDS") || true

# Exit codes per shard from the job log (column 7, Exitval; column 9, the command).
rc=0
shard_dirs=()
for ((k = 1; k <= SHARDS; k++)); do
  code=$(awk -F'\t' -v k="$k" 'NR > 1 && $9 ~ ("--shard " k "/") { print $7 }' "$OUT/shards/joblog")
  case "$code" in
    0) ;;
    1) rc=1 ;; # rows failed: merged and reported
    *) die "shard $k/$SHARDS did not run through (exit ${code:-unknown}); see $OUT/shards/$k.log" ;;
  esac
  shard_dirs+=("$OUT/shards/$k")
done
merge_rc=0
"$BIN/rths-study" merge "${shard_dirs[@]}" --out "$OUT" --quiet || merge_rc=$?
if ((merge_rc != 0 && merge_rc != 1)); then
  die "merge failed (exit $merge_rc)"
fi
((merge_rc == 0)) || rc=1
elapsed_ms=$((($(date +%s%N) - started_ns) / 1000000))
what=study.csv
[[ ! -f $OUT/pure.csv ]] || what="study.csv, pure.csv and the plots"
echo "$SELF: merged $SHARDS shards into $OUT ($what) in $((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000))) s" >&2
exit "$rc"
