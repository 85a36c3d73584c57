#!/usr/bin/env bash
# The Debian package as a user meets it: built with cpack, installed with apt-get into a fresh
# Debian 12 root (so every dependency must resolve from Debian's archive, nothing from this
# machine), then run there. Prints how long each phase took; exits nonzero when a check fails.
set -euo pipefail
SELF=$(basename "$0")
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"
# shellcheck source=deploy/lib/debian_root.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian_root.sh"
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: deploy/package-check.sh [--build DIR] [--mirror URL] [--fresh-root] [--keep]

1. Builds the tools in DIR (default build; a new DIR is configured by deploy/setup.sh --nodes-only,
   which installs the build's missing Debian packages and leaves the tests out) and makes the
   package there: cpack -G DEB -> DIR/rths_<version>_<arch>.deb. Prints its control fields
   (Depends from dpkg-shlibdeps).
2. Makes a minimal Debian 12 (bookworm) root with debootstrap, once: it is cached in
   DIR/package-check/bookworm and reused by later runs (--fresh-root makes it again).
3. Copies that root to DIR/package-check/root and, chrooted in it (in a private mount namespace,
   nothing stays mounted): apt-get update; apt-get install ./rths_<version>_<arch>.deb (the
   dependencies and recommends come from the mirror; downloaded packages are cached in
   DIR/package-check/archives for the next run); then checks
     - rths-numerical --version prints the package's version,
     - rths-physical, rths-relay, rths-study and rths-bench-loop answer --help,
     - rths-numerical run /usr/share/rths/examples/seed002/spring.textproto --out /tmp/x runs
       the whole El Centro record in virtual time from the installed examples and data, exits 0
       and leaves summary.json with exit_code 0.
4. Removes the copied root (--keep leaves it for inspection) and prints the time of each phase.

Needs root (debootstrap, chroot), and installs what is missing of debootstrap, dpkg-dev
(dpkg-shlibdeps, for the package's dependencies) and file (cpack finds the executables with it);
and the mirror over the network. The first run takes minutes (debootstrap); later runs reuse the
cached root.

Options:
  --build DIR    Build folder (default build). The package and the cache go there.
  --mirror URL   Debian mirror (default http://deb.debian.org/debian).
  --fresh-root   Make the cached Debian root again.
  --keep         Keep DIR/package-check/root after the check.
  -h, --help     This text.

Exit codes: 0 every check passed; 1 a check or a step failed (the message says which); 2 bad
command line; 77 cannot run here (not root, or no debootstrap and it cannot be installed).
EOF
}

build=build
mirror=http://deb.debian.org/debian
fresh_root=0
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage && exit 0 ;;
    --build | --mirror)
      need_value "$@"
      case "$1" in
        --build) build=$2 ;;
        --mirror) mirror=$2 ;;
      esac
      shift 2
      ;;
    --fresh-root) fresh_root=1 && shift ;;
    --keep) keep=1 && shift ;;
    *) bad_usage "unknown option '$1'" ;;
  esac
done
[[ $mirror =~ ^https?:// ]] || bad_usage "--mirror: expected an http(s) URL, got '$mirror'"

need_debootstrap
# cpack -G DEB runs dpkg-shlibdeps (dpkg-dev) for the dependencies and file(1) to find the executables.
install_missing --no-install-recommends dpkg-dev file

started=$SECONDS
phase_start=$SECONDS
timings=()
phase_done() {
  timings+=("$(printf '%-34s %5d s' "$1" $((SECONDS - phase_start)))")
  phase_start=$SECONDS
}

# ---- 1. the package ------------------------------------------------------------------------------
readonly TOOLS=(rths-numerical rths-physical rths-relay rths-study rths-bench-loop)
if [[ ! -f $build/CMakeCache.txt ]]; then
  # A new folder is made as the README's commands make theirs: the build's Debian packages installed
  # when missing, the project's compiler and options, the tests not configured.
  note "configuring $build with deploy/setup.sh --nodes-only"
  tool_targets=()
  for tool in "${TOOLS[@]}"; do tool_targets+=(--target "$tool"); done
  deploy/setup.sh --nodes-only "$build" "${tool_targets[@]}" >/dev/null || die "deploy/setup.sh could not build $build"
fi
build=$(cd "$build" && pwd)
cmake --build "$build" -j "$(nproc)" --target "${TOOLS[@]}" >/dev/null
phase_done "build the tools"
rm -f "$build"/rths_*.deb
(cd "$build" && cpack -G DEB >/dev/null) || die "cpack -G DEB failed in $build"
debs=("$build"/rths_*.deb)
[[ -f ${debs[0]} ]] || die "cpack made no rths_*.deb in $build"
deb=${debs[0]}
version=$(dpkg-deb --field "$deb" Version)
note "package: $deb"
dpkg-deb --field "$deb" Package Version Architecture Maintainer Depends Recommends Installed-Size >&2
phase_done "cpack -G DEB"

# ---- 2. the cached Debian 12 root ----------------------------------------------------------------
cache=$build/package-check
mkdir -p "$cache/archives"
bookworm_root "$cache" "$mirror" "$fresh_root"
phase_done "bookworm root (debootstrap once, then cached)"

# ---- 3. install and run in a fresh copy ----------------------------------------------------------
root=$cache/root
rm -rf "$root"
cp -a "$cache/bookworm" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
find "$cache/archives" -name '*.deb' -exec cp {} "$root/var/cache/apt/archives/" \;
phase_done "fresh copy of the root"

# Inside the root. The package is installed the way a user would, so its dependencies must come
# from the mirror; the checks below then use only what the package installed.
inside=$(
  cat <<EOF
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp
apt-get update -qq
apt-get install -y -qq ./$(basename "$deb") >/tmp/apt-install.log 2>&1 || { cat /tmp/apt-install.log; exit 1; }
echo "installed: \$(dpkg-query -W -f='\${Package} \${Version}' rths)"
line=\$(rths-numerical --version)
[ "\$line" = "rths-numerical $version" ] || { echo "rths-numerical --version: '\$line', package $version"; exit 1; }
echo "\$line"
for tool in rths-physical rths-relay rths-study rths-bench-loop; do
  \$tool --help >/dev/null || { echo "\$tool --help failed"; exit 1; }
done
rths-numerical run /usr/share/rths/examples/seed002/spring.textproto --out /tmp/x --quiet
grep -q '"exit_code": *0' /tmp/x/summary.json || { echo "summary.json: no exit_code 0"; exit 1; }
echo "run: \$(grep -o '"steps": *"*[0-9]*' /tmp/x/summary.json | head -1), record \$(grep -o 'path: "[^"]*"' /tmp/x/config.textproto | head -1)"
EOF
)
rc=0
in_root "$root" "$inside" 2>&1 | sed "s/^/$SELF: [bookworm] /" >&2 || rc=$?
# Keep what apt downloaded for the next run.
find "$root/var/cache/apt/archives" -maxdepth 1 -name '*.deb' ! -name 'rths_*' -exec cp -u {} "$cache/archives/" \;
phase_done "apt-get install + run in chroot"
((keep)) || rm -rf "$root"

note "times:"
for t in "${timings[@]}"; do note "  $t"; done
note "  $(printf '%-34s %5d s' total $((SECONDS - started)))"
((rc == 0)) || die "the package failed in a fresh Debian 12 root (output above)"
note "ok: $(basename "$deb") installs from Debian's archive and runs the installed example"
