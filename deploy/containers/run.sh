#!/usr/bin/env bash
# One command for the rths container topology with podman: base image, rths image, compose run,
# output, teardown. See --help.
set -euo pipefail

readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/messages.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
readonly HERE REPO
readonly COMPOSE_FILE="$HERE/compose.yaml"
readonly SOURCE_HASH_LABEL=org.rths.source-hash
readonly BASE_LABEL=org.rths.base-image

usage() {
  cat <<'EOF'
run.sh — run an rths experiment on the container topology of compose.yaml with podman

Usage:
  deploy/containers/run.sh [OPTIONS] [CONFIG] [--set PATH=VALUE]...
  deploy/containers/run.sh --prepare [OPTIONS]
  deploy/containers/run.sh --prepare-base [--from-build DIR] [--cache DIR] [--base IMAGE]
  deploy/containers/run.sh --help

Runs CONFIG (default examples/seed002/spring.textproto) in real time on the topology of
deploy/containers/compose.yaml: a numerical node, two physical sites and an rths-relay in front of
each site, on two private podman networks. In order:
  1. makes the base image with make-base-image.sh when it is missing (debootstrap, a few minutes);
  2. builds the rths image (podman build of deploy/containers/Containerfile with that base) when it
     is missing or out of date: the image carries a hash of the sources it was built from (label
     org.rths.source-hash) and is rebuilt only when they changed (--rebuild forces it); with
     --from-build it copies the executables of a build folder instead (Containerfile.prebuilt);
  3. podman-compose up: sites, relays, then the numerical node;
  4. waits for the numerical node, then for the sites and relays to end by themselves;
  5. collects each container's output into OUT/containers/<service>.log (the nodes write their own
     files to OUT through the bind mount) and prints the numerical node's summary;
  6. always tears the topology down (containers and networks), also on failure, Ctrl-C or SIGTERM.

CONFIG is a file under the repository's examples/ (the image holds a copy of that folder; rebuild
after editing it, which step 2 does by itself). Its REMOTE sites (at most two) go behind relay1/site1
and relay2/site2 in their order in the file; --site overrides that. Every --set goes to every node,
so both ends of each link agree; the link impairments (site[NAME].link) are applied by the relays.

Options:
  --set PATH=VALUE   Override a config field on every node (as rths-numerical --set). Repeatable.
  --site NAME        A REMOTE site of CONFIG for the next free slot (1, then 2); default: detected.
  --out DIR          Run folder on the host (created; default runs/containers-<date>-<time>).
  --timeout S        Stop the run (SIGTERM, safe stop) when the numerical node is not done after S
                     seconds (default 0: no limit).
  --wait S           How long the sites wait for the numerical node's hello (default 60).
  --prepare          Only make the base image and the rths image when missing or out of date; run
                     nothing. The first build takes minutes: do it before a timed test.
  --prepare-base     Only make the base image when missing (with --from-build, the runtime base; DIR
                     need not be built yet): minutes of download and unpacking and little CPU, which
                     deploy/test.sh spends while the build compiles.
  --rebuild          Build the rths image even when it is up to date.
  --from-build DIR   Make the rths image from the executables of the build folder DIR (brought up to
                     date with the sources first: cmake --build DIR) with Containerfile.prebuilt, in
                     seconds instead of compiling in the image for minutes. Its base is then
                     localhost/rths-bookworm-runtime:latest, a debootstrap image with the executables'
                     runtime libraries (made when missing). Needs a Debian bookworm host, like the base.
  --cache DIR        Keep the base image's debootstrap root file system as a tarball in DIR and make
                     the base from it while it is there (make-base-image.sh --cache): no debootstrap
                     and no mirror after podman's storage was emptied. CI passes .cache/containers.
  --no-build         Never build: run the rths image as it is (one warning line when it is out of
                     date with the sources; exit 77 when it or its base was never made). For tests,
                     which must not spend an image build's minutes.
  --rt-budget-us US  Real-time budget per container, µs of CPU time per second (default 180000).
                     Only where the kernel has real-time group scheduling on cgroup v1 (like this
                     one): a container's cgroup then has no budget and SCHED_FIFO is refused even with
                     CAP_SYS_NICE. run.sh makes a cgroup rths-rt-<pid> with 5 x US, runs the
                     containers under it with US each, and removes it at the end. 0: no budget (the
                     nodes warn and run with normal scheduling).
  --jobs N           Compiler jobs inside the image build (default: one per CPU).
  --image NAME       The rths image (default localhost/rths:latest).
  --base NAME        Its base image (default localhost/rths-bookworm:latest, made by
                     make-base-image.sh when missing; any bookworm image works, e.g. debian:bookworm
                     where a registry is reachable). With --no-build: the base the image was built on.
  -h, --help         This text.

