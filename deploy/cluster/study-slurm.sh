#!/usr/bin/env bash
# An rths-study on a Slurm cluster: a job array with one shard per task, then a merge job that waits
# for the whole array. The same script is the submitter and the jobs' body. See --help.
set -euo pipefail

SELF_PATH=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
readonly SELF_PATH
readonly SELF=${0##*/}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
readonly REPO

usage() {
  cat <<'EOF'
study-slurm.sh — an rths-study as a Slurm job array (one shard per task) and a dependent merge job

Usage:
  deploy/cluster/study-slurm.sh submit STUDY --shards N --out DIR [--jobs-per-shard J] [--bin DIR]
                                [--dry-run] [-- SBATCH OPTIONS...]
  deploy/cluster/study-slurm.sh shard STUDY --shards N --out DIR [--jobs-per-shard J] [--bin DIR]
  deploy/cluster/study-slurm.sh merge --shards N --out DIR [--bin DIR]
  deploy/cluster/study-slurm.sh --help

submit (on the login node) runs two sbatch commands and prints their job ids:
  sbatch --parsable --array=1-N --cpus-per-task=J --job-name=rths-study-shard
         --output=DIR/slurm/shard-%a.out [SBATCH OPTIONS] study-slurm.sh shard STUDY ...
  sbatch --parsable --dependency=afterany:<array job id> --job-name=rths-study-merge
         --output=DIR/slurm/merge.out [SBATCH OPTIONS] study-slurm.sh merge ...
  The merge waits for every task (afterany: a shard whose rows failed still merges, and a shard
  that died is named by the merge as missing rows). --dry-run prints the commands instead.
shard (array task K = $SLURM_ARRAY_TASK_ID) runs
  rths-study run STUDY --shard K/N --out DIR/shards/K --jobs J --quiet
  with J = $SLURM_CPUS_PER_TASK when Slurm sets it.
merge runs rths-study merge DIR/shards/1 ... DIR/shards/N --out DIR: DIR/study.csv, DIR/pure.csv
  and the plots are those of one unsharded run (the PNGs need gnuplot on the merge node; without it
  the .dat and .gp files are there to plot elsewhere).

Options:
  --shards N          Number of shards = array tasks (required).
  --out DIR           Study folder on the shared file system (created).
  --jobs-per-shard J  Threads per shard, and the array tasks' --cpus-per-task (default 1).
  --bin DIR           Folder holding rths-study on the compute nodes (default: $RTHS_BIN, else
                      build/bin of this repository).
  --dry-run           (submit) Print the sbatch commands, submit nothing.
  -- OPTIONS          (submit) Passed to both sbatch commands, e.g. --partition=short
                      --time=00:30:00 --account=lab123 --mem-per-cpu=1G.

Environment:
  RTHS_BIN                Default for --bin.
  SLURM_ARRAY_TASK_ID     (set by Slurm) the shard a task runs, 1..N.
  SLURM_CPUS_PER_TASK     (set by Slurm) threads for the shard when set.

Requirements: STUDY, the config and ground motion it names, rths-study (with its shared libraries)
and DIR at the same paths on every node; the script itself reachable at the same path too.

Example (the nonlinear seed 002 study in 8 shards of 2 threads on partition "short"):
  deploy/cluster/study-slurm.sh submit examples/studies/seed002_nonlinear.study --shards 8 \
    --jobs-per-shard 2 --out /scratch/$USER/nonlinear -- --partition=short --time=00:10:00

Exit codes: 0 done; 1 failure (a failed row: see study.csv's error column); 2 bad command line;
shard and merge pass on rths-study's exit code.
EOF
}

# Self-contained on purpose (the other deploy scripts source deploy/lib/messages.sh): sbatch runs
# a copy of this script from its spool folder, where a relative source would not resolve.
die() {
  echo "$SELF: error: $*" >&2
  exit 1
}
bad_usage() {
  echo "$SELF: $* (see --help)" >&2
  exit 2
}

MODE="" STUDY="" SHARDS="" OUT="" JOBS_PER_SHARD=1 BIN=${RTHS_BIN:-} DRY_RUN=0
SBATCH_OPTIONS=()
need_value() {
  [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --shards | --out | --jobs-per-shard | --bin)
      need_value "$@"
      case "$1" in
        --shards) SHARDS=$2 ;;
        --out) OUT=$2 ;;
        --jobs-per-shard) JOBS_PER_SHARD=$2 ;;
        --bin) BIN=$2 ;;
      esac
      shift 2
      ;;
    --dry-run)
      DRY_RUN=1
      shift
      ;;
    --)
      shift
      SBATCH_OPTIONS=("$@")
      break
      ;;
    -*) bad_usage "unknown option '$1'" ;;
    *)
      if [[ -z $MODE ]]; then
        case "$1" in
          submit | shard | merge) MODE=$1 ;;
          *) bad_usage "unknown command '$1': expected submit, shard or merge" ;;
        esac
      elif [[ $MODE != merge && -z $STUDY ]]; then
        STUDY=$1
      else
        bad_usage "unexpected argument '$1'"
      fi
      shift
      ;;
  esac
