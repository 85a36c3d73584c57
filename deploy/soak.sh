#!/usr/bin/env bash
# A long real-time run on 127.0.0.1 through rths-relay with bursty loss and jitter, watched from the
# outside: the resident memory of each process near the start and near the end (no growth), the
# steps run against the steps planned and the wall time against the test's length (no drift), and
# every record complete (one row per step, contiguous). Prints one table and exits nonzero when a
# check fails.
set -euo pipefail
SELF=$(basename "$0")
# shellcheck source=deploy/lib/messages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/messages.sh"
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: deploy/soak.sh [--minutes M] [--loss P] [--jitter-ms J] [--bin DIR] [--out DIR]

Runs examples/seed002/spring.textproto (30 % model error, exact otherwise) for M minutes
(default 10) of a synthetic ground motion: rths-physical, rths-relay (each leg 10 ms, +-J ms
jitter (default 2), Gilbert-Elliott loss of long-run rate P (default 0.05) in bursts of 5) and
rths-numerical run --realtime, each with a fresh key. Samples each process's RSS 20 s after the
start and 20 s before the end; checks steps, wall time and the rows of numerical.csv and
site_spring.csv. Output in DIR (default runs/soak-<date>-<time>).

Options:
  --minutes M    Test length in minutes (default 10).
  --loss P       Long-run loss rate of each leg, 0 <= P < 1 (default 0.05).
  --jitter-ms J  Uniform jitter of each leg in ms (default 2).
  --bin DIR      Folder of the executables (default build/bin).
  --out DIR      Output folder.
  -h, --help     This text.
EOF
}

minutes=10
loss=0.05
jitter_ms=2
bin=build/bin
out=runs/soak-$(date +%Y%m%d-%H%M%S)
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage && exit 0 ;;
    --minutes | --loss | --jitter-ms | --bin | --out)
      need_value "$@"
      case "$1" in
        --minutes) minutes=$2 ;;
        --loss) loss=$2 ;;
        --jitter-ms) jitter_ms=$2 ;;
        --bin) bin=$2 ;;
        --out) out=$2 ;;
      esac
      shift 2
      ;;
    *) bad_usage "unknown option '$1'" ;;
  esac
