#!/usr/bin/env bash
# The rths image's entry point: one node of deploy/containers/compose.yaml per container. See --help.
set -euo pipefail

readonly SELF=rths-node

usage() {
  cat <<'EOF'
rths-node — one node of the rths container topology (the image's entry point)

Usage:
  rths-node numerical [NAME=HOST:PORT]...
  rths-node site NAME PORT
  rths-node relay NAME PORT SITE_HOST:SITE_PORT
  rths-node COMMAND [ARGS...]          any other command runs as given (e.g. rths-numerical --help)

  numerical  rths-numerical run $RTHS_CONFIG --realtime --out $RTHS_OUT_DIR $RTHS_SETS, with
             --set site[NAME].address=HOST:PORT for each NAME=HOST:PORT (the site's relay).
  site       rths-physical serve $RTHS_CONFIG --site NAME --listen 0.0.0.0:PORT --out $RTHS_OUT_DIR
             --wait $RTHS_WAIT_S $RTHS_SETS.
  relay      rths-relay $RTHS_CONFIG --site NAME --listen 0.0.0.0:PORT --to SITE_HOST:SITE_PORT
             --out $RTHS_OUT_DIR $RTHS_RELAY_ARGS $RTHS_SETS.
  Each runs at nice -20: ahead of the host's other work wherever it runs without SCHED_FIFO (refused,
  or priority 0, as run.sh sets for the relays where the real-time budget is too small for them).
  A SCHED_FIFO thread ignores it; without CAP_SYS_NICE nice warns and goes on.
  A NAME of "none" (or empty) means the topology has no such site in this run: a site or relay then
  exits 0 at once, and the numerical node skips the pair.

Environment:
  RTHS_CONFIG    Experiment file, relative to /opt/rths/main (default examples/seed002/spring.textproto).
  RTHS_SETS      --set overrides for every node, separated by blanks; quote one that holds blanks
                 ('site[0].link={ forward { delay_s: 0.02 } }'), as xargs(1) reads quotes.
  RTHS_OUT_DIR   Folder for every node's files (default /out, the bind-mounted run folder).
  RTHS_WAIT_S    How long a site waits for the numerical node's hello (default 120).
  RTHS_RELAY_ARGS  Extra rths-relay options (e.g. --spin-us 200).
EOF
}

die() {
  echo "$SELF: error: $*" >&2
  exit 2
}

CONFIG=${RTHS_CONFIG:-examples/seed002/spring.textproto}
OUT_DIR=${RTHS_OUT_DIR:-/out}
WAIT_S=${RTHS_WAIT_S:-120}

# RTHS_SETS as --set pairs; xargs splits on blanks and honours quotes, without evaluating anything.
SETS=()
if [[ -n ${RTHS_SETS:-} ]]; then
  split=$(printf '%s\n' "$RTHS_SETS" | xargs -r -n 1 printf '%s\n' 2>&1) ||
    die "RTHS_SETS: cannot split '$RTHS_SETS' (${split//$'\n'/ })"
  mapfile -t words <<<"$split"
  for w in "${words[@]}"; do
    [[ -z $w ]] || SETS+=(--set "$w")
  done
fi

no_site() {
  [[ -z $1 || $1 == none ]]
}

# The site's pre-shared key, when /keys holds one (run.sh makes them; a lab mounts its own).
key_set() {
  [[ ! -f /keys/$1.key ]] || printf '%s\n' --set "site[$1].key_file=/keys/$1.key"
}

role=${1:---help}
case "$role" in
  -h | --help)
    usage
    exit 0
    ;;
  numerical)
    shift
    args=(run "$CONFIG" --realtime --out "$OUT_DIR" "${SETS[@]+"${SETS[@]}"}")
    for pair in "$@"; do
      [[ $pair == *=* ]] || die "numerical: expected NAME=HOST:PORT, got '$pair'"
      if ! no_site "${pair%%=*}"; then
        args+=(--set "site[${pair%%=*}].address=${pair#*=}")
        mapfile -t key < <(key_set "${pair%%=*}")
        args+=("${key[@]+"${key[@]}"}")
      fi
    done
    echo "$SELF: rths-numerical ${args[*]}" >&2
    exec nice -n -20 rths-numerical "${args[@]}"
    ;;
  site)
    [[ $# -eq 3 ]] || die "site: expected NAME PORT"
    if no_site "$2"; then
      echo "$SELF: no site for this service in this run: nothing to do" >&2
      exit 0
    fi
    mapfile -t key < <(key_set "$2")
    args=(serve "$CONFIG" --site "$2" --listen "0.0.0.0:$3" --out "$OUT_DIR" --wait "$WAIT_S"
      "${key[@]+"${key[@]}"}" "${SETS[@]+"${SETS[@]}"}")
    echo "$SELF: rths-physical ${args[*]}" >&2
    exec nice -n -20 rths-physical "${args[@]}"
    ;;
  relay)
    [[ $# -eq 4 ]] || die "relay: expected NAME PORT SITE_HOST:SITE_PORT"
    if no_site "$2"; then
      echo "$SELF: no site behind this relay in this run: nothing to do" >&2
      exit 0
    fi
    # shellcheck disable=SC2206  # RTHS_RELAY_ARGS is a list of plain options
    extra=(${RTHS_RELAY_ARGS:-})
    args=("$CONFIG" --site "$2" --listen "0.0.0.0:$3" --to "$4" --out "$OUT_DIR"
      "${extra[@]+"${extra[@]}"}" "${SETS[@]+"${SETS[@]}"}")
    echo "$SELF: rths-relay ${args[*]}" >&2
    exec nice -n -20 rths-relay "${args[@]}"
    ;;
  *) exec "$@" ;;
esac
