#!/usr/bin/env bash
# Distributed faults in `zplan calibrate` under mpirun (issue 7): ranks started with different options are
# refused at start; a rank killed with -9 or stopped (a hang) ends the whole job within a bounded time
# (the watchdog's --timeout plus a few seconds) with a message naming the rank — never a silent hang.
# Usage: test_faults.sh ZPLAN      (skipped, exit 77, without mpirun)
set -u
Z="$1"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# shellcheck source=../fault_lib.sh
. "$(dirname "$0")/../fault_lib.sh"
TIMEOUT=10  # the watchdog's --timeout in these runs (the sanitizer build measures slower)
BOUND=35    # seconds the job may take to end after the fault: TIMEOUT + 2 heartbeats + mpirun's teardown, with margin

echo "== ranks with different options are refused at start"
tried=$((tried + 1))
timeout 60 mpirun -np 3 sh -c "exec \"$Z\" calibrate --quick --reps \$((1 + OMPI_COMM_WORLD_RANK % 2)) -o \"$T/p.json\"" \
  >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'rank 1 started with a different calibrate configuration than rank 0' "$T/err" && [ ! -e "$T/p.json" ]; then
  pass=$((pass + 1))
  printf '  bad input %-44s -> exit %d: %s\n' "rank 1 with --reps 2, others --reps 1" $rc "$(grep -m1 'zplan calibrate:' "$T/err" | cut -c18-130)"
else
  ko "different options: rc=$rc: $(grep -v '^-' "$T/err" | head -3)"
fi

echo "== a rank that dies or hangs ends the job"
cal="\"$Z\" calibrate --quick --timeout $TIMEOUT -o \"$T/p.json\""
fault "rank 1 of 3 killed (kill -9)" KILL "$cal"
fault "rank 1 of 3 hangs (SIGSTOP), --timeout $TIMEOUT" STOP "$cal"
[ ! -e "$T/p.json" ] || ko "a failed calibration left a profile behind"

echo "bad inputs tried: $tried"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