done
if ! [[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] || ! awk "BEGIN{exit !($minutes > 0)}"; then
  bad_usage "--minutes: expected a positive number, got '$minutes'"
fi
[[ $loss =~ ^0?[.][0-9]+$|^0$ ]] || bad_usage "--loss: expected a rate 0 <= P < 1, got '$loss'"
[[ $jitter_ms =~ ^[0-9]+([.][0-9]+)?$ ]] || bad_usage "--jitter-ms: expected milliseconds >= 0, got '$jitter_ms'"
for exe in rths-numerical rths-physical rths-relay; do
  [[ -x $bin/$exe ]] || die "no $exe in $bin (build first, or give --bin DIR)"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

seconds=$(awk "BEGIN{printf \"%d\", $minutes * 60}")
# Gilbert-Elliott: bad-state loss 1, mean burst 5 packets (p_bad_to_good 0.2), long-run rate P:
# pi_bad = p_gb / (p_gb + 0.2) = P.
p_gb=$(awk "BEGIN{printf \"%.6f\", $loss * 0.2 / (1 - $loss)}")
jitter_s=$(awk "BEGIN{printf \"%.6f\", $jitter_ms / 1000}")
config=examples/seed002/spring.textproto
"$bin/rths-numerical" keygen "$out/spring.key" >/dev/null
sets=(--set "site[spring].key_file=$out/spring.key"
  --set "duration_s=$seconds"
  --set "ground_motion.synthetic.duration_s=$((seconds + 5))"
  --set "site[0].channel[0].prediction.spring.stiffness_n_per_m=72584.72")
for leg in forward backward; do
  sets+=(--set "site[0].link.$leg={ delay_s: 0.01 jitter_s: $jitter_s seed: $((RANDOM + 1)) loss { gilbert_elliott { p_good_to_bad: $p_gb p_bad_to_good: 0.2 } } }")
done

note "$minutes min at 1024 Hz through the relay (loss $loss in bursts of 5, jitter +-$jitter_ms ms); output in $out"
"$bin/rths-physical" serve "$config" --site spring --listen 127.0.0.1:0 --out "$out" --quiet --wait 60 \
  "${sets[@]}" >"$out/site.stdout" 2>"$out/site.stderr" &
site_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$out/site.stdout" 2>/dev/null && break; sleep 0.1; done
site_at=$(sed -n 's/^listening on //p' "$out/site.stdout")
[[ -n $site_at ]] || die "the site did not start (see $out/site.stderr)"
"$bin/rths-relay" "$config" --site spring --listen 127.0.0.1:0 --to "$site_at" --out "$out" "${sets[@]}" \
  >"$out/relay.stdout" 2>"$out/relay.stderr" &
relay_pid=$!
for _ in $(seq 100); do grep -q "relaying on" "$out/relay.stdout" 2>/dev/null && break; sleep 0.1; done
relay_at=$(sed -n 's/^relaying on //p' "$out/relay.stdout")
[[ -n $relay_at ]] || die "the relay did not start (see $out/relay.stderr)"
started=$(date +%s.%N)
"$bin/rths-numerical" run "$config" --realtime --out "$out" --quiet --set "site[spring].address=$relay_at" \
  "${sets[@]}" >"$out/numerical.stdout" 2>"$out/numerical.stderr" &
numerical_pid=$!

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
sleep 20
declare -A rss_start rss_end
for p in numerical:$numerical_pid site:$site_pid relay:$relay_pid; do rss_start[${p%%:*}]=$(rss "${p#*:}"); done
sleep $((seconds > 40 ? seconds - 40 : 1))
for p in numerical:$numerical_pid site:$site_pid relay:$relay_pid; do rss_end[${p%%:*}]=$(rss "${p#*:}"); done

rc_numerical=0 && wait "$numerical_pid" || rc_numerical=$?
ended=$(date +%s.%N)
rc_site=0 && wait "$site_pid" || rc_site=$?
rc_relay=0 && wait "$relay_pid" || rc_relay=$?

rows() { [[ -f $1 ]] && echo $(($(wc -l <"$1") - 1)) || echo 0; }
contiguous() {  # every row one period after the last, from t = 0
  awk -F, 'NR > 1 { if (($1 - (NR - 2) / 1024.0) ^ 2 > 1e-18) { bad++ } } END { print bad + 0 }' "$1" 2>/dev/null || echo -1
}
planned=$((seconds * 1024 + 1))
n_rows=$(rows "$out/numerical.csv")
s_rows=$(rows "$out/site_spring.csv")
wall=$(awk "BEGIN{printf \"%.3f\", $ended - $started}")
# 64-bit counts are quoted strings in the summaries (proto/results.proto): "steps": "614401".
steps=$(grep -o '"steps": "*[0-9]*' "$out/summary.json" | head -1 | grep -o '[0-9]*$' || echo 0)
late=$(grep -o '"late_ticks": "*[0-9]*' "$out/summary.json" | head -1 | grep -o '[0-9]*$' || echo -1)
loss_seen=$(grep -o '"loss_rate": [0-9.e-]*' "$out/summary.json" | head -1 | sed 's/.*: //' || echo nan)

failed=0
check() {  # check DESCRIPTION CONDITION
  if eval "$2"; then printf '  ok    %s\n' "$1"; else printf '  FAIL  %s\n' "$1"; failed=1; fi
}
printf '\nsoak: %s min, loss %s, jitter +-%s ms, output %s\n' "$minutes" "$loss" "$jitter_ms" "$out"
printf '%-10s %12s %12s %10s %6s\n' process "RSS start kB" "RSS end kB" growth exit
for p in numerical site relay; do
  rc_var=rc_$p
  printf '%-10s %12s %12s %9s%% %6s\n' "$p" "${rss_start[$p]}" "${rss_end[$p]}" \
    "$(awk "BEGIN{s=${rss_start[$p]}; e=${rss_end[$p]}; printf \"%.2f\", (s > 0 ? 100 * (e - s) / s : 0)}")" "${!rc_var}"
done
printf 'steps %s of %s planned; wall %s s for a %s s test (+ start delay); late ticks %s; loss seen %s\n' \
  "$steps" "$planned" "$wall" "$seconds" "$late" "$loss_seen"
printf 'rows: numerical.csv %s, site_spring.csv %s\n' "$n_rows" "$s_rows"
check "every node exited 0" "[[ $rc_numerical == 0 && $rc_site == 0 && $rc_relay == 0 ]]"
check "every step ran" "[[ $steps == $planned ]]"
check "no memory growth (RSS within 1 MB of its start)" \
  "[[ $((rss_end[numerical] - rss_start[numerical])) -le 1024 && $((rss_end[site] - rss_start[site])) -le 1024 ]]"
check "no drift (wall time within 2 s of the test's length, start included)" \
  "awk 'BEGIN{exit !($wall - $seconds < 2.0)}'"
check "complete records (one row per step, contiguous)" \
  "[[ $n_rows == $planned && $s_rows == $planned && $(contiguous "$out/numerical.csv") == 0 && $(contiguous "$out/site_spring.csv") == 0 ]]"
rm -f "$out/spring.key"
exit "$failed"