Environment: CONTAINERS_CONF (default deploy/containers/containers.conf); RTHS_RELAY_ARGS
(compose.yaml).

Exit codes: the numerical node's (0 completed; see rths-numerical --help); 1 failure of this script
(image build, compose); 2 bad command line; 77 podman or podman-compose missing, or containers cannot
run here (one line on stderr says why; it says "the kernel forbids" when the kernel refused what a
container needs, as opposed to something missing that can be installed or prepared).
EOF
}


# ---- command line ------------------------------------------------------------------------------
CONFIG=""
SETS=()
SITES=()
OUT=""
TIMEOUT_S=0
WAIT_S=60
MODE=run   # run | prepare
BUILD=auto # auto | always | never
JOBS=""
RT_BUDGET_US=180000
IMAGE=localhost/rths:latest
BASE=localhost/rths-bookworm:latest
BASE_GIVEN=0
FROM_BUILD=""
CACHE_DIR=""
readonly DEFAULT_BASE=$BASE
# The base of --from-build: the minimal system with the shared libraries the executables link
# against beyond libc and libstdc++ (the same packages as the Containerfile's runtime stage).
readonly RUNTIME_BASE=localhost/rths-bookworm-runtime:latest
readonly RUNTIME_PACKAGES=libprotobuf32,libspdlog1.10,libfmt9,libsodium23
readonly EXECUTABLES=(rths-numerical rths-physical rths-relay rths-study)

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --prepare) MODE=prepare && shift ;;
    --prepare-base) MODE=prepare-base && shift ;;
    --rebuild) BUILD=always && shift ;;
    --no-build) BUILD=never && shift ;;
    --set | --site | --out | --timeout | --wait | --jobs | --image | --base | --rt-budget-us | --from-build | --cache)
      need_value "$@"
      case "$1" in
        --rt-budget-us) RT_BUDGET_US=$2 ;;
        --set) SETS+=("$2") ;;
        --site) SITES+=("$2") ;;
        --out) OUT=$2 ;;
        --timeout) TIMEOUT_S=$2 ;;
        --wait) WAIT_S=$2 ;;
        --jobs) JOBS=$2 ;;
        --image) IMAGE=$2 ;;
        --base) BASE=$2 && BASE_GIVEN=1 ;;
        --from-build) FROM_BUILD=$2 ;;
        --cache) CACHE_DIR=$2 ;;
      esac
      shift 2
      ;;
    --set=* | --site=* | --out=* | --timeout=* | --wait=* | --jobs=* | --image=* | --base=* | --rt-budget-us=* | \
      --from-build=* | --cache=*)
      value=${1#*=}
      case "$1" in
        --rt-budget-us=*) RT_BUDGET_US=$value ;;
        --set=*) SETS+=("$value") ;;
        --site=*) SITES+=("$value") ;;
        --out=*) OUT=$value ;;
        --timeout=*) TIMEOUT_S=$value ;;
        --wait=*) WAIT_S=$value ;;
        --jobs=*) JOBS=$value ;;
        --image=*) IMAGE=$value ;;
        --base=*) BASE=$value && BASE_GIVEN=1 ;;
        --from-build=*) FROM_BUILD=$value ;;
        --cache=*) CACHE_DIR=$value ;;
      esac
      shift
      ;;
    -*) bad_usage "unknown option '$1'" ;;
    *)
      [[ -z $CONFIG ]] || bad_usage "one CONFIG only (got '$CONFIG' and '$1')"
      CONFIG=$1
      shift
      ;;
  esac
