#!/usr/bin/env bash
# Distributed faults in `zplan exec` under mpirun (issue 7): ranks started with different options are refused
# at start; a rank killed with -9 or stopped (a hang) ends the whole job within a bounded time (the watchdog's
# --timeout plus a few seconds) with a message naming the rank — never a silent hang.
# Usage: test_exec_faults.sh ZPLAN      (skipped, exit 77, without mpirun)
set -u
Z="$1"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# shellcheck source=../fault_lib.sh
. "$(dirname "$0")/../fault_lib.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
TIMEOUT=8   # the watchdog's --timeout in these runs
BOUND=30    # seconds the job may take to end after the fault: TIMEOUT + 2 heartbeats + mpirun's teardown, margin

echo "== ranks with different options are refused at start"
tried=$((tried + 1))
timeout 60 mpirun -np 3 sh -c "exec \"$Z\" exec --model tiny --steps \$((2 + OMPI_COMM_WORLD_RANK % 2))" \
  >"$T/out" 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'rank 1 started with a different exec configuration than rank 0' "$T/err"; then
  pass=$((pass + 1))
  printf '  bad input %-44s -> exit %d: %s\n' "rank 1 with --steps 3, others --steps 2" $rc \
    "$(grep -m1 'zplan exec:' "$T/err" | cut -c1-120)"
else
  ko "different options: rc=$rc: $(grep -v '^-' "$T/err" | head -3)"
fi

echo "== a rank that dies or hangs ends the job"
train="\"$Z\" exec --model mini --stage 2 --steps 100000 --timeout $TIMEOUT"
fault "rank 1 of 3 killed (kill -9)" KILL "$train"
fault "rank 1 of 3 hangs (SIGSTOP), --timeout $TIMEOUT" STOP "$train"

echo "bad inputs tried: $tried"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
