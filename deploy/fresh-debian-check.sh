#!/usr/bin/env bash
# The README's two commands as a new user meets them: on a fresh, minimal Debian 12 root (debootstrap,
# nothing from this machine), without real-time privileges and, optionally, with other work running
# beside them. Prints how long each took and exits nonzero when either failed.
set -euo pipefail
SELF=$(basename "$0")
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
# shellcheck source=deploy/lib/debian_root.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian_root.sh"
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: deploy/fresh-debian-check.sh [--cache DIR] [--mirror URL] [--fresh-root] [--load N]
                                    [--only demo|test] [--keep] [-- CTEST_OPTION...]

1. Makes a minimal Debian 12 (bookworm) root with debootstrap, once (cached in DIR/bookworm;
   --fresh-root makes it again). It has none of this machine's tools: no Node.js, no compiler, no
   git.
2. Copies it to DIR/root and puts the repository's committed files (git archive HEAD: what a
   clone holds, nothing of build/ or .cache/) in the folder rths at the top of that root.
3. Chrooted in it (a private mount namespace: nothing stays mounted), as root but without the
   capability to use real-time scheduling or lock memory (setpriv drops CAP_SYS_NICE and
   CAP_IPC_LOCK, as a lab machine's user who was not given them), runs the README's commands:
     deploy/demo.sh   (installs what it needs, builds the two nodes, runs the loopback demo)
     deploy/test.sh   (installs what it needs, builds everything, runs every test)
   With --load N, N processes of other work (a busy loop each, at normal priority) run on this
   machine throughout, as another build would.
4. Prints the time of each command and the suite's summary; the full logs stay in DIR/demo.log
   and DIR/test.log. Removes DIR/root unless --keep.

Needs root, debootstrap (installed when missing) and Debian's mirror. Takes long: the first command
installs the build tools and builds two executables, the second builds everything and runs the
suite (about an hour on 2 cores).

Options:
  --cache DIR    Where the root, the copy and the logs go (default .cache/fresh-debian).
  --mirror URL   Debian mirror (default http://deb.debian.org/debian).
  --fresh-root   Make the cached Debian root again.
  --load N       Run N busy processes beside the commands (default 0).
  --only WHAT    Run only the demo or only the test command.
  --keep         Keep DIR/root afterwards (chroot into it to look around).
  -- ...         Options for deploy/test.sh (ctest's, e.g. -L unit).
  -h, --help     This text.

Exit codes: 0 both commands passed; 1 one failed (its log says why); 2 bad command line; 77 cannot
run here (not root, no debootstrap).
EOF
}

cache=.cache/fresh-debian
mirror=http://deb.debian.org/debian
fresh_root=0
load=0
only=""
keep=0
test_options=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage && exit 0 ;;
    --cache | --mirror | --load | --only)
      need_value "$@"
      case "$1" in
        --cache) cache=$2 ;;
        --mirror) mirror=$2 ;;
        --load) load=$2 ;;
        --only) only=$2 ;;
      esac
      shift 2
      ;;
    --fresh-root) fresh_root=1 && shift ;;
    --keep) keep=1 && shift ;;
    --) shift && test_options=("$@") && break ;;
    *) bad_usage "unknown option '$1'" ;;
  esac
done
[[ $mirror =~ ^https?:// ]] || bad_usage "--mirror: expected an http(s) URL, got '$mirror'"
[[ $load =~ ^[0-9]+$ && $load -le 64 ]] || bad_usage "--load: expected 0 to 64 processes, got '$load'"
[[ -z $only || $only == demo || $only == test ]] || bad_usage "--only: expected demo or test, got '$only'"
command -v git >/dev/null || die "git is needed to take the repository's committed files"

need_debootstrap
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
bookworm_root "$cache" "$mirror" "$fresh_root"

root=$cache/root
# The repository's folder inside the root (at its top: readable by every user the tests become).
readonly clone=rths
rm -rf "$root"
cp -a "$cache/bookworm" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The names every installed Debian has for this host (its installer writes /etc/hosts; debootstrap
# does not), which tests resolve.
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
# The network's own certificate authorities, as its DNS server: where the way out inspects TLS (a
# proxy with its own CA, as this machine's has), npm in the root needs them as any machine behind it
# would. Nothing else of this machine goes in.
network_ca=""
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cat /usr/local/share/ca-certificates/*.crt >"$root/etc/network-ca.crt"
  network_ca="NODE_EXTRA_CA_CERTS=/etc/network-ca.crt"
fi
mkdir -p "$root/$clone"
git archive --format=tar HEAD | tar -x -C "$root/$clone"
note "fresh root at $root with the files of $(git rev-parse --short HEAD)"

loaders=()
# shellcheck disable=SC2317  # called by the trap
stop_load() {
  [[ ${#loaders[@]} -eq 0 ]] || kill "${loaders[@]}" 2>/dev/null || true
}
trap stop_load EXIT
for ((i = 0; i < load; ++i)); do
  (while :; do :; done) &
  loaders+=($!)
done
((load == 0)) || note "$load busy processes run beside the commands"

# Without CAP_SYS_NICE a SCHED_FIFO request fails as it does for a user without real-time rights;
# without CAP_IPC_LOCK so does mlockall beyond the default limit.
# shellcheck disable=SC2054  # setpriv's lists are comma-separated
drop=(--inh-caps=-sys_nice,-ipc_lock --bounding-set=-sys_nice,-ipc_lock)
status=0
times=()
run_command() {
  local name=$1 command=$2 start=$SECONDS rc=0
  note "running $command in the fresh root (log: $cache/$name.log)"
  in_root "$root" "export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin $network_ca
    cd /$clone && exec bash -c '$command'" "${drop[@]}" >"$cache/$name.log" 2>&1 || rc=$?
  times+=("$(printf '%-20s %6d s  exit %d' "$name" $((SECONDS - start)) "$rc")")
  ((rc == 0)) || status=1
  tail -n 12 "$cache/$name.log" | sed "s/^/$SELF: [$name] /" >&2
}
[[ $only == test ]] || run_command demo "deploy/demo.sh"
[[ $only == demo ]] || run_command test "deploy/test.sh ${test_options[*]}"

((keep)) || rm -rf "$root"
note "times:"
for t in "${times[@]}"; do note "  $t"; done
exit "$status"