done
[[ -n $MODE ]] || bad_usage "missing command: submit, shard or merge"
[[ $MODE == merge || -n $STUDY ]] || bad_usage "$MODE needs STUDY"
[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || bad_usage "--shards: expected a positive whole number, found '$SHARDS'"
[[ -n $OUT ]] || bad_usage "missing --out DIR"
[[ $JOBS_PER_SHARD =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs-per-shard: expected a positive whole number"
[[ $MODE == submit || $DRY_RUN == 0 ]] || bad_usage "--dry-run belongs to submit"
[[ $MODE == submit || ${#SBATCH_OPTIONS[@]} -eq 0 ]] || bad_usage "sbatch options belong to submit"

[[ -n $BIN ]] || BIN=$REPO/build/bin
[[ -x $BIN/rths-study || ($MODE == submit && $DRY_RUN == 1) ]] || die "no rths-study in $BIN (give --bin DIR or RTHS_BIN)"
[[ ! -d $BIN ]] || BIN=$(cd "$BIN" && pwd)
if [[ -n $STUDY ]]; then
  [[ -f $STUDY ]] || die "no study file $STUDY"
  STUDY=$(cd "$(dirname "$STUDY")" && pwd)/$(basename "$STUDY")
fi
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)

case "$MODE" in
  submit)
    mkdir -p "$OUT/slurm"
    common=(--shards "$SHARDS" --out "$OUT" --jobs-per-shard "$JOBS_PER_SHARD" --bin "$BIN")
    array=(sbatch --parsable "--array=1-$SHARDS" "--cpus-per-task=$JOBS_PER_SHARD" --job-name=rths-study-shard
      "--output=$OUT/slurm/shard-%a.out" "${SBATCH_OPTIONS[@]+"${SBATCH_OPTIONS[@]}"}"
      "$SELF_PATH" shard "$STUDY" "${common[@]}")
    merge_tail=(--job-name=rths-study-merge "--output=$OUT/slurm/merge.out"
      "${SBATCH_OPTIONS[@]+"${SBATCH_OPTIONS[@]}"}" "$SELF_PATH" merge --shards "$SHARDS" --out "$OUT" --bin "$BIN")
    if ((DRY_RUN)); then
      printf '%q ' "${array[@]}"
      echo
      printf '%q ' sbatch --parsable "--dependency=afterany:ARRAY_JOB_ID" "${merge_tail[@]}"
      echo
      exit 0
    fi
    command -v sbatch >/dev/null 2>&1 || die "sbatch not found: run submit on a Slurm login node (or --dry-run)"
    array_id=$("${array[@]}")
    array_id=${array_id%%;*} # --parsable prints "id" or "id;cluster"
    merge_id=$(sbatch --parsable "--dependency=afterany:$array_id" "${merge_tail[@]}")
    merge_id=${merge_id%%;*}
    echo "$SELF: submitted shards as job array $array_id (tasks 1-$SHARDS), merge as job $merge_id"
    echo "$SELF: results in $OUT (logs in $OUT/slurm); follow with: squeue -j $array_id,$merge_id"
    ;;
  shard)
    k=${SLURM_ARRAY_TASK_ID:-}
    [[ $k =~ ^[1-9][0-9]*$ && $k -le $SHARDS ]] ||
      die "SLURM_ARRAY_TASK_ID is '${k}', expected 1..$SHARDS (shard runs as a task of the array job submit makes)"
    jobs=${SLURM_CPUS_PER_TASK:-$JOBS_PER_SHARD}
    mkdir -p "$OUT/shards"
    rm -rf "${OUT:?}/shards/$k"
    echo "$SELF: shard $k/$SHARDS of $STUDY on $(hostname) with $jobs thread(s)" >&2
    exec "$BIN/rths-study" run "$STUDY" --shard "$k/$SHARDS" --out "$OUT/shards/$k" --jobs "$jobs" --quiet
    ;;
  merge)
    dirs=()
    for ((k = 1; k <= SHARDS; k++)); do
      [[ -f $OUT/shards/$k/study.csv ]] || die "shard $k/$SHARDS wrote no $OUT/shards/$k/study.csv (see $OUT/slurm/shard-$k.out)"
      dirs+=("$OUT/shards/$k")
    done
    exec "$BIN/rths-study" merge "${dirs[@]}" --out "$OUT"
    ;;
esac
