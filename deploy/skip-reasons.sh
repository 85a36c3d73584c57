#!/usr/bin/env bash
# Why each test of the last ctest run in BUILD_DIR was skipped. ctest names the skipped tests at the
# end of its run but shows none of their output, not even with --output-on-failure; the reason a
# GoogleTest test gives (GTEST_SKIP() << "...": podman missing, no privileges for network namespaces)
# is only in the run's log, Testing/Temporary/LastTest.log, which this reads.
# Usage: deploy/skip-reasons.sh [BUILD_DIR]   (default: build); prints "skipped NAME: REASON" lines.
set -euo pipefail
log=${1:-build}/Testing/Temporary/LastTest.log
[[ -f $log ]] || exit 0
awk '
  /^"[^"]*" start time:/ { name = substr($0, 2, index(substr($0, 2), "\"") - 1); reason = ""; output = 0; next }
  /^Output:$/ { output = 1; getline; next }
  /^<end of output>$/ { output = 0; next }
  output && reading && /^\[  SKIPPED \]/ { reading = 0; next }
  output && reading { reason = reason (reason == "" ? "" : " ") $0; next }
  output && / Skipped$/ { reading = 1; next }
  /^Skip regular expression found in output/ {
    print "skipped " name ": " (reason == "" ? "(no reason given)" : reason)
  }
' "$log"
