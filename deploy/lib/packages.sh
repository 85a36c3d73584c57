# Shared by the deploy scripts (sourced): installs the Debian packages named that are missing.
# shellcheck shell=bash

# The lock that install_missing and setup.sh's npm ci hold: .ci/run runs scripts side by side, and
# two apt-get or two npm ci at once would fail on each other's locks or half-write node_modules.
RTHS_PACKAGE_LOCK=${TMPDIR:-/tmp}/rths-packages.lock

# with_package_lock COMMAND...: runs COMMAND while no other deploy script installs anything.
with_package_lock() {
  (
    flock 9
    "$@"
  ) 9>"$RTHS_PACKAGE_LOCK"
}

# install_missing [--no-install-recommends] PACKAGE...: as root, or through sudo.
install_missing() {
  with_package_lock _install_missing "$@"
}

_install_missing() {
  local apt_options=()
  if [[ ${1:-} == --no-install-recommends ]]; then
    apt_options+=("$1")
    shift
  fi
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  echo "${SELF:-setup}: installing ${#missing[@]} Debian packages and what they depend on (${missing[*]}) with" \
    "apt-get; this may take a few minutes and prints nothing until it is done" >&2
  local sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${apt_options[@]}" "${missing[@]}" >/dev/null
}
