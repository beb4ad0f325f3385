#!/usr/bin/env bash
# Runs every libFuzzer harness (tests/fuzz/fuzz_*.c) for a bounded time and prints, per harness, the
# executions, the corpus grown and the findings (crashing inputs, kept in WORK/findings/).
#   bench/fuzz.sh [SECONDS_PER_HARNESS (default 60)] [HARNESS...]    e.g. bench/fuzz.sh 300 fuzz_cli
# WORK is $ZP_FUZZ_WORK or /tmp/zplan-fuzz; its corpora persist, so a later run continues where this one
# stopped. A finding worth keeping goes to tests/fuzz/regressions/<harness>/ once fixed (the smoke test
# replays it). Needs clang and libclang-rt-14-dev (scripts/bootstrap installs them).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
work=${ZP_FUZZ_WORK:-/tmp/zplan-fuzz}
mkdir -p "$work/findings"
"$root/tests/fuzz/build.sh" "$work/bin" "$root" || exit $?
if [ $# -gt 0 ]; then harnesses=("$@"); else
  harnesses=(); for f in "$root"/tests/fuzz/fuzz_*.c; do harnesses+=("$(basename "$f" .c)"); done
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
printf '%-15s %12s %10s %8s %9s  %s\n' harness executions exec/s corpus findings "(${secs} s each, $(nproc) cores)"
total_find=0
for h in "${harnesses[@]}"; do
  exe="$work/bin/$h"
  [ -x "$exe" ] || { echo "no harness $h" >&2; exit 2; }
  corpus="$work/corpus/$h"
  mkdir -p "$corpus"
  # seeds listed in tests/fuzz/seeds.from (fixtures of other tests) join the scratch corpus
  while read -r fh fpath; do
    [ "$fh" = "$h" ] && cp "$root/$fpath" "$corpus/"
  done < <(grep -v '^#' "$root/tests/fuzz/seeds.from")
  before=$(ls "$work/findings" | grep -c "^$h-" || true)
  dict=()
  [ -f "$root/tests/fuzz/dicts/$h.dict" ] && dict=(-dict="$root/tests/fuzz/dicts/$h.dict")
  # -fork: a finding does not end the run; every crash, leak, timeout and OOM is kept
  "$exe" "${dict[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$secs" \
    -timeout=30 -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$work/findings/$h-" \
    "$corpus" "$root/tests/fuzz/seeds/$h" >"$work/$h.log" 2>&1
  execs=$(grep -Eo 'exec/s: [0-9]+|#[0-9]+' "$work/$h.log" | grep '^#' | tail -1 | tr -d '#')
  stat=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log" | tail -1)
  execs=${stat:-${execs:-0}}
  after=$(ls "$work/findings" | grep -c "^$h-" || true)
  found=$((after - before))
  total_find=$((total_find + found))
  printf '%-15s %12s %10s %8s %9s\n' "$h" "$execs" "$((execs / (secs > 0 ? secs : 1)))" "$(ls "$corpus" | wc -l)" "$found"
  if [ "$found" -gt 0 ]; then
    ls -t "$work/findings" | grep "^$h-" | head -"$found" | sed "s|^|    $work/findings/|"
    grep -E "ERROR: |runtime error|invariant broken" "$work/$h.log" | sort | uniq -c | sort -rn | head -5 | sed 's/^/    /'
  fi
done
echo "findings: $total_find (logs: $work/*.log)"
[ "$total_find" -eq 0 ]
