#!/usr/bin/env bash
# What each failed test of the last ctest run in BUILD_DIR said, in a few lines: its assertion
# failures (the failure line and the lines right after it) and the figures a real-time comparison
# prints ([ overload ] verdicts, exit codes, error lines, held steps, peaks, the bridge's and the
# target's figures). ctest's --output-on-failure shows a failed test's whole output in the middle of
# a long run; a CI that keeps only the end of the output keeps this, which .ci/run prints last.
# Usage: deploy/failure-digest.sh [BUILD_DIR] [MAX_LINES]   (defaults: build, 24)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
log=${1:-build}/Testing/Temporary/LastTest.log
max_lines=${2:-24}
[[ -f $log ]] || exit 0
awk -v max_lines="$max_lines" '
  function keep(line) {
    if (printed >= max_lines) return
    if (length(line) > 200) line = substr(line, 1, 200) " ..."
    digest[++count] = line
    printed++
  }
  /^"[^"]*" start time:/ { name = substr($0, 2, index(substr($0, 2), "\"") - 1); count = 0; after = 0; output = 0; next }
  /^Output:$/ { output = 1; getline; next }
  /^<end of output>$/ { output = 0; next }
  output && / Failure$/ { keep($0); after = 7; next }
  # The lines of a failure end at the next bracketed marker ([  FAILED  ], [   kept   ], [ overload ]).
  output && after > 0 && /^\[/ { after = 0 }
  output && after > 0 { keep("  " $0); after--; next }
  output && /^\[ overload \]|exit codes:|: error: |^held steps|^x[0-9]_m: peak|^bridge: |^target: |^site loop: / { keep($0); next }
  /^Test Failed\.?$|^Test Passed\.?$|^Test Timeout|^Test Exception|\*\*\*/ {
    if ($0 !~ /^Test Passed/ && name != "") {
      if (printed < max_lines) { print "failed " name ":"; printed++ }
      for (i = 1; i <= count; i++) print "  " digest[i]
    }
    name = ""; count = 0
  }
' "$log"
