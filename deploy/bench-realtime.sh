#!/usr/bin/env bash
# Real-time benchmark figures for docs/performance.md (its real-time sections):
#   1. a bare clock_nanosleep loop (rths-bench-loop), default settings and with privileges;
#   2. 60 s loopback runs of the seed 002 damper case, without and with real-time privileges:
#      tick lateness and compute time of both nodes, one-way latency, feedback age;
#   3. scale: one numerical node serving N remote sites (one process each) at 1024 Hz.
# With --bridge, instead: the site's step driving equipment over the UDP bridge. In one invocation,
#   1. the bare loop at the site's settings (SCHED_FIFO 80, locked memory, no spin);
#   2. a loopback run of examples/hardware/spring_bridge.textproto through rths-target on 127.0.0.1
#      (FIFO 70, 4096 Hz): the site's loop (lateness; compute = the whole step, the bridge's send
#      and its wait for the reply included) and the bridge's round trip (send to reply), replies
#      and misses, from site_spring.json;
#   3. the same experiment with the actuator simulated inside the site's step
#      (examples/actuator/spring_iisl_rls.textproto): the step without the bridge.
# With --console, instead: what telemetry and rths-console cost the nodes. In one invocation,
#   1. the bare loop at the nodes' settings;
#   2. --repeat loopback runs of the damper case per condition: no console; a console with a page's
#      event stream attached; that console killed (SIGKILL) a third into the run; that console
#      stalled (SIGSTOP) a third into the run. Each node's lateness p99 and compute p50/p99;
#   3. rths-console's CPU time while it serves a test of 32 remote sites (33 nodes at 50 Hz) to one
#      page's event stream.
# Usage: deploy/bench-realtime.sh [--bridge | --console] [--seconds S] [--repeat N] [--sites "8 16 32"]
#                                 [--bin DIR] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
bridge=0
console=0
repeat=3
site_counts="8 16 32"
bin=build/bin
out=runs/bench-realtime-$(date +%Y%m%d-%H%M%S)
while [ $# -gt 0 ]; do
  case "$1" in
    --bridge) bridge=1; shift ;;
    --console) console=1; shift ;;
    --repeat) repeat=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --sites) site_counts=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# The site's step with the UDP bridge (--bridge, see the top).
bridge_bench() {
  local config=examples/hardware/spring_bridge.textproto simulated=examples/actuator/spring_iisl_rls.textproto
  # One calibration serves both: the two configs differ only in the driver, the ramps and the start
  # delay, none of which the monolithic reference sees.
  local cal=$out/spring.calibration.textproto
  echo "== bare loop, ${seconds}s, the site's settings: SCHED_FIFO 80, locked memory, no spin"
  "$bin/rths-bench-loop" --seconds "$seconds" --priority 80 --lock
  "$bin/rths-numerical" calibrate $config --out "$cal" >/dev/null
  # The watchdog at 20 ms, as in the bridge's end-to-end tests: a host stall of the site is not what
  # this measures.
  "$bin/rths-target" $config --site spring --listen 127.0.0.1:0 --realtime-priority 70 --watchdog-s 0.02 \
    --out "$out" --set "site[spring].channel[0].controller.rls.calibration_path=$cal" >"$out/target.stdout" &
  local target_pid=$! target_at="" i
  trap 'kill -INT $target_pid 2>/dev/null || true' EXIT
  for i in $(seq 1 100); do
    target_at=$(sed -n 's/^listening on //p' "$out/target.stdout")
    [ -z "$target_at" ] || break
    sleep 0.1
  done
  [ -n "$target_at" ] || { echo "bench-realtime: rths-target did not come up (see $out/target_spring.log)" >&2; exit 1; }
  local run=$out/bridge
  echo "== loopback ${seconds}s through the UDP bridge to rths-target at $target_at"
  "$bin/rths-numerical" loopback $config --quiet --out "$run" --set duration_s="$seconds" \
    --set "site[spring].channel[0].controller.rls.calibration_path=$cal" \
    --set "site[spring].driver.udp_bridge.target=$target_at" || true
  kill -INT $target_pid
  wait $target_pid || true
  trap - EXIT
  echo -n "site loop:      "; json "$run/site_spring.json" exit_code lateness_p50_us lateness_p99_us lateness_max_us late_ticks overruns compute_p50_us compute_p99_us compute_max_us
  echo -n "bridge:         "; json "$run/site_spring.json" replies missed longest_missed_run round_trip_p50_us round_trip_p99_us round_trip_max_us
  echo -n "target:         "; tail -n 1 "$out/target.stdout"
  run=$out/simulated
  echo "== loopback ${seconds}s, the same experiment with the actuator simulated in the site's step"
  "$bin/rths-numerical" loopback $simulated --quiet --out "$run" --set duration_s="$seconds" \
    --set "site[spring].channel[0].controller.rls.calibration_path=$cal" || true
  echo -n "site loop:      "; json "$run/site_spring.json" exit_code lateness_p50_us lateness_p99_us lateness_max_us late_ticks overruns compute_p50_us compute_p99_us compute_max_us
  echo "outputs: $out"
}
if [ "$bridge" = 1 ]; then
  bridge_bench
  exit 0
