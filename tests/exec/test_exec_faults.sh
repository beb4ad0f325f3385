#!/usr/bin/env bash
# Distributed faults in `zplan exec` under mpirun (issue 7): ranks started with different options are refused
# at start; a rank killed with -9 or stopped (a hang) ends the whole job within a bounded time (the watchdog's
# --timeout plus a few seconds) with a message naming the rank — never a silent hang.
# Usage: test_exec_faults.sh ZPLAN      (skipped, exit 77, without mpirun)
set -u
Z="$1"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
pass=0 fail=0 tried=0
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
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

# fault WHAT SIGNAL: 3 ranks train for long; SIGNAL goes to rank 1 once it is training; times the job's end
fault() {
  local what="$1" sig="$2"
  tried=$((tried + 1))
  rm -rf "$T/pid" && mkdir -p "$T/pid"
  mpirun -np 3 sh -c "echo \$\$ >\"$T/pid/\$OMPI_COMM_WORLD_RANK\"; exec \"$Z\" exec --model mini --stage 2 --steps 100000 --timeout $TIMEOUT" \
    >"$T/out" 2>"$T/err" &
  local job=$! i
  for i in $(seq 1 100); do [ -s "$T/pid/1" ] && break; sleep 0.1; done
  sleep 3 # into the training
  local pid
  pid=$(cat "$T/pid/1" 2>/dev/null)
  [ -n "$pid" ] || { ko "$what: rank 1 did not start"; kill -9 $job; return; }
  local t0=$SECONDS
  kill "-$sig" "$pid"
  local waited=0
  while kill -0 $job 2>/dev/null && [ $waited -lt $((BOUND * 10 + 100)) ]; do sleep 0.1; waited=$((waited + 1)); done
  local took=$((SECONDS - t0))
  if kill -0 $job 2>/dev/null; then
    ko "$what: the job still runs $took s after the fault (silent hang)"
    kill -9 $job; pkill -9 -P $job 2>/dev/null; kill -CONT "$pid" 2>/dev/null; kill -9 "$pid" 2>/dev/null
    return
  fi
  wait $job
  local rc=$?
  local msg
  msg=$(grep -E -m1 'rank 1 (has not been heard|made no progress)|process rank 1 with PID .* (exited on signal|killed)' "$T/err")
  if [ $rc -ne 0 ] && [ $took -le $BOUND ] && [ -n "$msg" ]; then
    pass=$((pass + 1))
    printf '  fault %-48s -> job ended in %d s (bound %d s), exit %d: %s\n' "$what" $took $BOUND $rc "$(echo "$msg" | cut -c1-110)"
  else
    ko "$what: rc=$rc after $took s (bound $BOUND s), message naming rank 1: '${msg}'; stderr: $(grep -v '^-' "$T/err" | head -5)"
  fi
  kill -CONT "$pid" 2>/dev/null
}
echo "== a rank that dies or hangs ends the job"
fault "rank 1 of 3 killed (kill -9)" KILL
fault "rank 1 of 3 hangs (SIGSTOP), --timeout $TIMEOUT" STOP

echo "bad inputs tried: $tried"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
