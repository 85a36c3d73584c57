#!/usr/bin/env bash
# Real-time benchmark figures for docs/performance.md (its real-time sections):
#   1. a bare clock_nanosleep loop (rths-bench-loop), default settings and with privileges;
#   2. 60 s loopback runs of the seed 002 damper case, without and with real-time privileges:
#      tick lateness and compute time of both nodes, one-way latency, feedback age;
#   3. scale: one numerical node serving N remote sites (one process each) at 1024 Hz, each beside
#      this host's floor of the same exchange (rths-bench-loop --links N).
# With --bridge, instead: the site's step driving equipment over the UDP bridge, with the example's
# defaults (reply_timeout_s, max_missed_replies, rths-target's watchdog). In one invocation,
#   1. the bare loop at the site's settings (SCHED_FIFO 80, locked memory, no spin);
#   2. --repeat loopback runs of examples/hardware/spring_bridge.textproto through rths-target on
#      127.0.0.1 (FIFO 70, 4096 Hz, its default watchdog): the site's loop (lateness; compute = the
#      whole step, the bridge's send and its wait for the reply included) and the bridge's round trip
#      (send to reply), replies and misses, from site_spring.json; the target's tick lateness and
#      late ticks, whether its watchdog tripped or the site disarmed it, and the longest time between
#      two new counters at the target while the site was sending (what the watchdog must cover);
#   3. the same experiment with the actuator simulated inside the site's step
#      (examples/actuator/spring_iisl_rls.textproto): the step without the bridge;
#   4. with --kill, a run whose site is killed (SIGKILL) 3 s into the test: the target's report of
#      its watchdog's trip, and the wall time from the kill to the trip's line.
# --load N adds N busy loops at nice 10 beside every run of --bridge (an explicit load on top of
# whatever else the machine runs).
# With --console, instead: what telemetry and rths-console cost the nodes. In one invocation,
#   1. the bare loop at the nodes' settings;
#   2. --repeat loopback runs of the damper case per condition: no console; a console with a page's
#      event stream attached; that console killed (SIGKILL) a third into the run; that console
#      stalled (SIGSTOP) a third into the run. Each node's lateness p99 and compute p50/p99;
#   3. rths-console's CPU time while it serves a test of 32 remote sites (33 nodes at 50 Hz) to one
#      page's event stream.
# Usage: deploy/bench-realtime.sh [--bridge [--kill] [--load N] | --console] [--seconds S] [--repeat N]
#                                 [--sites "8 16 32"] [--bin DIR] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
bridge=0
kill_site=0
load=0
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
    --kill) kill_site=1; shift ;;
    --load) load=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# The longest time between two new counters at the target while a site was sending, from its CSV
# (t_s, counter, ...): ms, and the count of new counters.
command_gaps() {
  awk -F, 'NR > 1 && $2 != last { if (seen) { gap = $1 - t; if (gap > longest) longest = gap }; t = $1; last = $2; seen = 1; n++ }
           END { printf "longest_gap_between_new_counters_ms=%.3f new_counters=%d\n", 1e3 * longest, n }' "$1"
}

# rths-target for the bridge runs on a free port: sets target_pid and target_at.
start_target() {
  local dir=$1 cal=$2 i
  mkdir -p "$dir"
  "$bin/rths-target" examples/hardware/spring_bridge.textproto --site spring --listen 127.0.0.1:0 \
    --realtime-priority 70 --out "$dir" --set "site[spring].channel[0].controller.rls.calibration_path=$cal" \
    >"$dir/target.stdout" &
  target_pid=$!
  target_at=""
  for i in $(seq 1 100); do
    target_at=$(sed -n 's/^listening on //p' "$dir/target.stdout")
    [ -z "$target_at" ] || break
    sleep 0.1
  done
  [ -n "$target_at" ] || { echo "bench-realtime: rths-target did not come up (see $dir)" >&2; exit 1; }
}

