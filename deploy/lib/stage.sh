# Shared by .ci/run and the check scripts (sourced): runs a named stage and reports how long it took.
# shellcheck shell=bash

# Sets STAGE_CPU to the CPU seconds (user + system) of this shell's finished children so far, from
# bash's `times` (its second line: "XmY.YYYs XmY.YYYs"). It must run in this shell, not in $(...),
# whose fork would count only its own children.
_stage_children_cpu() {
  local file
  file=$(mktemp)
  times >"$file"
  STAGE_CPU=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; ++i) { split($i, p, "m"); sub("s", "", p[2]); t += p[1] * 60 + p[2] }
                             printf "%.1f\n", t }' "$file")
  rm -f "$file"
}

STAGE_SUMMARY=()
STAGE_FAILURES=()

# How many of a failed stage's last lines stage_summary repeats: the reason a stage failed (ctest's
# list of failed tests, a skip's reason, a compiler error) is at its end, and a CI that keeps only the
# tail of a long run would otherwise show the table without it.
STAGE_TAIL_LINES=${STAGE_TAIL_LINES:-30}

# stage NAME COMMAND...: prints "== NAME", runs COMMAND, then "== NAME: passed|FAILED (exit N) in
# W s wall, C s CPU". CPU is the user + system time of everything COMMAND ran: on a machine shared
# with other builds it is the steadier figure. The output is shown as it comes and, when a COMMAND
# that is a program fails, its last lines are kept for stage_summary. Returns COMMAND's exit status.
# A stage of the name of the one that runs it (a script that is itself a stage of .ci/run, as
# check-sanitizers.sh is) only runs COMMAND: the enclosing stage prints the heading, the time and the
# verdict once. RTHS_STAGE, the enclosing stage's name, reaches every process COMMAND starts.
stage() {
  local name=$1
  shift
  if [[ ${RTHS_STAGE:-} == "$name" ]]; then
    "$@"
    return
  fi
  echo "== $name"
  local cpu_before start status=0
  _stage_children_cpu
  cpu_before=$STAGE_CPU
  start=$(date +%s.%N)
  local log
  log=$(mktemp)
  if declare -F "$1" >/dev/null; then
    # A function of the calling script runs in its shell (it may wait for the script's background
    # jobs, which a pipeline's subshell cannot): its output is not kept.
    RTHS_STAGE=$name "$@" || status=$?
  else
    RTHS_STAGE=$name "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
  fi
  local wall cpu verdict=passed
  wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  _stage_children_cpu
  cpu=$(awk -v a="$cpu_before" -v b="$STAGE_CPU" 'BEGIN { printf "%.0f", b - a }')
  if [[ $status -ne 0 ]]; then
    verdict="FAILED (exit $status)"
    [[ ! -s $log ]] ||
      STAGE_FAILURES+=("== why $name failed: its last $STAGE_TAIL_LINES lines" "$(tail -n "$STAGE_TAIL_LINES" "$log")")
  fi
  rm -f "$log"
  echo "== $name: $verdict in ${wall} s wall, ${cpu} s CPU"
  STAGE_SUMMARY+=("$(printf '%-28s %-18s %6s s wall %6s s CPU' "$name" "$verdict" "$wall" "$cpu")")
  return "$status"
}

# Prints the last lines of every failed stage, then one line per stage run so far.
stage_summary() {
  [[ ${#STAGE_FAILURES[@]} -eq 0 ]] || printf '%s\n' "${STAGE_FAILURES[@]}"
  printf '%s\n' "${STAGE_SUMMARY[@]}"
}

# stage_save FILE: writes the stages run so far in this shell (a subshell's, whose arrays its parent
# never sees) to FILE; stage_load FILE appends them to this shell's.
stage_save() {
  {
    printf '%s\0' "${#STAGE_SUMMARY[@]}" "${STAGE_SUMMARY[@]}"
    printf '%s\0' "${#STAGE_FAILURES[@]}" "${STAGE_FAILURES[@]}"
  } >"$1"
}

stage_load() {
  local fields n
  mapfile -d '' -t fields <"$1"
  n=${fields[0]}
  STAGE_SUMMARY+=("${fields[@]:1:n}")
  STAGE_FAILURES+=("${fields[@]:n+2}")
}
