#!/usr/bin/env bash
# Fuzz smoke test (meson test suite 'fuzz'): builds the libFuzzer harnesses with clang (tests/fuzz/build.sh),
# replays every kept crashing input (tests/fuzz/regressions/<harness>/*: each must now pass), then fuzzes
# each harness for a few seconds from its seed corpus (tests/fuzz/seeds/<harness>/).
#   tests/fuzz/smoke.sh WORKDIR [SRCROOT]      ZP_FUZZ_SECONDS (default 3), ZP_FUZZ_SEED (default 1)
# Exit 77 (skipped) when clang or libFuzzer is missing; 1 on any finding, with the input kept in WORKDIR.
set -uo pipefail
work=${1:?usage: smoke.sh WORKDIR [SRCROOT]}
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
secs=${ZP_FUZZ_SECONDS:-3}
seed=${ZP_FUZZ_SEED:-1}
mkdir -p "$work"
"$root/tests/fuzz/build.sh" "$work/bin" "$root"
rc=$?
if [ $rc -eq 77 ]; then echo "fuzz smoke: SKIPPED (no clang with libFuzzer)"; exit 77; fi
[ $rc -eq 0 ] || { echo "fuzz smoke: building the harnesses failed"; exit 1; }

# ASan: no leak of the test process itself is tolerated; UBSan: stop at the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fail=0 total_execs=0 total_replays=0
for src in "$root"/tests/fuzz/fuzz_*.c; do
  h=$(basename "$src" .c)
  exe="$work/bin/$h"
  # 1. regressions: every kept crashing input, one run each
  regs=("$root/tests/fuzz/regressions/$h"/*)
  for f in "${regs[@]}"; do
    [ -f "$f" ] || continue
    total_replays=$((total_replays + 1))
    if "$exe" -timeout=60 "$f" >"$work/$h.replay.log" 2>&1; then
      echo "bad input $h/regressions/$(basename "$f") -> handled (was a crash)"
    else
      echo "bad input $h/regressions/$(basename "$f") -> STILL FAILS:"; tail -20 "$work/$h.replay.log" | sed 's/^/    /'
      fail=1
    fi
  done
  # 2. a few seconds of fuzzing from the seeds (new inputs go to a scratch corpus, the seeds stay as they are)
  corpus="$work/corpus/$h"
  rm -rf "$corpus" && mkdir -p "$corpus" "$work/findings"
  # seeds listed in tests/fuzz/seeds.from (fixtures of other tests) join the scratch corpus
  while read -r fh fpath; do
    [ "$fh" = "$h" ] && cp "$root/$fpath" "$corpus/"
  done < <(grep -v '^#' "$root/tests/fuzz/seeds.from")
  t=$secs
  [ "$h" = fuzz_platform ] && t=$((secs > 2 ? secs : 2))
  "$exe" -seed="$seed" -max_total_time="$t" -timeout=60 -rss_limit_mb=2560 -print_final_stats=1 \
    -artifact_prefix="$work/findings/$h-" "$corpus" "$root/tests/fuzz/seeds/$h" >"$work/$h.log" 2>&1
  frc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log" | tail -1)
  execs=${execs:-0}
  total_execs=$((total_execs + execs))
  nseeds=$(( $(find "$root/tests/fuzz/seeds/$h" -type f | wc -l) + $(grep -c "^$h " "$root/tests/fuzz/seeds.from") ))
  if [ $frc -eq 0 ]; then
    echo "fuzz $h: $execs executions in ${t}s from $nseeds seeds, 0 findings"
  else
    echo "fuzz $h: FINDING after $execs executions (exit $frc); input kept in $work/findings/:"
    ls "$work/findings" | grep "^$h-" | sed 's/^/    /'
    grep -E "ERROR|runtime error|invariant|SUMMARY" "$work/$h.log" | head -8 | sed 's/^/    /'
    fail=1
  fi
done
echo "bad inputs tried: $((total_execs + total_replays)) ($total_execs fuzzer executions, $total_replays kept crashing inputs replayed)"
exit $fail