done
[[ $TIMEOUT_S =~ ^[0-9]+$ ]] || bad_usage "--timeout '$TIMEOUT_S': expected whole seconds"
[[ $WAIT_S =~ ^[0-9]+$ && $WAIT_S -gt 0 ]] || bad_usage "--wait '$WAIT_S': expected whole seconds > 0"
[[ -z $JOBS || $JOBS =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs '$JOBS': expected a positive number"
[[ $RT_BUDGET_US =~ ^[0-9]+$ && $RT_BUDGET_US -le 190000 ]] ||
  bad_usage "--rt-budget-us '$RT_BUDGET_US': expected 0..190000 (five containers share at most 95 % of a second)"
((${#SITES[@]} <= 2)) || bad_usage "the topology has two sites; got --site ${SITES[*]}"
for s in "${SETS[@]+"${SETS[@]}"}"; do
  [[ $s == *=* ]] || bad_usage "--set '$s': expected PATH=VALUE"
  [[ $s != *$'\n'* ]] || bad_usage "--set values cannot hold a newline"
done
if [[ $MODE == prepare* ]]; then
  [[ -z $CONFIG && ${#SETS[@]} -eq 0 && ${#SITES[@]} -eq 0 && -z $OUT ]] ||
    bad_usage "--$MODE builds images only: no CONFIG, --set, --site or --out"
  [[ $BUILD != never ]] || bad_usage "--$MODE and --no-build contradict each other"
fi
if [[ -n $FROM_BUILD && $MODE == prepare-base ]]; then
  # The base of an image from a build: the build itself may still be compiling.
  ((BASE_GIVEN)) || BASE=$RUNTIME_BASE
elif [[ -n $FROM_BUILD ]]; then
  [[ $BUILD != never ]] || bad_usage "--from-build and --no-build contradict each other"
  [[ -d $FROM_BUILD ]] || bad_usage "--from-build '$FROM_BUILD': no such build folder"
  FROM_BUILD=$(cd "$FROM_BUILD" && pwd)
  [[ -f $FROM_BUILD/CMakeCache.txt ]] || bad_usage "--from-build '$FROM_BUILD': not a configured build folder (deploy/setup.sh makes one)"
  # shellcheck disable=SC1091  # the host's, not the repository's
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  [[ $codename == bookworm ]] ||
    bad_usage "--from-build copies this host's executables into a Debian bookworm image; this host is '${codename:-not Debian}' (build the Containerfile instead: leave out --from-build)"
  ((BASE_GIVEN)) || BASE=$RUNTIME_BASE
fi

export CONTAINERS_CONF=${CONTAINERS_CONF:-$HERE/containers.conf}

# ---- the config and its sites ------------------------------------------------------------------
# The REMOTE sites of a config in file order: names of `site { ... }` blocks at the top level whose
# placement is not LOCAL (REMOTE is the default). Enough for the protobuf text format of examples/.
remote_sites() {
  awk '
    { sub(/#.*/, "") }
    {
      line = $0
      if (depth == 0 && line ~ /^[ \t]*site[ \t]*:?[ \t]*\{/) { in_site = 1; name = ""; local_site = 0 }
      if (in_site && depth == 1) {
        if (match(line, /name[ \t]*:[ \t]*"[^"]*"/)) { n = substr(line, RSTART, RLENGTH); sub(/^[^"]*"/, "", n); sub(/"$/, "", n); name = n }
        if (line ~ /placement[ \t]*:[ \t]*LOCAL/) local_site = 1
      }
      opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
      depth += opens - closes
      if (in_site && depth == 0 && (opens || closes)) { if (!local_site && name != "") print name; in_site = 0 }
    }' "$1"
}

# ---- tools and images ----------------------------------------------------------------------------
check_tools() {
  command -v podman >/dev/null 2>&1 || skip "podman is not installed (Debian: apt-get install podman podman-compose)"
  command -v podman-compose >/dev/null 2>&1 || skip "podman-compose is not installed (Debian: apt-get install podman-compose)"
  local err
  if ! err=$(podman info 2>&1 >/dev/null); then
    skip "$(kernel_or "podman cannot run here" "$err")"
  fi
}

# "the kernel forbids containers here: ERROR" when the last line of ERROR ($2) is the kernel refusing
# a system call (namespaces, mounts, cgroups, seccomp), else "$1: ERROR". Tests and CI tell a host
# that cannot have containers from one where something is missing by this.
kernel_or() {
  local line
  line=$(printf '%s' "$2" | grep -v '^ *$' | tail -n 1)
  if [[ $line =~ [Oo]peration\ not\ permitted|[Pp]ermission\ denied|[Nn]ot\ supported|[Ff]unction\ not\ implemented|[Ii]nvalid\ argument ]] &&
    [[ $line =~ unshare|namespace|mount|cgroup|clone|seccomp|pivot_root|sethostname|setns|overlay ]]; then
    printf 'the kernel forbids containers here: %s' "$line"
  else
    printf '%s: %s' "$1" "$line"
  fi
}

image_exists() {
  podman image exists "$1" 2>/dev/null
}

# Containers can really start here (runtime, cgroups, ulimits of containers.conf): a throwaway one.
probe_containers() {
  local err
  if ! err=$(podman run --rm --pull=never --network none --cap-add SYS_NICE --cap-add IPC_LOCK \
    --ulimit "rtprio=$RTHS_ULIMIT_RTPRIO" --ulimit "memlock=$RTHS_ULIMIT_MEMLOCK" \
    --ulimit "nofile=$RTHS_ULIMIT_NOFILE" --ulimit "nproc=$RTHS_ULIMIT_NPROC" "$BASE" true 2>&1); then
    skip "$(kernel_or "containers cannot run here" "$err")"
  fi
}

ensure_base() {
  image_exists "$BASE" && return 0
  [[ $BUILD != never ]] || skip "no base image $BASE: run deploy/containers/$SELF --prepare first"
  if [[ $BASE == "$DEFAULT_BASE" || $BASE == "$RUNTIME_BASE" ]]; then
    local args=(--image "$BASE")
    [[ $BASE != "$RUNTIME_BASE" ]] || args+=(--include "$RUNTIME_PACKAGES")
    [[ -z $CACHE_DIR ]] || args+=(--cache "$CACHE_DIR")
    if [[ -z $CACHE_DIR ]] || ! compgen -G "$CACHE_DIR/rths-bookworm-*.tar" >/dev/null; then
      command -v debootstrap >/dev/null 2>&1 ||
        skip "the base image $BASE is missing and debootstrap is not installed to make it (apt-get install debootstrap, or --base debian:bookworm where a registry is reachable)"
    fi
    "$HERE/make-base-image.sh" "${args[@]}" || die "could not make the base image $BASE"
  else
    note "pulling the base image $BASE"
    podman pull "$BASE" >/dev/null || die "could not pull the base image $BASE"
  fi
}

# A hash of everything the image is built from: the files the Containerfile copies (through
# Containerfile.dockerignore), the Containerfile itself and the base image's id.
source_hash() {
  (
    cd "$REPO"
    {
      find CMakeLists.txt LICENSE proto common smith_predictor node_physical node_numerical examples \
        deploy/CMakeLists.txt deploy/package.cmake deploy/*.cpp deploy/containers/Containerfile \
        deploy/containers/Containerfile.prebuilt deploy/containers/rths-node.sh \
        deploy/containers/Containerfile.dockerignore -type f -print0 |
        LC_ALL=C sort -z | xargs -0 sha256sum
      podman image inspect --format '{{.Id}}' "$BASE" 2>/dev/null || echo "no base image $BASE"
    } | sha256sum | cut -c1-16
  )
}

# The rths image from the executables of $FROM_BUILD (Containerfile.prebuilt), brought up to date
# with the sources first, so that the image's source hash is as true as that of a compiled one.
# $1: a log file; the rest: podman build options (labels).
build_from_build() {
  local log=$1 context exe
  shift
  note "bringing the executables of $FROM_BUILD up to date (cmake --build)"
  local targets=()
  for exe in "${EXECUTABLES[@]}"; do targets+=(--target "$exe"); done
  if ! cmake --build "$FROM_BUILD" -j "${JOBS:-$(nproc)}" "${targets[@]}" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "cmake --build $FROM_BUILD failed (the last lines are above)"
  fi
  note "building $IMAGE from the executables of $FROM_BUILD on $BASE"
  context=$(mktemp -d)
  mkdir "$context/bin"
  for exe in "${EXECUTABLES[@]}"; do
    cp "$FROM_BUILD/bin/$exe" "$context/bin/" || { rm -rf "$context"; die "no $exe in $FROM_BUILD/bin"; }
  done
  cp -r "$REPO/examples" "$context/examples"
  cp "$HERE/rths-node.sh" "$context/rths-node.sh"
  # No network in the build: the base already holds every runtime library.
  if ! podman build --pull=never --network none -f "$HERE/Containerfile.prebuilt" --build-arg "BASE_IMAGE=$BASE" \
    "$@" -t "$IMAGE" "$context" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -rf "$context"
    die "podman build of Containerfile.prebuilt failed (the last lines are above)"
  fi
  rm -rf "$context"
}

ensure_image() {
  local want have=""
  want=$(source_hash)
  if image_exists "$IMAGE"; then
    have=$(podman image inspect --format "{{index .Labels \"$SOURCE_HASH_LABEL\"}}" "$IMAGE" 2>/dev/null || true)
    [[ -n $have && $have != "<no value>" ]] || have="none"
  fi
  case "$BUILD" in
    never)
      [[ -n $have ]] || skip "no image $IMAGE: run deploy/containers/$SELF --prepare first"
      [[ $have == "$want" ]] || note "warning: $IMAGE is out of date with the sources (built from $have, sources are $want); running it anyway (--no-build)"
      return 0
      ;;
    auto)
      if [[ $have == "$want" ]]; then
        note "$IMAGE is up to date (sources $want)"
        return 0
      fi
      ;;
  esac
  local log started
  log=$(mktemp)
  started=$SECONDS
  local labels=(--label "$SOURCE_HASH_LABEL=$want" --label "$BASE_LABEL=$BASE")
  if [[ -n $FROM_BUILD ]]; then
    build_from_build "$log" "${labels[@]}"
  else
    note "building $IMAGE from $BASE (sources $want; several minutes the first time)"
    local args=(build --pull=never -f "$HERE/Containerfile" --ignorefile "$HERE/Containerfile.dockerignore"
      --build-arg "BASE_IMAGE=$BASE" "${labels[@]}" -t "$IMAGE")
    [[ -z $JOBS ]] || args+=(--build-arg "JOBS=$JOBS")
    if ! podman "${args[@]}" "$REPO" >"$log" 2>&1; then
      tail -n 30 "$log" >&2
      rm -f "$log"
      die "podman build failed (the last lines are above)"
    fi
  fi
  rm -f "$log"
  note "built $IMAGE in $((SECONDS - started)) s"
  # The previous build's image, now untagged, would pile up with every source change.
  podman image prune -f --filter "label=$SOURCE_HASH_LABEL" >/dev/null 2>&1 || true
}

# ---- the experiment (checked before anything is made or started) ---------------------------------
if [[ $MODE == run ]]; then
  CONFIG=${CONFIG:-$REPO/examples/seed002/spring.textproto}
  [[ -f $CONFIG ]] || bad_usage "no config file '$CONFIG'"
  CONFIG=$(cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")
  [[ $CONFIG == "$REPO/examples/"* ]] ||
    bad_usage "CONFIG must be a file under $REPO/examples/ (the image holds that folder), not $CONFIG"
  IMAGE_CONFIG=${CONFIG#"$REPO"/}
  if ((${#SITES[@]} == 0)); then
    mapfile -t SITES < <(remote_sites "$CONFIG")
    ((${#SITES[@]} > 0)) || bad_usage "$CONFIG has no REMOTE site (name them with --site)"
    ((${#SITES[@]} <= 2)) || bad_usage "$CONFIG has ${#SITES[@]} REMOTE sites (${SITES[*]}); the topology has two"
  fi
  SITE1=${SITES[0]}
  SITE2=${SITES[1]:-none}
fi

check_tools

# --no-build runs the image as it is: its base is the one it was built on (the probe container and
# the source hash use it), unless --base names another.
if [[ $BUILD == never ]] && ((!BASE_GIVEN)) && image_exists "$IMAGE"; then
  built_on=$(podman image inspect --format "{{index .Labels \"$BASE_LABEL\"}}" "$IMAGE" 2>/dev/null || true)
  [[ -z $built_on || $built_on == "<no value>" ]] || BASE=$built_on
fi

# ---- resource limits of the containers ------------------------------------------------------------
# A limit as high as wanted, or the host's hard limit where this process cannot raise it (root
# without CAP_SYS_RESOURCE): runc fails to start a container whose limits it cannot set. compose.yaml
# takes them as RTHS_ULIMIT_*; the probe container below gets the same.
CAPPED=()
# Sets variable $1 to limit $2 (ulimit flag) at $3, or at the hard limit when that is lower and
# cannot be raised; -1 is unlimited.
set_limit() {
  local var=$1 flag=$2 want=$3 value
  # Soft and hard together (lowering the hard limit alone below the soft one is refused).
  if (ulimit "-$flag" "$want") 2>/dev/null; then
    value=$want
  else
    value=$(ulimit "-H$flag")
    CAPPED+=("$4 at $value")
  fi
  [[ $value != unlimited ]] || value=-1
  printf -v "$var" '%s' "$value"
}
set_limit RTHS_ULIMIT_RTPRIO r 99 rtprio
set_limit RTHS_ULIMIT_MEMLOCK l unlimited "memlock (KiB)"
set_limit RTHS_ULIMIT_NOFILE n 16384 nofile
set_limit RTHS_ULIMIT_NPROC u 32768 nproc
# The engines take memlock in bytes, not KiB as ulimit shows it.
[[ $RTHS_ULIMIT_MEMLOCK == -1 ]] || RTHS_ULIMIT_MEMLOCK=$((RTHS_ULIMIT_MEMLOCK * 1024))
if ((${#CAPPED[@]} > 0)); then
  capped=$(printf ', %s' "${CAPPED[@]}")
  note "this host's hard limits cap ${capped#, } (raising them needs CAP_SYS_RESOURCE): the containers get those"
fi
export RTHS_ULIMIT_RTPRIO RTHS_ULIMIT_MEMLOCK RTHS_ULIMIT_NOFILE RTHS_ULIMIT_NPROC

if [[ $MODE == prepare-base ]]; then
  ensure_base
  exit 0
fi
if [[ $MODE == prepare ]]; then
  ensure_base
  probe_containers
  ensure_image
  exit 0
fi

# ---- run -----------------------------------------------------------------------------------------
ensure_base
probe_containers
ensure_image

[[ -n $OUT ]] || OUT="$REPO/runs/containers-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT/containers" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)

# The --set values for rths-node, which splits RTHS_SETS like xargs: blanks, quotes and backslashes
# in a value are escaped.
rths_sets=""
for s in "${SETS[@]+"${SETS[@]}"}"; do
  rths_sets+="${rths_sets:+ }$(printf '%s' "$s" | sed -e 's/[[:space:]'\''"\\]/\\&/g')"
done

# ---- real-time budget -----------------------------------------------------------------------------
# With real-time group scheduling on cgroup v1 (cpu.rt_runtime_us exists), a new cgroup has no
# real-time budget: SCHED_FIFO is refused in a container even with CAP_SYS_NICE. The containers then
# run under a cgroup of this run's that has one (runc gives each its share, --cpu-rt-runtime).
# cgroup v2 hosts and kernels without RT group scheduling need none of this.
readonly CPU_CGROUP=/sys/fs/cgroup/cpu
readonly RT_CONTAINERS=5
RT_CGROUP=""
COMPOSE_RUN_ARGS=()

# Removes cgroup $1 in every hierarchy (podman made it in each, with a child per container and one
# for the conmon processes, which may take a moment to exit after their container is removed).
remove_rt_cgroup() {
  local c i
  for c in /sys/fs/cgroup/*/"$1"; do
    [[ -d $c ]] || continue
    for ((i = 0; i < 20; i++)); do
      rmdir "$c"/conmon "$c"/libpod-* 2>/dev/null || true
      rmdir "$c" 2>/dev/null && break
      sleep 0.1
    done
    [[ ! -d $c ]] || note "warning: could not remove the cgroup $c"
  done
}

setup_rt_budget() {
  ((RT_BUDGET_US > 0)) && [[ -f $CPU_CGROUP/cpu.rt_runtime_us && $(id -u) -eq 0 ]] || return 0
  # Those of runs that were killed before their teardown hold budget that nobody uses.
  local stale
  for stale in "$CPU_CGROUP"/rths-rt-*; do
    [[ -d $stale ]] || continue
    kill -0 "${stale##*-}" 2>/dev/null || remove_rt_cgroup "${stale##*/}"
  done
  local name="rths-rt-$$" total=$((RT_BUDGET_US * RT_CONTAINERS))
  if ! mkdir "$CPU_CGROUP/$name" 2>/dev/null || ! echo "$total" >"$CPU_CGROUP/$name/cpu.rt_runtime_us" 2>/dev/null; then
    remove_rt_cgroup "$name"
    note "warning: no real-time budget of $total us/s left for the containers (another run holds it?): they run with normal scheduling"
    return 0
  fi
  RT_CGROUP=$name
  # The cgroup competes with the host's other tasks as one task would: with the default 1024 shares
  # a relay at nice -20 inside it got a fraction of a CPU on a busy host, released packets 100+ ms
  # late and the run ended with "site lost". 88761 is the weight of one nice -20 task, which is what
  # rths-node asks for.
  echo 88761 >"$CPU_CGROUP/$name/cpu.shares" 2>/dev/null || note "warning: cannot raise the cpu.shares of $name"
  COMPOSE_RUN_ARGS=(--podman-run-args "--cgroup-parent=/$name --cpu-rt-runtime=$RT_BUDGET_US")
  # The relay polls its sockets between releases and spends more than that budget here (~250 ms
  # of CPU per second on this VM): at SCHED_FIFO it would be throttled for the rest of a second, a
  # stall that ends the run ("site lost"). It runs with normal scheduling instead (nice -20 in
  # rths-node); the nodes keep SCHED_FIFO.
  export RTHS_RELAY_ARGS="--set realtime.priority=0${RTHS_RELAY_ARGS:+ $RTHS_RELAY_ARGS}"
  note "real-time budget: cgroup $name, $RT_BUDGET_US us/s per container; the relays run without SCHED_FIFO"
}

PROJECT="rths$$"
NUM_RC=""
COLLECTED=0
RUNNING=0

# The container of a compose service.
container_of() {
  podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
    --filter "label=com.docker.compose.service=$1" --format '{{.Names}}' 2>/dev/null | head -n 1
}

collect_logs() {
  ((!COLLECTED)) || return 0
  COLLECTED=1
  local service name
  for service in numerical relay1 relay2 site1 site2; do
    name=$(container_of "$service")
    [[ -z $name ]] || podman logs "$name" >"$OUT/containers/$service.log" 2>&1 || true
  done
}

# shellcheck disable=SC2317  # reached through the EXIT trap
teardown() {
  local rc=$?
  trap '' INT TERM
  if ((RUNNING)); then
    # An interrupted run: SIGTERM to the numerical node first, whose safe stop tells the sites to
    # hold and stop through the relays; then whatever still runs. 10 s each for the files to be
    # written (podman-compose down would kill after 1 s).
    local name running
    name=$(container_of numerical)
    [[ -z $name ]] || podman stop -t 10 "$name" >/dev/null 2>&1 || true
    running=$(podman ps -q --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null || true)
    # shellcheck disable=SC2086  # one id per word
    [[ -z $running ]] || podman stop -t 10 $running >/dev/null 2>&1 || true
    collect_logs
    podman-compose -f "$COMPOSE_FILE" -p "$PROJECT" down >>"$OUT/containers/compose.log" 2>&1 || true
    # Belt and braces: podman-compose 1.0 leaves the networks, and a failed `up` may leave containers.
    local ids
    ids=$(podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null || true)
    # shellcheck disable=SC2086  # one id per word
    [[ -z $ids ]] || podman rm -f -t 2 $ids >/dev/null 2>&1 || true
    ids=$(podman network ls -q --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -z $ids ]] || podman network rm -f $ids >/dev/null 2>&1 || true
    [[ -z $RT_CGROUP ]] || remove_rt_cgroup "$RT_CGROUP"
    [[ -z ${KEYS:-} ]] || rm -rf "$KEYS"
    note "down: project $PROJECT removed"
  fi
  exit "$rc"
}

export RTHS_IMAGE=$IMAGE RTHS_BASE_IMAGE=$BASE RTHS_CONFIG=$IMAGE_CONFIG RTHS_SITE1=$SITE1 RTHS_SITE2=$SITE2
export RTHS_SETS=$rths_sets RTHS_OUT=$OUT RTHS_WAIT_S=$WAIT_S

# A fresh pre-shared key per site for this run (the format rths-numerical keygen writes), readable by
# root only; removed with the run's containers.
KEYS=$OUT/keys
mkdir -p "$KEYS" && chmod 700 "$KEYS"
for name in "$SITE1" "$SITE2"; do
  [[ $name == none || -f $KEYS/$name.key ]] && continue
  (umask 077 && { echo "# rths pre-shared site key for this container run"
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'
    echo; } >"$KEYS/$name.key") || die "cannot write $KEYS/$name.key"
done
export RTHS_KEYS=$KEYS

RUNNING=1
trap teardown EXIT
trap 'note "interrupted"; exit 130' INT
trap 'note "terminated"; exit 143' TERM

setup_rt_budget
shown_sets=""
((${#SETS[@]} == 0)) || shown_sets=$(printf ' --set %q' "${SETS[@]}")
note "config $IMAGE_CONFIG, site1 $SITE1, site2 $SITE2$shown_sets; output $OUT"
if ! podman-compose -f "$COMPOSE_FILE" -p "$PROJECT" "${COMPOSE_RUN_ARGS[@]+"${COMPOSE_RUN_ARGS[@]}"}" up -d --no-build \
  >"$OUT/containers/compose.log" 2>&1; then
  tail -n 20 "$OUT/containers/compose.log" >&2
  die "podman-compose up failed (the last lines of $OUT/containers/compose.log are above)"
fi
NUMERICAL=$(container_of numerical)
[[ -n $NUMERICAL ]] || die "podman-compose up started no numerical node (see $OUT/containers/compose.log)"
# podman-compose reports a container that failed to start only in its log: look at every service.
for service in site1 site2 relay1 relay2 numerical; do
  name=$(container_of "$service")
  [[ -n $name ]] || die "podman-compose up made no $service container (see $OUT/containers/compose.log)"
  state=$(podman inspect --format '{{.State.Status}} {{.State.Error}}' "$name" 2>/dev/null || true)
  if [[ $state == created* ]]; then
    die "$service did not start: $(grep -m 1 '^Error' "$OUT/containers/compose.log" || echo "${state#created }") (see $OUT/containers/compose.log)"
  fi
done
note "up: project $PROJECT; waiting for the numerical node ($NUMERICAL)"

started=$SECONDS
while :; do
  status=$(podman inspect --format '{{.State.Status}}' "$NUMERICAL" 2>/dev/null || echo gone)
  [[ $status == running || $status == created || $status == configured ]] || break
  if ((TIMEOUT_S > 0 && SECONDS - started > TIMEOUT_S)); then
    note "the numerical node is not done after $TIMEOUT_S s: stopping it (SIGTERM)"
    podman stop -t 10 "$NUMERICAL" >/dev/null 2>&1 || true
    break
  fi
  sleep 0.5
done
NUM_RC=$(podman inspect --format '{{.State.ExitCode}}' "$NUMERICAL" 2>/dev/null || echo 1)

# The sites end when the numerical node stops them, the relays 2 s after their last datagram.
codes="numerical $NUM_RC"
for service in site1 relay1 site2 relay2; do
  name=$(container_of "$service")
  for ((i = 0; i < 40; i++)); do
    [[ $(podman inspect --format '{{.State.Status}}' "$name" 2>/dev/null || echo gone) == running ]] || break
    sleep 0.5
  done
  if [[ $(podman inspect --format '{{.State.Status}}' "$name" 2>/dev/null || echo gone) == running ]]; then
    note "$service still runs 20 s after the numerical node: stopping it"
    podman stop -t 5 "$name" >/dev/null 2>&1 || true
  fi
  codes+=", $service $(podman inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null || echo '?')"
done
collect_logs
# The numerical node's own summary (its evaluation table) as it printed it.
grep -v '^rths-node: ' "$OUT/containers/numerical.log" || true
note "exit codes: $codes; output: $OUT"
exit "$NUM_RC"
