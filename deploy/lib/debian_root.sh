# Shared by the scripts that try rths on a fresh Debian 12 (sourced): a minimal bookworm root made
# once with debootstrap and cached, and a way to run a script chrooted in a copy of it.
# shellcheck shell=bash

# bookworm_root CACHE MIRROR FRESH: makes CACHE/bookworm with debootstrap (minbase: what a container
# image or a fresh cloud machine has, without the tools this workplace adds) unless it is there
# already or FRESH is 1. debootstrap writes the marker last: a root without it was interrupted.
bookworm_root() {
  local cache=$1 mirror=$2 fresh=$3
  local base=$cache/bookworm
  mkdir -p "$cache"
  if ((fresh)) || [[ ! -f $base/.rths-debootstrap-complete ]]; then
    rm -rf "$base"
    note "debootstrap bookworm from $mirror into $base (minutes, once)"
    debootstrap --variant=minbase bookworm "$base" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
      die "debootstrap failed (see $cache/debootstrap.log)"
    touch "$base/.rths-debootstrap-complete"
  fi
}

# need_debootstrap: root and debootstrap (installed when missing), else skip (exit 77).
need_debootstrap() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (debootstrap and chroot)"
  if ! command -v debootstrap >/dev/null; then
    note "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
      skip "debootstrap is missing and apt-get could not install it"
  fi
}

# in_root ROOT SCRIPT [SETPRIV_OPTION...]: runs SCRIPT with /bin/sh chrooted in ROOT, in a private
# mount namespace (nothing stays mounted on the host) with /proc, /sys and /dev, and /run as a tmpfs
# (network namespaces mount there). SETPRIV_OPTIONs (setpriv(1)) take capabilities away, e.g. the
# real-time scheduling a lab machine's user may not have.
in_root() {
  local root=$1 script=$2
  shift 2
  # shellcheck disable=SC2016 # $1.. are the inner shell's arguments: the root, the script, setpriv's.
  unshare --mount --propagation private sh -c '
    root=$1 script=$2; shift 2
    mount -t proc proc "$root/proc" && mount -t sysfs sys "$root/sys" && mount --rbind /dev "$root/dev" &&
      mount -t tmpfs run "$root/run" && exec setpriv "$@" chroot "$root" /bin/sh -c "$script"' \
    sh "$root" "$script" "$@"
}
