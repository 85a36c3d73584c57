#!/usr/bin/env bash
# An rths topology on one machine: a numerical host, one host per physical site and optionally a
# relay host (rths-relay, the delay injector) between them, as network namespaces joined by veth
# pairs, and a runner that puts the nodes on them. See --help.
set -euo pipefail

readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
REPO=$(cd "$(dirname "$0")/.." && pwd)
readonly REPO
readonly MAX_SITES=8

usage() {
  cat <<'EOF'
netns-topology.sh — numerical, relay and physical-site hosts as network namespaces

Usage:
  deploy/netns-topology.sh [OPTIONS] up
  deploy/netns-topology.sh [OPTIONS] down
  deploy/netns-topology.sh [OPTIONS] run CONFIG [ARGS FOR rths-numerical...]
  deploy/netns-topology.sh --help

Topology (PREFIX = --prefix, S = --subnet, site i = the i-th --site, port P_i = 47000 + i):
  direct (default): one veth pair from the numerical host to each site host
    PREFIX-num  S.i.1/30 ── veth ── S.i.2/30  PREFIX-site<i>   (site listens on S.i.2:P_i)
  --relay: a relay host takes the numerical host's place on every site's link, and the numerical
  host reaches the relay over a link of its own; one rths-relay per site runs there
    PREFIX-num  S.(10+i).1/30 ── veth ── S.(10+i).2/30  PREFIX-relay  S.i.1/30 ── veth ── S.i.2/30  PREFIX-site<i>
                        (rths-relay --listen S.(10+i).2:P_i --to S.i.2:P_i for site i)
  --target: behind each site host a target host, the laboratory's real-time controller, emulated
  by rths-target on the site's UDP bridge (driver { udp_bridge { } } of CONFIG)
    PREFIX-site<i>  S.(20+i).1/30 ── veth ── S.(20+i).2/30  PREFIX-target<i>
                        (rths-target --listen S.(20+i).2:(47100+i), the bridge's target address)
  The site hosts keep their addresses in both. Every address lives inside the namespaces; the host's
  own network is never touched. The relay imposes site[NAME].link of CONFIG (with the run's --set
  overrides): delay, jitter, loss, duplication, reordering, in real time, on a kernel without netem.

Commands:
  up     Create the namespaces and veth pairs, bring lo and the links up. Fails (exit 1) when one
         of the namespaces already exists.
  down   Stop whatever still runs in namespaces PREFIX-num, PREFIX-relay, PREFIX-site1..8,
         PREFIX-target1..8 and delete
         them (with their veths). No error when they are absent.
  run    Bring the topology up; with --target first start in each PREFIX-target<i>
           rths-target CONFIG --site NAME_i --realtime-priority 70 --listen S.(20+i).2:(47100+i) --out OUT
             [--watchdog-s S] SETS
         and give every end --set site[NAME_i].driver.udp_bridge.target=S.(20+i).2:(47100+i); start in
         each PREFIX-site<i>
           rths-physical serve CONFIG --site NAME_i --listen S.i.2:P_i --out OUT --wait 60 --quiet SETS
         with --relay, in PREFIX-relay for each site
           rths-relay CONFIG --site NAME_i --listen S.(10+i).2:P_i --to S.i.2:P_i --out OUT --quiet SETS
         wait until all listen, then run in PREFIX-num
           rths-numerical run CONFIG --realtime --out OUT ARGS...
              --set site[NAME_i].address=<S.i.2 or, with --relay, S.(10+i).2>:P_i   (every site)
         whose report (peaks, J_peak, round trip per site) ends the run with every process's exit
         code; wait for the others (relays end 2 s after the last datagram) and always tear the
         topology down again (also on failure, Ctrl-C or SIGTERM; processes still running are stopped).
         SETS = every --set PATH=VALUE of ARGS, so all ends agree (and the relay imposes the link the
         overrides say). Each site gets a fresh pre-shared key for the run (rths-numerical keygen,
         removed with the topology) unless ARGS name its key_file. Exit code: the numerical node's, or when that is 0 the first nonzero code
         of a site, then of a relay. Examples:
           deploy/netns-topology.sh run examples/multisite/case3_two_sites.textproto --set duration_s=10
           deploy/netns-topology.sh --site spring --relay run examples/seed002/spring.textproto \
             --set site[spring].channel[0].prediction.spring.stiffness_n_per_m=72584.72 --set duration_s=20

Options (anywhere on the line):
  --site NAME         A REMOTE site of CONFIG to give a host (repeatable, order = i; at most 8).
                      Default: purdue and uconn, the sites of examples/multisite/case3_two_sites.textproto.
                      A single-site config names its one site: --site spring.
  --relay             Put the relay host between the numerical host and the sites (above).
  --target            Put a target host (rths-target) behind every site (above); the sites of CONFIG
                      must have a UDP bridge driver. The targets are stopped (SIGTERM) after the
                      sites end; their summary lines and target_NAME.csv are in the run folder.
  --target-watchdog-s S  (with --target) Each target's watchdog, as rths-target --watchdog-s (default
                      there 50 ms, twice the longest stall of a site measured on a loaded 2-core VM:
                      docs/performance.md). A site host stalled longer than it trips the target.
  --prefix NAME       Namespace name prefix (default rths). Give parallel runs different prefixes.
  --subnet A.B        First two octets of the addresses (default 10.77).
  --bin DIR           Folder holding rths-numerical, rths-physical, rths-relay and rths-target (default: build/bin
                      of the repo).
  --out DIR           (run) Run folder for every node's output (default runs/netns-<date>-<time>):
                      numerical.csv, summary.json, site_NAME.*, relay_NAME.json/.log.
  --netem-delay MS    Add MS milliseconds of delay to each direction of every link (tc netem). Where
                      the kernel has no netem qdisc this is reported and ignored: use --relay.
  -h, --help          This text.

Exit codes: 0 success; 1 failure; 2 bad command line; 77 network namespaces cannot be made here
(not root, no `ip netns`, or "the kernel forbids" namespaces or veth pairs): one line on stderr says
why. For run, otherwise the
node's exit code (see rths-numerical --help / rths-physical --help / rths-relay --help).
EOF
}


