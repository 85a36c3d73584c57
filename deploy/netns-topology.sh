#!/usr/bin/env bash
# A three-host rths topology on one machine: network namespaces joined by veth pairs, and a runner
# that puts the numerical node and two physical sites on them. See --help.
set -euo pipefail

readonly SELF=${0##*/}
REPO=$(cd "$(dirname "$0")/.." && pwd)
readonly REPO
readonly EXIT_SKIPPED=77  # automake's "skipped"

usage() {
  cat <<'EOF'
netns-topology.sh — one numerical host and two physical-site hosts as network namespaces

Usage:
  deploy/netns-topology.sh [OPTIONS] up
  deploy/netns-topology.sh [OPTIONS] down
  deploy/netns-topology.sh [OPTIONS] run CONFIG [ARGS FOR rths-numerical...]
  deploy/netns-topology.sh --help

Topology (PREFIX = --prefix, S = --subnet):
  PREFIX-num   S.1.1/30 ── veth ── S.1.2/30  PREFIX-site1   (site "purdue", UDP port 47001)
               S.2.1/30 ── veth ── S.2.2/30  PREFIX-site2   (site "uconn",  UDP port 47002)
  Every address lives inside the namespaces; the host's own network is never touched.

Commands:
  up     Create the three namespaces and the two veth pairs, bring lo and the links up.
         Fails (exit 1) when one of the namespaces already exists.
  down   Stop whatever still runs in the namespaces and delete them (with their veths).
         No error when they are absent.
  run    Bring the topology up, start
           rths-physical serve CONFIG --site purdue --listen S.1.2:47001   in PREFIX-site1
           rths-physical serve CONFIG --site uconn  --listen S.2.2:47002   in PREFIX-site2
         (each with --out OUT --wait 60 --quiet), wait until both listen, then run
           rths-numerical run CONFIG --realtime --out OUT --quiet ARGS...   in PREFIX-num
         wait for the sites, and always tear the topology down again (also on failure, Ctrl-C or
         SIGTERM; site processes still running are stopped). Every --set PATH=VALUE in ARGS goes to
         both sites too, so both ends agree. When S is not 10.77 (the addresses in
         examples/multisite/case3_two_sites.textproto), the numerical node also gets
         --set site[purdue].address=S.1.2:47001 --set site[uconn].address=S.2.2:47002.
         Exit code: the numerical node's, or when that is 0 the first nonzero site code.
         Example:
           deploy/netns-topology.sh run examples/multisite/case3_two_sites.textproto --set duration_s=10

Options (anywhere on the line):
  --prefix NAME       Namespace name prefix (default rths): PREFIX-num, PREFIX-site1, PREFIX-site2.
                      Give parallel runs different prefixes.
  --subnet A.B        First two octets of the addresses (default 10.77).
  --bin DIR           Folder holding rths-numerical and rths-physical (default: build/bin of the repo).
  --out DIR           (run) Run folder for every node's output (default runs/multisite-<date>-<time>).
  --netem-delay MS    Add MS milliseconds of delay to each direction of both links (tc netem). Where
                      the kernel has no netem qdisc this is reported and ignored.
  -h, --help          This text.

Exit codes: 0 success; 1 failure; 2 bad command line; 77 network namespaces cannot be made here
(not root, no `ip netns`, no veth support): one line on stderr says why. For run, otherwise the
node's exit code (see rths-numerical --help / rths-physical --help).
EOF
}

die() {
  echo "$SELF: error: $*" >&2
  exit 1
}
bad_usage() {
  echo "$SELF: $* (see --help)" >&2
  exit 2
}
skip() {
  echo "$SELF: skipped: $*" >&2
  exit "$EXIT_SKIPPED"
}
note() {
  echo "$SELF: $*" >&2
}

# ---- command line ------------------------------------------------------------------------------
PREFIX=rths
SUBNET=10.77
readonly DEFAULT_SUBNET=10.77
BIN="$REPO/build/bin"
OUT=""
NETEM_MS=""
COMMAND=""
CONFIG=""
FORWARD=()   # to rths-numerical
SITE_SETS=() # the --set pairs of FORWARD, also to each rths-physical
readonly SITE1_NAME=purdue SITE1_PORT=47001
readonly SITE2_NAME=uconn SITE2_PORT=47002

need_value() {
  [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --prefix | --subnet | --bin | --out | --netem-delay)
      need_value "$@"
      case "$1" in
        --prefix) PREFIX=$2 ;;
        --subnet) SUBNET=$2 ;;
        --bin) BIN=$2 ;;
        --out) OUT=$2 ;;
        --netem-delay) NETEM_MS=$2 ;;
      esac
      shift 2
      ;;
    --prefix=* | --subnet=* | --bin=* | --out=* | --netem-delay=*)
      value=${1#*=}
      case "$1" in
        --prefix=*) PREFIX=$value ;;
        --subnet=*) SUBNET=$value ;;
        --bin=*) BIN=$value ;;
        --out=*) OUT=$value ;;
        --netem-delay=*) NETEM_MS=$value ;;
      esac
      shift
      ;;
    --set)
      [[ $COMMAND == run ]] || bad_usage "--set belongs after: run CONFIG"
      need_value "$@"
      FORWARD+=("$1" "$2")
      SITE_SETS+=("$1" "$2")
      shift 2
      ;;
    *)
      if [[ -z $COMMAND ]]; then
        case "$1" in
          up | down | run) COMMAND=$1 ;;
          *) bad_usage "unknown command or option '$1'" ;;
        esac
      elif [[ $COMMAND == run && -z $CONFIG ]]; then
        [[ $1 != -* ]] || bad_usage "run needs CONFIG before '$1'"
        CONFIG=$1
      elif [[ $COMMAND == run ]]; then
        FORWARD+=("$1")
      else
        bad_usage "unexpected argument '$1' for $COMMAND"
      fi
      shift
      ;;
  esac
