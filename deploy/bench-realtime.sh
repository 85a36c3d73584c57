#!/usr/bin/env bash
# Real-time benchmark figures for docs/performance.md (its real-time sections):
#   1. a bare clock_nanosleep loop (rths-bench-loop), default settings and with privileges;
#   2. 60 s loopback runs of the seed 002 damper case, without and with real-time privileges:
#      tick lateness and compute time of both nodes, one-way latency, feedback age;
#   3. scale: one numerical node serving N remote sites (one process each) at 1024 Hz.
# Usage: deploy/bench-realtime.sh [--seconds S] [--sites "8 16 32"] [--bin DIR] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
site_counts="8 16 32"
bin=build/bin
out=runs/bench-realtime-$(date +%Y%m%d-%H%M%S)
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --sites) site_counts=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-realtime: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"

# Prints selected numbers of a JSON file: json FILE key... (one "key": value a line, as rths writes
# them; 64-bit counts are quoted, proto/results.proto).
json() {
  local file=$1; shift
  for key in "$@"; do
    printf '%s=%s ' "$key" "$(grep -m1 "\"$key\":" "$file" | sed 's/.*: //; s/,$//; s/"//g')"
  done
  echo
}

echo "== bare loop, ${seconds}s, default settings"
"$bin/rths-bench-loop" --seconds "$seconds"
echo "== bare loop, ${seconds}s, SCHED_FIFO 80, locked memory, 150 us spin"
"$bin/rths-bench-loop" --seconds "$seconds" --priority 80 --lock --spin-us 150

damper=examples/seed002/damper_3v.textproto
for mode in plain privileged; do
  if [ $mode = plain ]; then
    flags=(--set realtime.priority=0 --set realtime.lock_memory=false)
  else
    flags=(--set realtime.priority=80 --set realtime.lock_memory=true --set realtime.spin_s=0.00015)
  fi
  run=$out/loopback-$mode
  echo "== loopback ${seconds}s, $mode"
  "$bin/rths-numerical" loopback $damper --quiet --out "$run" --set duration_s="$seconds" "${flags[@]}" || true
  echo -n "numerical loop: "; json "$run/summary.json" lateness_p50_us lateness_p99_us lateness_p999_us lateness_max_us late_ticks compute_p50_us compute_p99_us
  echo -n "site loop:      "; json "$run/site_purdue.json" lateness_p50_us lateness_p99_us lateness_p999_us lateness_max_us late_ticks compute_p50_us compute_p99_us
  echo -n "network:        "; json "$run/summary.json" round_trip_p50_us round_trip_p99_us one_way_forward_p50_us one_way_forward_p99_us one_way_backward_p50_us one_way_backward_p99_us feedback_age_at_use_p50_us feedback_age_at_use_p99_us loss_rate
done

# N springs of k_s / N between the ground and floor 1, each at its own site process.
scale_config() {
  local n=$1 file=$2
  sed -n '/^structure {/,/^}/p' examples/seed002/spring.textproto > "$file.structure"
  {
    echo "name: \"scale-$n\""
    cat "$file.structure"
    echo 'ground_motion { synthetic { seed: 5 duration_s: 600 pga_m_per_s2: 0.7 } }'
    for i in $(seq 1 "$n"); do
      echo "site { name: \"s$i\" influence: [-1, 0] channel { specimen { spring { stiffness_n_per_m: $(awk -v n="$n" 'BEGIN { printf "%.6f", 55834.4 / n }') } } } }"
    done
  } > "$file"
  rm -f "$file.structure"
}
for n in $site_counts; do
  run=$out/scale-$n
  mkdir -p "$run"
  scale_config "$n" "$run.textproto"
  echo "== scale: $n remote sites, 20 s, privileged"
  "$bin/rths-numerical" loopback "$run.textproto" --quiet --out "$run" --set duration_s=20 \
    --set realtime.priority=80 --set realtime.spin_s=0 || true
  echo -n "numerical loop: "; json "$run/summary.json" exit_code lateness_p50_us lateness_p99_us lateness_p999_us lateness_max_us late_ticks compute_p50_us compute_p99_us
done
echo "outputs: $out"