fi

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

# rths-console on free ports with a page's event stream attached (curl), its key in $out/console.key
# (made once): sets console_pid, curl_pid and telemetry_at.
start_console() {
  local log=$1 i web=""
  [ -f "$out/console.key" ] || "$bin/rths-numerical" keygen "$out/console.key" >/dev/null
  "$bin/rths-console" --listen 127.0.0.1:0 --telemetry 127.0.0.1:0 --key "$out/console.key" >"$log" 2>&1 &
  console_pid=$!
  for i in $(seq 1 100); do
    web=$(sed -n 's/^serving //p' "$log")
    telemetry_at=$(sed -n 's/^telemetry on //p' "$log")
    [ -z "$web" ] || [ -z "$telemetry_at" ] || break
    sleep 0.1
  done
  [ -n "$telemetry_at" ] || { echo "bench-realtime: rths-console did not come up: $(cat "$log")" >&2; exit 1; }
  curl -s -N "${web}api/events" >/dev/null &
  curl_pid=$!
}
stop_console() {
  kill -CONT "$console_pid" 2>/dev/null || true
  kill -INT "$console_pid" "$curl_pid" 2>/dev/null || true
  wait "$console_pid" "$curl_pid" 2>/dev/null || true
}
# utime + stime of a process in seconds.
cpu_s() {
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

# What telemetry and the console cost the nodes (--console, see the top).
console_bench() {
  local damper=examples/seed002/damper_3v.textproto condition r run
  local privileged=(--set realtime.priority=80 --set realtime.lock_memory=true --set realtime.spin_s=0.00015)
  echo "== bare loop, ${seconds}s, SCHED_FIFO 80, locked memory, 150 us spin"
  "$bin/rths-bench-loop" --seconds "$seconds" --priority 80 --lock --spin-us 150
  for condition in none live killed stalled; do
    for r in $(seq 1 "$repeat"); do
      run=$out/$condition-$r
      local console_flags=()
      if [ "$condition" != none ]; then
        start_console "$out/console-$condition-$r.log"
        console_flags=(--console "$telemetry_at" --console-key "$out/console.key")
      fi
      "$bin/rths-numerical" loopback $damper --quiet --no-plots --out "$run" --set duration_s="$seconds" \
        "${privileged[@]}" "${console_flags[@]+"${console_flags[@]}"}" &
      local run_pid=$!
      if [ "$condition" = killed ] || [ "$condition" = stalled ]; then
        sleep "$(awk -v s="$seconds" 'BEGIN { print 2 + s / 3 }')"
        if [ "$condition" = killed ]; then kill -KILL "$console_pid"; else kill -STOP "$console_pid"; fi
      fi
      wait $run_pid || true
      [ "$condition" = none ] || stop_console
      echo -n "$condition $r numerical: "; json "$run/summary.json" exit_code lateness_p99_us compute_p50_us compute_p99_us
      echo -n "$condition $r site:      "; json "$run/site_purdue.json" lateness_p99_us compute_p50_us compute_p99_us
    done
  done
  local n=32
  run=$out/scale-console-$n
  mkdir -p "$run"
  scale_config "$n" "$run.textproto"
  start_console "$out/console-scale.log"
  local before after began ended
  before=$(cpu_s "$console_pid")
  began=$(date +%s.%N)
  echo "== rths-console serving $n remote sites, 20 s, privileged"
  "$bin/rths-numerical" loopback "$run.textproto" --quiet --no-plots --out "$run" --set duration_s=20 \
    --set realtime.priority=80 --set realtime.spin_s=0 --console "$telemetry_at" --console-key "$out/console.key" || true
  after=$(cpu_s "$console_pid")
  ended=$(date +%s.%N)
  stop_console
  echo -n "numerical loop: "; json "$run/summary.json" exit_code run_time_s lateness_p99_us compute_p99_us
  echo "console CPU: $(awk -v a="$after" -v b="$before" -v s="$began" -v e="$ended" \
    'BEGIN { printf "%.2f s in %.1f s of wall clock (%.1f %% of one core)", a - b, e - s, 100 * (a - b) / (e - s) }')" \
    "($(grep -o '[0-9]* telemetry datagrams accepted' "$out/console-scale.log" || echo "see $out/console-scale.log"))"
  echo "outputs: $out"
}

if [ "$console" = 1 ]; then
  console_bench
  exit 0
fi

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
