# Shared by the deploy scripts (sourced): how they speak on stderr and which exit code they use.
# The script sets SELF (its name) first. Exit codes: 1 failure, 2 bad command line, 77 skipped
# (automake's convention: what is missing here is not a failure).
# shellcheck shell=bash

readonly EXIT_SKIPPED=77

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
# For option parsing: need_value "$@" before reading "$2".
need_value() {
  [[ $# -ge 2 ]] || bad_usage "$1 needs a value"
}