done
[[ -n $COMMAND ]] || bad_usage "missing command: up, down or run"
[[ $PREFIX =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$ ]] || bad_usage "--prefix '$PREFIX': expected letters, digits, '_', '.', '-' (at most 40)"
if ! [[ $SUBNET =~ ^([0-9]{1,3})\.([0-9]{1,3})$ ]] || ((10#${BASH_REMATCH[1]} > 255 || 10#${BASH_REMATCH[2]} > 255)); then
  bad_usage "--subnet '$SUBNET': expected the first two octets of an IPv4 address, like 10.77"
fi
if [[ -n $NETEM_MS ]] && ! [[ $NETEM_MS =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
  bad_usage "--netem-delay '$NETEM_MS': expected milliseconds, like 20 or 2.5"
fi

readonly NS_NUM="$PREFIX-num" NS_SITE1="$PREFIX-site1" NS_SITE2="$PREFIX-site2"
readonly NAMESPACES=("$NS_NUM" "$NS_SITE1" "$NS_SITE2")
# Interface names are per namespace (the veths are created inside them), so they never collide.
readonly IF_NUM1=to-site1 IF_NUM2=to-site2 IF_SITE=to-num
readonly ADDR_NUM1="$SUBNET.1.1" ADDR_SITE1="$SUBNET.1.2" ADDR_NUM2="$SUBNET.2.1" ADDR_SITE2="$SUBNET.2.2"

# ---- topology -----------------------------------------------------------------------------------
ns_exists() {
  [[ -e /run/netns/$1 ]] || ip netns list 2>/dev/null | grep -qE "^$1( |\$)"
}

# Exit 77 with one line when namespaces cannot be made here.
SUPPORTED=0
check_support() {
  ((!SUPPORTED)) || return 0
  command -v ip >/dev/null 2>&1 || skip "network namespaces need the 'ip' command (iproute2), which is not installed"
  [[ $(id -u) -eq 0 ]] || skip "network namespaces need root (run as root or with sudo)"
  local probe="$PREFIX-probe$$" err
  if ! err=$(ip netns add "$probe" 2>&1); then
    skip "cannot make network namespaces here: ip netns add: ${err//$'\n'/ }"
  fi
  if ! err=$(ip -n "$probe" link add probe0 type veth peer name probe1 2>&1); then
    ip netns delete "$probe" 2>/dev/null || true
    skip "cannot make veth pairs here: ip link add type veth: ${err//$'\n'/ }"
  fi
  ip netns delete "$probe" 2>/dev/null || true
  SUPPORTED=1
}

# Processes still running inside a namespace: TERM, then KILL after 3 s.
stop_namespace_processes() {
  local ns=$1 pids i
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [[ -n $pids ]] || return 0
  # shellcheck disable=SC2086  # one pid per word
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < 30; i++)); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] || return 0
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

topology_down() {
  local ns
  for ns in "${NAMESPACES[@]}"; do
    if ns_exists "$ns"; then
      stop_namespace_processes "$ns"
      ip netns delete "$ns" 2>/dev/null || note "warning: could not delete namespace $ns"
    fi
  done
}

add_netem() {
  local ns=$1 dev=$2 err
  if ! command -v tc >/dev/null 2>&1; then
    note "tc is not installed: no netem delay (--netem-delay $NETEM_MS ignored)"
    return 1
  fi
  if ! err=$(ip netns exec "$ns" tc qdisc add dev "$dev" root netem delay "${NETEM_MS}ms" 2>&1); then
    note "this kernel has no netem qdisc (tc: ${err//$'\n'/ }): --netem-delay $NETEM_MS ignored, the links keep the veth's own delay"
    return 1
  fi
}

topology_up() {
  local ns
  for ns in "${NAMESPACES[@]}"; do
    if ns_exists "$ns"; then
      die "namespace $ns already exists (a topology with --prefix $PREFIX is up): run '$SELF --prefix $PREFIX down' or choose another --prefix"
    fi
  done
  check_support
  local step
  for step in \
    "netns add $NS_NUM" "netns add $NS_SITE1" "netns add $NS_SITE2" \
    "-n $NS_NUM link add $IF_NUM1 type veth peer name $IF_SITE netns $NS_SITE1" \
    "-n $NS_NUM link add $IF_NUM2 type veth peer name $IF_SITE netns $NS_SITE2" \
    "-n $NS_NUM addr add $ADDR_NUM1/30 dev $IF_NUM1" \
    "-n $NS_NUM addr add $ADDR_NUM2/30 dev $IF_NUM2" \
    "-n $NS_SITE1 addr add $ADDR_SITE1/30 dev $IF_SITE" \
    "-n $NS_SITE2 addr add $ADDR_SITE2/30 dev $IF_SITE" \
    "-n $NS_NUM link set lo up" "-n $NS_SITE1 link set lo up" "-n $NS_SITE2 link set lo up" \
    "-n $NS_NUM link set $IF_NUM1 up" "-n $NS_NUM link set $IF_NUM2 up" \
    "-n $NS_SITE1 link set $IF_SITE up" "-n $NS_SITE2 link set $IF_SITE up"; do
    local err
    # shellcheck disable=SC2086  # each step is a list of words without spaces inside
    if ! err=$(ip $step 2>&1); then
      topology_down
      die "ip $step: ${err//$'\n'/ }"
    fi
  done
  if [[ -n $NETEM_MS ]]; then
    if add_netem "$NS_NUM" "$IF_NUM1" && add_netem "$NS_NUM" "$IF_NUM2" &&
      add_netem "$NS_SITE1" "$IF_SITE" && add_netem "$NS_SITE2" "$IF_SITE"; then
      note "netem: ${NETEM_MS} ms on each direction of both links"
    fi
  fi
  note "up: $NS_NUM ($ADDR_NUM1, $ADDR_NUM2) — $NS_SITE1 ($ADDR_SITE1), $NS_SITE2 ($ADDR_SITE2)"
}

# ---- run ----------------------------------------------------------------------------------------
SITE1_PID="" SITE2_PID="" NUM_PID="" SCRATCH="" RUNNING=0

cleanup() {
  local rc=$?
  trap '' INT TERM
  if ((RUNNING)); then
    local pid
    for pid in $NUM_PID $SITE1_PID $SITE2_PID; do
      kill -TERM "$pid" 2>/dev/null || true
    done
    topology_down # stops what is left in the namespaces, then deletes them
    [[ -z $SCRATCH ]] || rm -rf "$SCRATCH"
    note "down: $NS_NUM, $NS_SITE1, $NS_SITE2 removed"
  fi
  exit "$rc"
}

# Waits until a site's stdout says "listening on" (0), or its process ended (its exit code), 10 s max.
wait_listening() {
  local pid=$1 file=$2 name=$3 i rc
  for ((i = 0; i < 200; i++)); do
    grep -q '^listening on ' "$file" 2>/dev/null && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      rc=0
      wait "$pid" || rc=$?
      note "site $name ended before it listened (exit code $rc); see $OUT/site_$name.log"
      return $((rc == 0 ? 1 : rc))
    fi
    sleep 0.05
  done
  note "site $name is not listening after 10 s"
  return 1
}

# A site's exit code (in SITE_RC) once the numerical node is done: it stops with the node's stop
# message; after 10 s it is told to stop (SIGTERM). Not in a subshell: wait needs the parent.
SITE_RC=0
wait_site() {
  local pid=$1 i
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -TERM "$pid" 2>/dev/null || true
  SITE_RC=0
  wait "$pid" || SITE_RC=$?
}

run_topology() {
  [[ -n $CONFIG ]] || bad_usage "run needs CONFIG"
  check_support
  [[ -f $CONFIG ]] || die "no config file $CONFIG"
  CONFIG=$(cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")
  [[ -x $BIN/rths-numerical && -x $BIN/rths-physical ]] ||
    die "no rths-numerical/rths-physical in $BIN (build first: cmake --build build, or give --bin DIR)"
  BIN=$(cd "$BIN" && pwd)
  [[ -n $OUT ]] || OUT="$REPO/runs/multisite-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$OUT" || die "cannot create $OUT"
  OUT=$(cd "$OUT" && pwd)

  # Both ends agree on every override, including the addresses of another subnet.
  local sets=("${SITE_SETS[@]+"${SITE_SETS[@]}"}")
  local forward=("${FORWARD[@]+"${FORWARD[@]}"}")
  if [[ $SUBNET != "$DEFAULT_SUBNET" ]]; then
    local addr=(--set "site[$SITE1_NAME].address=$ADDR_SITE1:$SITE1_PORT"
      --set "site[$SITE2_NAME].address=$ADDR_SITE2:$SITE2_PORT")
    sets+=("${addr[@]}")
    forward+=("${addr[@]}")
  fi

  for ns in "${NAMESPACES[@]}"; do
    if ns_exists "$ns"; then
      die "namespace $ns already exists (a topology with --prefix $PREFIX is up): choose another --prefix, or '$SELF --prefix $PREFIX down'"
    fi
  done
  RUNNING=1
  trap cleanup EXIT
  trap 'note "interrupted"; exit 130' INT
  trap 'note "terminated"; exit 143' TERM
  topology_up
  SCRATCH=$(mktemp -d)

  ip netns exec "$NS_SITE1" "$BIN/rths-physical" serve "$CONFIG" --site "$SITE1_NAME" \
    --listen "$ADDR_SITE1:$SITE1_PORT" --out "$OUT" --wait 60 --quiet "${sets[@]+"${sets[@]}"}" \
    >"$SCRATCH/site1.stdout" </dev/null &
  SITE1_PID=$!
  ip netns exec "$NS_SITE2" "$BIN/rths-physical" serve "$CONFIG" --site "$SITE2_NAME" \
    --listen "$ADDR_SITE2:$SITE2_PORT" --out "$OUT" --wait 60 --quiet "${sets[@]+"${sets[@]}"}" \
    >"$SCRATCH/site2.stdout" </dev/null &
  SITE2_PID=$!
  local rc=0
  wait_listening "$SITE1_PID" "$SCRATCH/site1.stdout" "$SITE1_NAME" || rc=$?
  ((rc != 0)) || wait_listening "$SITE2_PID" "$SCRATCH/site2.stdout" "$SITE2_NAME" || rc=$?
  ((rc == 0)) || exit "$rc"
  note "sites listening: $SITE1_NAME at $ADDR_SITE1:$SITE1_PORT, $SITE2_NAME at $ADDR_SITE2:$SITE2_PORT; numerical node at $ADDR_NUM1/$ADDR_NUM2"

  ip netns exec "$NS_NUM" "$BIN/rths-numerical" run "$CONFIG" --realtime --out "$OUT" --quiet \
    "${forward[@]+"${forward[@]}"}" </dev/null &
  NUM_PID=$!
  local num_rc=0
  wait "$NUM_PID" || num_rc=$?
  NUM_PID=""
  local site1_rc site2_rc
  wait_site "$SITE1_PID"
  site1_rc=$SITE_RC
  SITE1_PID=""
  wait_site "$SITE2_PID"
  site2_rc=$SITE_RC
  SITE2_PID=""
  note "exit codes: numerical $num_rc, $SITE1_NAME $site1_rc, $SITE2_NAME $site2_rc; output: $OUT"
  rc=$num_rc
  if ((rc == 0)); then
    ((site1_rc == 0)) || rc=$site1_rc
    ((rc != 0 || site2_rc == 0)) || rc=$site2_rc
  fi
  exit "$rc"
}

case "$COMMAND" in
  up)
    [[ -z $OUT ]] || bad_usage "--out belongs to run"
    topology_up
    ;;
  down)
    command -v ip >/dev/null 2>&1 || exit 0
    topology_down
    ;;
  run) run_topology ;;
esac
