#!/usr/bin/env bash
# The repository's .clang-format and .clang-tidy, checked: clang-format on every tracked C++ file,
# clang-tidy on every project .cpp of the build's compile database. Any finding fails (exit 1).
# Usage: deploy/lint.sh [--build DIR] [--jobs N] [--cache DIR] [--tidy-sources-only]
#   --build DIR  build folder whose compile_commands.json clang-tidy reads (default build-lint;
#                configured without precompiled headers, which clang-tidy cannot read, and without
#                unity batches, and its generated protobuf headers built when missing)
#   --jobs N     clang-tidy processes at once (default: nproc)
#   --cache DIR  remember the files clang-tidy passed, by a hash of everything its verdict depends on,
#                and pass them again without a run (default .cache/clang-tidy; "none": no cache)
#   --tidy-sources-only  clang-tidy on the product's sources, not on tests/ (clang-format still
#                checks every file): half the CPU, for a CI without the cache
# clang-tidy 22 takes 3-8 s of CPU per file here (14 took 10-25 s: its checks matched inside the
# Eigen, protobuf, asio and GoogleTest headers too). With the cache a file costs that only when its
# preprocessed text changed.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly SELF=${0##*/}
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
# shellcheck source=deploy/lib/packages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"

build=build-lint
jobs=$(nproc)
cache=.cache/clang-tidy
sources_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) need_value "$@"; build=$2; shift 2 ;;
    --jobs) need_value "$@"; jobs=$2; shift 2 ;;
    --cache) need_value "$@"; cache=$2; shift 2 ;;
    --tidy-sources-only) sources_only=1; shift ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) bad_usage "unknown argument $1" ;;
  esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || bad_usage "--jobs: expected a whole number > 0, got $jobs"
[[ $cache != none ]] || cache=""

# Debian's clang-format (14 on bookworm) and clang-tidy 22 (bookworm-security): the versions
# .clang-format and .clang-tidy are written for.
install_missing --no-install-recommends clang-format clang-tidy-22
readonly TIDY=clang-tidy-22

status=0

# ---- clang-format ---------------------------------------------------------------------------------
mapfile -t sources < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cc')
((${#sources[@]} > 0)) || die "no C++ file tracked by git here (run in a clone)"
if ! out=$(clang-format --dry-run --Werror "${sources[@]}" 2>&1); then
  # One line per place: "FILE:LINE:COL: error: code should be clang-formatted".
  printf '%s\n' "$out" | grep -E '^[^ ].*: error:' >&2 || printf '%s\n' "$out" >&2
  note "clang-format: $(printf '%s\n' "$out" | grep -cE '^[^ ].*: error:') places differ in" \
    "$(printf '%s\n' "$out" | grep -E '^[^ ].*: error:' | cut -d: -f1 | sort -u | wc -l) files;" \
    "clang-format -i FILE rewrites one"
  status=1
else
  note "clang-format: ${#sources[@]} files as .clang-format wants them"
fi

# ---- clang-tidy -----------------------------------------------------------------------------------
# Configured (again: seconds when nothing changed) without precompiled headers, which clang-tidy
# cannot read (g++'s, or another clang's), and without the unity build's batches, so that the
# database names each file; and the generated protobuf headers, which clang-tidy reads where the
# project includes them.
# A folder given with --build is configured only when it has no database.
if [[ $build == build-lint || ! -f $build/compile_commands.json ]]; then
  [[ -f $build/compile_commands.json ]] || note "no $build/compile_commands.json: configuring $build"
  deploy/setup.sh --target rths_proto "$build" -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DRTHS_UNITY_BUILD=OFF >/dev/null
else
  cmake --build "$build" --target rths_proto >/dev/null
fi
if grep -q 'cmake_pch\|/Unity/unity_' "$build/compile_commands.json"; then
  die "$build compiles through precompiled headers or unity batches, which clang-tidy cannot check file by" \
    "file: leave --build out (lint configures build-lint)"
fi
repo=$(pwd)
build_abs=$(cd "$build" && pwd)
# The project's own .cpp files in the database, not protoc's output: one line per file, "FILE<tab>
# DIRECTORY<tab>COMMAND", read from the lines CMake writes for each entry and unescaped from JSON.
units=$(awk -v repo="$repo/" -v build="$build_abs/" '
  function value(line) { sub(/^ *"[a-z]+": "/, "", line); sub(/",?$/, "", line)
                         gsub(/\\\\/, "\001", line); gsub(/\\"/, "\"", line); gsub(/\001/, "\\", line); return line }
  /^ *"directory": / { dir = value($0) }
  /^ *"command": / { cmd = value($0) }
  /^ *"file": / { file = value($0); if (index(file, repo) == 1 && index(file, build) != 1) print file "\t" dir "\t" cmd }
' "$build/compile_commands.json" | LC_ALL=C sort -u -t $'\t' -k1,1)
if ((sources_only)); then
  units=$(printf '%s\n' "$units" | grep -v "^$repo/tests/" || true)
fi
[[ -n $units ]] || die "$build/compile_commands.json lists no file of $repo"

# What every verdict depends on besides the file's own translation unit: the tool and its
# configuration. The unit's part is its command line and its preprocessed text: the file and every
# header it includes, as the flags shaped them (by the build's compiler: no project file has a
# branch for one compiler or the other).
tool_hash=$({ "$TIDY" --version; git ls-files -z -- .clang-tidy '*/.clang-tidy' | xargs -0 cat; } |
  sha256sum | cut -c1-64)
if [[ -n $cache ]]; then
  mkdir -p "$cache"
  # A verdict unused for a month belongs to sources that are gone.
  find "$cache" -type f -mtime +30 -delete
fi

# shellcheck disable=SC2317  # run by the xargs below
tidy_one() {
  local file dir cmd key="" log
  IFS=$'\t' read -r file dir cmd <<<"$1"
  if [[ -n $cache ]]; then
    # The compile command, preprocessing instead of compiling (its -o and -c replaced by -E).
    # No key (and so no cache) when preprocessing fails: clang-tidy then reports why.
    key=$(
      set -o pipefail
      cd "$dir" || exit 1
      {
        echo "$tool_hash $file $cmd"
        eval "$(sed -E 's/ -o [^ ]+ / /; s/ -c / -E /' <<<"$cmd")" 2>/dev/null
      } | sha256sum | cut -c1-64
    ) || key=""
    if [[ -n $key && -f $cache/$key ]]; then
      touch "$cache/$key"
      return 0
    fi
  fi
  if log=$("$TIDY" -p "$build" --quiet --warnings-as-errors='*' "$file" 2>&1); then
    [[ -z $key ]] || : >"$cache/$key"
  else
    # The findings, without clang-tidy's count of the warnings it suppressed in other headers.
    printf '%s\n' "$log" | grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing' >&2
    echo "$file"
    return 1
  fi
}
export -f tidy_one
export build cache tool_hash TIDY

started=$SECONDS
count=$(printf '%s\n' "$units" | wc -l)
# shellcheck disable=SC2016  # $1 is the inner shell's
failed=$(printf '%s\n' "$units" | tr '\n' '\0' | xargs -0 -n 1 -P "$jobs" bash -c 'tidy_one "$1" || true' _ | wc -l)
if ((failed > 0)); then
  note "clang-tidy: findings in $failed of $count files (above); fix them, or where a check is wrong" \
    "for this code, disable it in .clang-tidy with the reason"
  status=1
else
  note "clang-tidy: $count files without a finding ($((SECONDS - started)) s)"
fi
exit "$status"