# ---- command line ------------------------------------------------------------------------------
PREFIX=rths
SUBNET=10.77
BIN="$REPO/build/bin"
OUT=""
NETEM_MS=""
RELAY=0
TARGET=0
TARGET_WATCHDOG_S=""
COMMAND=""
CONFIG=""
SITES=()
FORWARD=()   # to rths-numerical
SITE_SETS=() # the --set pairs of FORWARD, also to each rths-physical and rths-relay

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --relay)
      RELAY=1
      shift
      ;;
    --target)
      TARGET=1
      shift
      ;;
    --prefix | --subnet | --bin | --out | --netem-delay | --site | --target-watchdog-s)
      need_value "$@"
      case "$1" in
        --target-watchdog-s) TARGET_WATCHDOG_S=$2 ;;
        --prefix) PREFIX=$2 ;;
        --subnet) SUBNET=$2 ;;
        --bin) BIN=$2 ;;
        --out) OUT=$2 ;;
        --netem-delay) NETEM_MS=$2 ;;
        --site) SITES+=("$2") ;;
      esac
      shift 2
      ;;
    --prefix=* | --subnet=* | --bin=* | --out=* | --netem-delay=* | --site=* | --target-watchdog-s=*)
      value=${1#*=}
      case "$1" in
        --target-watchdog-s=*) TARGET_WATCHDOG_S=$value ;;
        --prefix=*) PREFIX=$value ;;
        --subnet=*) SUBNET=$value ;;
        --bin=*) BIN=$value ;;
        --out=*) OUT=$value ;;
        --netem-delay=*) NETEM_MS=$value ;;
        --site=*) SITES+=("$value") ;;
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
if [[ -n $TARGET_WATCHDOG_S ]]; then
  ((TARGET)) || bad_usage "--target-watchdog-s belongs with --target"
  # rths-target checks the value itself (range, longer than a step); this only keeps words apart.
  [[ $TARGET_WATCHDOG_S =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad_usage "--target-watchdog-s '$TARGET_WATCHDOG_S': expected seconds, like 0.02"
fi
((${#SITES[@]} > 0)) || SITES=(purdue uconn)
((${#SITES[@]} <= MAX_SITES)) || bad_usage "at most $MAX_SITES sites, found ${#SITES[@]}"
for ((i = 0; i < ${#SITES[@]}; i++)); do
  [[ ${SITES[i]} =~ ^[A-Za-z0-9_.-]+$ ]] || bad_usage "--site '${SITES[i]}': expected a site name (letters, digits, '_', '.', '-')"
  for ((j = 0; j < i; j++)); do
    [[ ${SITES[i]} != "${SITES[j]}" ]] || bad_usage "--site ${SITES[i]} given twice"
  done
done
readonly SITES RELAY TARGET

readonly NS_NUM="$PREFIX-num" NS_RELAY="$PREFIX-relay"
# Every namespace this prefix may use (down removes whichever exist) and the ones of this topology.
ALL_NAMESPACES=("$NS_NUM" "$NS_RELAY")
for ((i = 1; i <= MAX_SITES; i++)); do
  ALL_NAMESPACES+=("$PREFIX-site$i" "$PREFIX-target$i")
done
NAMESPACES=("$NS_NUM")
((RELAY == 0)) || NAMESPACES+=("$NS_RELAY")
for ((i = 1; i <= ${#SITES[@]}; i++)); do
  NAMESPACES+=("$PREFIX-site$i")
  ((TARGET == 0)) || NAMESPACES+=("$PREFIX-target$i")
done
readonly ALL_NAMESPACES NAMESPACES

# Site i (1-based): its namespace, address, port, and where the numerical node sends to reach it.
site_ns() { echo "$PREFIX-site$1"; }
site_addr() { echo "$SUBNET.$1.2"; }
site_port() { echo $((47000 + $1)); }
relay_addr() { echo "$SUBNET.$((10 + $1)).2"; }
num_target() { if ((RELAY)); then relay_addr "$1"; else site_addr "$1"; fi; }
target_ns() { echo "$PREFIX-target$1"; }
target_addr() { echo "$SUBNET.$((20 + $1)).2"; }
target_port() { echo $((47100 + $1)); }

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
    skip "the kernel forbids network namespaces here: ip netns add: ${err//$'\n'/ }"
  fi
  if ! err=$(ip -n "$probe" link add probe0 type veth peer name probe1 2>&1); then
    ip netns delete "$probe" 2>/dev/null || true
    skip "the kernel forbids veth pairs here: ip link add type veth: ${err//$'\n'/ }"
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
  for ns in "${ALL_NAMESPACES[@]}"; do
    if ns_exists "$ns"; then
      stop_namespace_processes "$ns"
      ip netns delete "$ns" 2>/dev/null || note "warning: could not delete namespace $ns"
    fi
  done
}

NETEM_OK=1
add_netem() {
  local ns=$1 dev=$2 err
  ((NETEM_OK)) || return 0
  if ! command -v tc >/dev/null 2>&1; then
    note "tc is not installed: no netem delay (--netem-delay $NETEM_MS ignored)"
    NETEM_OK=0
  elif ! err=$(ip netns exec "$ns" tc qdisc add dev "$dev" root netem delay "${NETEM_MS}ms" 2>&1); then
    note "this kernel has no netem qdisc (tc: ${err//$'\n'/ }): --netem-delay $NETEM_MS ignored, the links keep the veth's own delay (use --relay for delays)"
    NETEM_OK=0
  fi
}

# One veth pair between two namespaces, with a /30 address at each end, up; netem on both ends.
link_pair() {
  local ns_a=$1 if_a=$2 addr_a=$3 ns_b=$4 if_b=$5 addr_b=$6 step err
  for step in \
    "-n $ns_a link add $if_a type veth peer name $if_b netns $ns_b" \
    "-n $ns_a addr add $addr_a/30 dev $if_a" "-n $ns_b addr add $addr_b/30 dev $if_b" \
    "-n $ns_a link set $if_a up" "-n $ns_b link set $if_b up"; do
    # shellcheck disable=SC2086  # each step is a list of words without spaces inside
    if ! err=$(ip $step 2>&1); then
      topology_down
      die "ip $step: ${err//$'\n'/ }"
    fi
  done
  if [[ -n $NETEM_MS ]]; then
    add_netem "$ns_a" "$if_a"
    add_netem "$ns_b" "$if_b"
  fi
}

topology_up() {
  local ns err i
  for ns in "${NAMESPACES[@]}"; do
    if ns_exists "$ns"; then
      die "namespace $ns already exists (a topology with --prefix $PREFIX is up): run '$SELF --prefix $PREFIX down' or choose another --prefix"
    fi
  done
  check_support
  for ns in "${NAMESPACES[@]}"; do
    if ! err=$(ip netns add "$ns" 2>&1) || ! err=$(ip -n "$ns" link set lo up 2>&1); then
      topology_down
      die "ip netns add $ns: ${err//$'\n'/ }"
    fi
  done
  local summary=""
  for ((i = 1; i <= ${#SITES[@]}; i++)); do
    if ((RELAY)); then
      link_pair "$NS_NUM" "to-relay$i" "$SUBNET.$((10 + i)).1" "$NS_RELAY" "to-num$i" "$(relay_addr "$i")"
      link_pair "$NS_RELAY" "to-site$i" "$SUBNET.$i.1" "$(site_ns "$i")" to-relay "$(site_addr "$i")"
      summary+=" $NS_NUM ($SUBNET.$((10 + i)).1) — $NS_RELAY ($(relay_addr "$i") | $SUBNET.$i.1) — $(site_ns "$i") ($(site_addr "$i"), ${SITES[i - 1]});"
    else
      link_pair "$NS_NUM" "to-site$i" "$SUBNET.$i.1" "$(site_ns "$i")" to-num "$(site_addr "$i")"
      summary+=" $NS_NUM ($SUBNET.$i.1) — $(site_ns "$i") ($(site_addr "$i"), ${SITES[i - 1]});"
    fi
    if ((TARGET)); then
      link_pair "$(site_ns "$i")" to-target "$SUBNET.$((20 + i)).1" "$(target_ns "$i")" to-site "$(target_addr "$i")"
      summary+=" $(site_ns "$i") ($SUBNET.$((20 + i)).1) — $(target_ns "$i") ($(target_addr "$i"), target of ${SITES[i - 1]});"
    fi
  done
  if [[ -n $NETEM_MS ]] && ((NETEM_OK)); then
    note "netem: ${NETEM_MS} ms on each direction of every link"
  fi
  note "up:${summary%;}"
}

# ---- run ----------------------------------------------------------------------------------------
SITE_PIDS=() RELAY_PIDS=() TARGET_PIDS=() NUM_PID="" SCRATCH="" RUNNING=0

cleanup() {
  local rc=$?
  trap '' INT TERM
  if ((RUNNING)); then
    local pid
    for pid in $NUM_PID "${SITE_PIDS[@]}" "${RELAY_PIDS[@]}" "${TARGET_PIDS[@]}"; do
      kill -TERM "$pid" 2>/dev/null || true
    done
    topology_down # stops what is left in the namespaces, then deletes them
    [[ -z $SCRATCH ]] || rm -rf "$SCRATCH"
    note "down: ${NAMESPACES[*]} removed"
  fi
  exit "$rc"
}

# Waits until a process's stdout has a line starting with TEXT (0), or the process ended (its exit
# code), 10 s max.
wait_line() {
  local pid=$1 file=$2 text=$3 what=$4 log=$5 i rc
  for ((i = 0; i < 200; i++)); do
    grep -q "^$text" "$file" 2>/dev/null && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      rc=0
      wait "$pid" || rc=$?
      note "$what ended before it listened (exit code $rc); see $log"
      return $((rc == 0 ? 1 : rc))
    fi
    sleep 0.05
  done
  note "$what is not listening after 10 s"
  return 1
}

# A process's exit code (in END_RC) once the numerical node is done: sites stop with the node's stop
# message, relays 2 s after their last datagram; after 10 s it is told to stop (SIGTERM). Not in a
# subshell: wait needs the parent.
END_RC=0
wait_end() {
  local pid=$1 i
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -TERM "$pid" 2>/dev/null || true
  END_RC=0
  wait "$pid" || END_RC=$?
}

run_topology() {
  [[ -n $CONFIG ]] || bad_usage "run needs CONFIG"
  check_support
  [[ -f $CONFIG ]] || die "no config file $CONFIG"
  CONFIG=$(cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")
  local exe exes=(rths-numerical rths-physical)
  ((RELAY == 0)) || exes+=(rths-relay)
  ((TARGET == 0)) || exes+=(rths-target)
  for exe in "${exes[@]}"; do
    [[ -x $BIN/$exe ]] || die "no $exe in $BIN (build first: cmake --build build, or give --bin DIR)"
  done
  BIN=$(cd "$BIN" && pwd)
  [[ -n $OUT ]] || OUT="$REPO/runs/netns-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$OUT" || die "cannot create $OUT"
  OUT=$(cd "$OUT" && pwd)

  # All ends agree on every override; the numerical node also learns where each site is reached.
  local sets=("${SITE_SETS[@]+"${SITE_SETS[@]}"}")
  local forward=("${FORWARD[@]+"${FORWARD[@]}"}")
  local i
  for ((i = 1; i <= ${#SITES[@]}; i++)); do
    forward+=(--set "site[${SITES[i - 1]}].address=$(num_target "$i"):$(site_port "$i")")
    if ((TARGET)); then
      sets+=(--set "site[${SITES[i - 1]}].driver.udp_bridge.target=$(target_addr "$i"):$(target_port "$i")")
      forward+=(--set "site[${SITES[i - 1]}].driver.udp_bridge.target=$(target_addr "$i"):$(target_port "$i")")
    fi
  done

  local ns
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

  # Every site gets a fresh pre-shared key for this run, given to both ends first, so that a
  # --set site[NAME].key_file=... of the caller still wins.
  local name rc=0 keys=()
  for name in "${SITES[@]}"; do
    "$BIN/rths-numerical" keygen "$SCRATCH/$name.key" >/dev/null || die "cannot make a key for site $name"
    keys+=(--set "site[$name].key_file=$SCRATCH/$name.key")
  done
  sets=("${keys[@]}" "${sets[@]+"${sets[@]}"}")
  forward=("${keys[@]}" "${forward[@]}")
  if ((TARGET)); then
    local watchdog=()
    [[ -z $TARGET_WATCHDOG_S ]] || watchdog=(--watchdog-s "$TARGET_WATCHDOG_S")
    # The equipment is there before its site: a site refuses to start without an answer from it.
    for ((i = 1; i <= ${#SITES[@]}; i++)); do
      name=${SITES[i - 1]}
      # At a real-time priority below the nodes' 80, as a lab's controller has a machine to itself.
      ip netns exec "$(target_ns "$i")" "$BIN/rths-target" "$CONFIG" --site "$name" --realtime-priority 70 \
        --listen "$(target_addr "$i"):$(target_port "$i")" --out "$OUT" "${watchdog[@]+"${watchdog[@]}"}" \
        "${sets[@]+"${sets[@]}"}" \
        >"$SCRATCH/target$i.stdout" </dev/null &
      TARGET_PIDS+=($!)
    done
    for ((i = 1; i <= ${#SITES[@]} && rc == 0; i++)); do
      wait_line "${TARGET_PIDS[i - 1]}" "$SCRATCH/target$i.stdout" "listening on " "target of ${SITES[i - 1]}" \
        "$OUT/target_${SITES[i - 1]}.log" || rc=$?
    done
    ((rc == 0)) || exit "$rc"
  fi
  for ((i = 1; i <= ${#SITES[@]}; i++)); do
    name=${SITES[i - 1]}
    ip netns exec "$(site_ns "$i")" "$BIN/rths-physical" serve "$CONFIG" --site "$name" \
      --listen "$(site_addr "$i"):$(site_port "$i")" --out "$OUT" --wait 60 --quiet "${sets[@]+"${sets[@]}"}" \
      >"$SCRATCH/site$i.stdout" </dev/null &
    SITE_PIDS+=($!)
  done
  for ((i = 1; i <= ${#SITES[@]} && rc == 0; i++)); do
    wait_line "${SITE_PIDS[i - 1]}" "$SCRATCH/site$i.stdout" "listening on " "site ${SITES[i - 1]}" \
      "$OUT/site_${SITES[i - 1]}.log" || rc=$?
  done
  ((rc == 0)) || exit "$rc"
  if ((RELAY)); then
    for ((i = 1; i <= ${#SITES[@]}; i++)); do
      name=${SITES[i - 1]}
      ip netns exec "$NS_RELAY" "$BIN/rths-relay" "$CONFIG" --site "$name" \
        --listen "$(relay_addr "$i"):$(site_port "$i")" --to "$(site_addr "$i"):$(site_port "$i")" \
        --out "$OUT" --quiet "${sets[@]+"${sets[@]}"}" >"$SCRATCH/relay$i.stdout" </dev/null &
      RELAY_PIDS+=($!)
    done
    for ((i = 1; i <= ${#SITES[@]} && rc == 0; i++)); do
      wait_line "${RELAY_PIDS[i - 1]}" "$SCRATCH/relay$i.stdout" "relaying on " "relay of ${SITES[i - 1]}" \
        "$OUT/relay_${SITES[i - 1]}.log" || rc=$?
    done
    ((rc == 0)) || exit "$rc"
  fi
  local where=""
  for ((i = 1; i <= ${#SITES[@]}; i++)); do
    where+=" ${SITES[i - 1]} at $(site_addr "$i"):$(site_port "$i")"
    ((RELAY == 0)) || where+=" via relay $(relay_addr "$i"):$(site_port "$i")"
    where+=","
  done
  note "listening:${where%,}"

  # Not --quiet: its report (peaks, J_peak against the reference, round trip) is the run's result.
  ip netns exec "$NS_NUM" "$BIN/rths-numerical" run "$CONFIG" --realtime --out "$OUT" \
    "${forward[@]}" </dev/null &
  NUM_PID=$!
  local num_rc=0
  wait "$NUM_PID" || num_rc=$?
  NUM_PID=""
  local codes="numerical $num_rc" first_other=0
  for ((i = 1; i <= ${#SITES[@]}; i++)); do
    wait_end "${SITE_PIDS[i - 1]}"
    codes+=", ${SITES[i - 1]} $END_RC"
    ((first_other != 0)) || first_other=$END_RC
  done
  SITE_PIDS=()
  if ((RELAY)); then
    for ((i = 1; i <= ${#SITES[@]}; i++)); do
      wait_end "${RELAY_PIDS[i - 1]}"
      codes+=", relay of ${SITES[i - 1]} $END_RC"
      ((first_other != 0)) || first_other=$END_RC
    done
    RELAY_PIDS=()
  fi
  if ((TARGET)); then
    # A target runs until told: the sites are done with it.
    for ((i = 1; i <= ${#SITES[@]}; i++)); do
      kill -TERM "${TARGET_PIDS[i - 1]}" 2>/dev/null || true
      END_RC=0
      wait "${TARGET_PIDS[i - 1]}" || END_RC=$?
      codes+=", target of ${SITES[i - 1]} $END_RC"
      ((first_other != 0)) || first_other=$END_RC
      cat "$SCRATCH/target$i.stdout" >&2
    done
    TARGET_PIDS=()
  fi
  note "exit codes: $codes; output: $OUT"
  rc=$num_rc
  ((rc != 0)) || rc=$first_other
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