# The site's step with the UDP bridge (--bridge, see the top).
bridge_bench() {
  local config=examples/hardware/spring_bridge.textproto simulated=examples/actuator/spring_iisl_rls.textproto
  # One calibration serves both: the two configs differ only in the driver, the ramps and the start
  # delay, none of which the monolithic reference sees.
  local cal=$out/spring.calibration.textproto load_pids=() r i
  echo "== bare loop, ${seconds}s, the site's settings: SCHED_FIFO 80, locked memory, no spin"
  "$bin/rths-bench-loop" --seconds "$seconds" --priority 80 --lock
  "$bin/rths-numerical" calibrate $config --out "$cal" >/dev/null
  for i in $(seq 1 "$load"); do
    nice -n 10 sh -c 'while :; do :; done' &
    load_pids+=($!)
  done
  trap 'kill ${load_pids[*]+"${load_pids[@]}"} 2>/dev/null || true; kill -INT ${target_pid:-} 2>/dev/null || true' EXIT
  [ "$load" = 0 ] || echo "== with $load busy loops at nice 10 beside every run"
  echo "== load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
  for r in $(seq 1 "$repeat"); do
    local run=$out/bridge-$r
    start_target "$run" "$cal"
    echo "== $r: loopback ${seconds}s through the UDP bridge to rths-target at $target_at (the example's defaults)"
    "$bin/rths-numerical" loopback $config --quiet --out "$run" --set duration_s="$seconds" \
      --set "site[spring].channel[0].controller.rls.calibration_path=$cal" \
      --set "site[spring].driver.udp_bridge.target=$target_at" || true
    sleep 0.5  # the disarm, or the watchdog's time
    kill -INT $target_pid
    wait $target_pid || true
    echo -n "site loop:      "; json "$run/site_spring.json" exit_code lateness_p50_us lateness_p99_us lateness_max_us late_ticks overruns compute_p50_us compute_p99_us compute_max_us
    echo -n "bridge:         "; json "$run/site_spring.json" replies missed longest_missed_run round_trip_p50_us round_trip_p99_us round_trip_max_us disarm
    echo -n "target:         "; tail -n 1 "$run/target.stdout"
    echo -n "target gaps:    "; command_gaps "$run/target_spring.csv"
    echo "load average:   $(cut -d' ' -f1-3 /proc/loadavg)"
  done
  if [ "$kill_site" = 1 ]; then
    local run=$out/killed
    start_target "$run" "$cal"
    echo "== a site killed (SIGKILL) 3 s into the test"
    "$bin/rths-physical" serve $config --site spring --listen 127.0.0.1:0 --out "$run/site" --quiet \
      --set "site[spring].channel[0].controller.rls.calibration_path=$cal" \
      --set "site[spring].driver.udp_bridge.target=$target_at" --set realtime.insecure=true >"$run/site.stdout" 2>&1 &
    local site_pid=$! site_at=""
    for i in $(seq 1 100); do
      site_at=$(sed -n 's/^listening on //p' "$run/site.stdout")
      [ -z "$site_at" ] || break
      sleep 0.1
    done
    "$bin/rths-numerical" run $config --realtime --quiet --out "$run/run" --set duration_s=30 \
      --set "site[spring].channel[0].controller.rls.calibration_path=$cal" --set realtime.insecure=true \
      --set "site[spring].address=$site_at" >/dev/null 2>&1 &
    local numerical_pid=$!
    sleep 5.2
    kill -KILL $site_pid
    local killed_ns tripped_ns
    killed_ns=$(date +%s%N)
    for i in $(seq 1 2000); do
      grep -q '^watchdog: ' "$run/target.stdout" && break
      sleep 0.001
    done
    tripped_ns=$(date +%s%N)
    wait $numerical_pid || true
    kill -INT $target_pid
    wait $target_pid || true
    echo -n "watchdog:       "; grep '^watchdog: ' "$run/target.stdout" || echo "did not trip"
    echo "wall time from the kill to the trip's line: $(( (tripped_ns - killed_ns) / 1000000 )) ms (the line is printed within 10 ms of the trip)"
  fi
  kill ${load_pids[*]+"${load_pids[@]}"} 2>/dev/null || true
  trap - EXIT
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
  # This host's floor under the node's per-site cost, measured beside it: one datagram sent and
  # drained per link and tick over 127.0.0.1 (the kernel delivers loopback in the sender's call),
  # through a socket per link and through one socket for all, as the numerical node exchanges.
  echo "== this host's UDP exchange on $n links, 5 s, privileged: a socket per link"
  "$bin/rths-bench-loop" --seconds 5 --priority 80 --links "$n" | tail -n 1
  echo "== this host's UDP exchange on $n links, 5 s, privileged: one socket for the node's ends"
  "$bin/rths-bench-loop" --seconds 5 --priority 80 --links "$n" --shared-socket | tail -n 1
  echo "== scale: $n remote sites, 20 s, privileged"
  "$bin/rths-numerical" loopback "$run.textproto" --quiet --out "$run" --set duration_s=20 \
    --set realtime.priority=80 --set realtime.spin_s=0 || true
  echo -n "numerical loop: "; json "$run/summary.json" exit_code lateness_p50_us lateness_p99_us lateness_p999_us lateness_max_us late_ticks compute_p50_us compute_p99_us
done
echo "outputs: $out"
