#!/usr/bin/env bash
# A minimal Debian bookworm base image made with debootstrap and imported into podman, for hosts that
# reach a Debian mirror but no container registry. See --help.
set -euo pipefail

readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/messages.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
readonly HERE
readonly SUITE=bookworm

usage() {
  cat <<'EOF'
make-base-image.sh — a minimal Debian bookworm image from debootstrap, imported into podman

Usage:
  deploy/containers/make-base-image.sh [--image NAME] [--include PKG,...] [--cache DIR] [--mirror URL]
                                       [--security-mirror URL|none] [--force]
  deploy/containers/make-base-image.sh --help

Builds a bookworm root file system with `debootstrap --variant=minbase` from a Debian mirror and
imports it with `podman import` as NAME (default localhost/rths-bookworm:latest), the BASE_IMAGE
that deploy/containers/run.sh passes to the Containerfile where debian:bookworm cannot be pulled.
Does nothing when NAME already exists, unless --force. Needs root, debootstrap and podman; about
150 MB of packages come from the mirror. CONTAINERS_CONF is set to deploy/containers/containers.conf
unless already set.

The image's /etc/apt/sources.list names the same mirror (bookworm, bookworm-updates and, when
known, bookworm-security), so apt-get works in the Containerfile's build stage.

With --cache DIR the root file system is kept as a tarball in DIR (rths-bookworm-<key>.tar, the key
a hash of the suite, the mirrors and --include) and imported from there while it exists: the image
is made again in seconds after podman's storage was emptied, without debootstrap or the mirror.
--force makes the tarball anew too (the packages of the tarball age; remake it now and then).

Options:
  --image NAME             Image name (default localhost/rths-bookworm:latest).
  --include PKG,...        Debian packages to add to the minimal system (debootstrap --include), e.g.
                           the runtime libraries of executables copied in (run.sh --from-build).
  --cache DIR              Keep and reuse the root file system's tarball in DIR (created).
  --mirror URL             Debian mirror. Default: the first mirror serving "bookworm" in this host's
                           /etc/apt/sources.list and /etc/apt/sources.list.d/*, else
                           http://deb.debian.org/debian.
  --security-mirror URL    Mirror of bookworm-security. Default: the host's, if it has one; "none"
                           leaves it out.
  --force                  Rebuild and replace NAME even when it exists.
  -h, --help               This text.

Exit codes: 0 the image exists (made or already there); 1 failure; 2 bad command line.
EOF
}


IMAGE=localhost/rths-bookworm:latest
INCLUDE=""
CACHE_DIR=""
MIRROR=""
SECURITY_MIRROR=""
FORCE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --force)
      FORCE=1
      shift
      ;;
    --image | --include | --cache | --mirror | --security-mirror)
      [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
      case "$1" in
        --image) IMAGE=$2 ;;
        --include) INCLUDE=$2 ;;
        --cache) CACHE_DIR=$2 ;;
        --mirror) MIRROR=$2 ;;
        --security-mirror) SECURITY_MIRROR=$2 ;;
      esac
      shift 2
      ;;
    --image=* | --include=* | --cache=* | --mirror=* | --security-mirror=*)
      case "$1" in
        --image=*) IMAGE=${1#*=} ;;
        --include=*) INCLUDE=${1#*=} ;;
        --cache=*) CACHE_DIR=${1#*=} ;;
        --mirror=*) MIRROR=${1#*=} ;;
        --security-mirror=*) SECURITY_MIRROR=${1#*=} ;;
      esac
      shift
      ;;
    *) bad_usage "unknown argument '$1'" ;;
  esac
done
[[ -n $IMAGE ]] || bad_usage "--image needs a name"
[[ $INCLUDE =~ ^[a-z0-9.+,-]*$ ]] || bad_usage "--include '$INCLUDE': expected Debian package names separated by commas"

export CONTAINERS_CONF=${CONTAINERS_CONF:-$HERE/containers.conf}

# The URIs of this host's apt sources whose suites include $1 exactly (one-line and deb822 formats).
host_mirrors_for() {
  local suite=$1 file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -r $file ]] || continue
    case "$file" in
      *.sources)
        # deb822 stanzas: URIs and Suites lines, stanzas separated by blank lines.
        awk -v want="$suite" '
          function flush() { if (types ~ /(^| )deb( |$)/ && suites ~ ("(^| )" want "( |$)")) { n = split(uris, u, " "); for (i = 1; i <= n; i++) print u[i] } types = uris = suites = "" }
          /^[ \t]*$/ { flush(); next }
          /^[ \t]*#/ { next }
          tolower($1) == "types:" { $1 = ""; types = $0 " " }
          tolower($1) == "uris:" { $1 = ""; uris = $0 }
          tolower($1) == "suites:" { $1 = ""; suites = $0 " " }
          END { flush() }' "$file"
        ;;
      *)
        # deb [options] URI SUITE COMPONENTS...
        awk -v want="$suite" '
          $1 == "deb" { i = 2; if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } if ($(i + 1) == want) print $i }' "$file"
        ;;
    esac
  done
}

if podman image exists "$IMAGE" 2>/dev/null && ((!FORCE)); then
  note "$IMAGE exists (--force rebuilds it)"
  exit 0
fi

command -v podman >/dev/null 2>&1 || die "podman is not installed (apt-get install podman)"

if [[ -z $MIRROR ]]; then
  MIRROR=$(host_mirrors_for "$SUITE" | head -n 1)
  [[ -n $MIRROR ]] || MIRROR=http://deb.debian.org/debian
fi
if [[ -z $SECURITY_MIRROR ]]; then
  SECURITY_MIRROR=$(host_mirrors_for "$SUITE-security" | head -n 1)
fi
[[ $SECURITY_MIRROR != none ]] || SECURITY_MIRROR=""

# Imports the root file system's tarball $1 as $IMAGE.
import_tarball() {
  note "importing as $IMAGE"
  local created
  created=$(date -u -r "$1" +%Y-%m-%dT%H:%M:%SZ)
  podman import \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL org.opencontainers.image.title=rths-bookworm" \
    --change "LABEL org.opencontainers.image.description=debootstrap-minbase-$SUITE${INCLUDE:+-with-$INCLUDE}" \
    --change "LABEL org.opencontainers.image.created=$created" \
    --change "LABEL org.rths.debian-mirror=$MIRROR" \
    --message "debootstrap --variant=minbase${INCLUDE:+ --include=$INCLUDE} $SUITE $MIRROR" \
    --quiet "$1" "$IMAGE" >/dev/null ||
    die "podman import of $1 failed"
  note "made $IMAGE ($(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
}

CACHED=""
if [[ -n $CACHE_DIR ]]; then
  mkdir -p "$CACHE_DIR" || die "cannot create the cache folder $CACHE_DIR"
  key=$(printf '%s\n' "$SUITE" "$MIRROR" "$SECURITY_MIRROR" "$INCLUDE" | sha256sum | cut -c1-16)
  CACHED=$(cd "$CACHE_DIR" && pwd)/rths-$SUITE-$key.tar
  if [[ -f $CACHED ]] && ((!FORCE)); then
    note "the root file system is cached: $CACHED (--force makes it anew)"
    import_tarball "$CACHED"
    exit 0
  fi
fi

command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed (apt-get install debootstrap)"
[[ $(id -u) -eq 0 ]] || die "debootstrap needs root (run as root or with sudo)"

ROOTFS=""
cleanup() {
  local rc=$?
  if [[ -n $ROOTFS && -d $ROOTFS ]]; then
    # debootstrap may leave /proc or /sys of the target mounted when it fails half-way.
    local m
    for m in proc sys dev/pts dev; do
      if mountpoint -q "$ROOTFS/rootfs/$m" 2>/dev/null; then
        umount -l "$ROOTFS/rootfs/$m" 2>/dev/null || true
      fi
    done
    rm -rf --one-file-system "$ROOTFS"
  fi
  [[ -z $CACHED ]] || rm -f "$CACHED.partial"
  exit "$rc"
}
trap cleanup EXIT
trap 'note "interrupted"; exit 130' INT
trap 'note "terminated"; exit 143' TERM

# Beside the container storage rather than in a tmpfs /tmp: the root file system is ~200 MB.
ROOTFS=$(mktemp -d "${TMPDIR:-/var/tmp}/rths-bookworm.XXXXXX")
note "debootstrap $SUITE${INCLUDE:+ with $INCLUDE} from $MIRROR into $ROOTFS/rootfs (a minute or two)"
if ! debootstrap --variant=minbase ${INCLUDE:+"--include=$INCLUDE"} "$SUITE" "$ROOTFS/rootfs" "$MIRROR" \
  >"$ROOTFS/debootstrap.log" 2>&1; then
  tail -n 20 "$ROOTFS/debootstrap.log" >&2
  [[ ! -f $ROOTFS/rootfs/debootstrap/debootstrap.log ]] || tail -n 20 "$ROOTFS/rootfs/debootstrap/debootstrap.log" >&2
  die "debootstrap failed (mirror $MIRROR; see the lines above)"
fi

{
  echo "deb $MIRROR $SUITE main"
  echo "deb $MIRROR $SUITE-updates main"
  [[ -z $SECURITY_MIRROR ]] || echo "deb $SECURITY_MIRROR $SUITE-security main"
} >"$ROOTFS/rootfs/etc/apt/sources.list"
# As in Debian's own container images: no recommends, no documentation, no package caches.
cat >"$ROOTFS/rootfs/etc/apt/apt.conf.d/90rths-container" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
cat >"$ROOTFS/rootfs/etc/dpkg/dpkg.cfg.d/90rths-container" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
rm -rf "$ROOTFS/rootfs/var/lib/apt/lists/"* "$ROOTFS/rootfs/var/cache/apt/archives/"*.deb
# A container gets its hostname and resolver from the engine.
: >"$ROOTFS/rootfs/etc/hostname"
: >"$ROOTFS/rootfs/etc/resolv.conf"

# The tarball goes to the cache (whole, then renamed: an interrupted run leaves no half tarball).
tarball=$ROOTFS/rootfs.tar
[[ -z $CACHED ]] || tarball=$CACHED.partial
tar --numeric-owner --xattrs -C "$ROOTFS/rootfs" -cf "$tarball" . || die "cannot write $tarball"
if [[ -n $CACHED ]]; then
  mv -f "$tarball" "$CACHED"
  tarball=$CACHED
  note "cached the root file system: $CACHED"
fi
import_tarball "$tarball"
