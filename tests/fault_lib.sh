# Shared by the distributed-fault tests (tests/hardening/test_faults.sh for `zplan calibrate`,
# tests/exec/test_exec_faults.sh for `zplan exec`). Source it after setting T (a scratch directory),
# BOUND (seconds the job may take to end after the fault) and the counters pass, fail, tried.
#
# fault WHAT SIGNAL COMMAND...: starts COMMAND under `mpirun -np 3` (COMMAND may use $OMPI_COMM_WORLD_RANK;
# it runs through sh -c), sends SIGNAL to rank 1 three seconds into the run, and checks that the job ends
# within BOUND seconds with an error and a message naming rank 1 — never a silent hang.
fault_ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
fault() {
  local what="$1" sig="$2"
  shift 2
  tried=$((tried + 1))
  rm -rf "$T/pid" && mkdir -p "$T/pid"
  mpirun -np 3 sh -c "echo \$\$ >\"$T/pid/\$OMPI_COMM_WORLD_RANK\"; exec $*" >"$T/out" 2>"$T/err" &
  local job=$! i
  for i in $(seq 1 100); do [ -s "$T/pid/1" ] && break; sleep 0.1; done
  sleep 3 # into the work
  local pid
  pid=$(cat "$T/pid/1" 2>/dev/null)
  [ -n "$pid" ] || { fault_ko "$what: rank 1 did not start"; kill -9 $job; return; }
  local t0=$SECONDS
  kill "-$sig" "$pid"
  local waited=0
  while kill -0 $job 2>/dev/null && [ $waited -lt $((BOUND * 10 + 100)) ]; do sleep 0.1; waited=$((waited + 1)); done
  local took=$((SECONDS - t0))
  if kill -0 $job 2>/dev/null; then
    fault_ko "$what: the job still runs $took s after the fault (silent hang)"
    kill -9 $job; pkill -9 -P $job 2>/dev/null; kill -CONT "$pid" 2>/dev/null; kill -9 "$pid" 2>/dev/null
    return
  fi
  wait $job
  local rc=$?
  local msg
  msg=$(grep -E -m1 'rank 1 (has not been heard|made no progress)|process rank 1 with PID .* (exited on signal|killed)' "$T/err")
  if [ $rc -ne 0 ] && [ $took -le $BOUND ] && [ -n "$msg" ]; then
    pass=$((pass + 1))
    printf '  bad input %-44s -> job ended in %d s (bound %d s), exit %d: %s\n' "$what" $took $BOUND $rc "$(echo "$msg" | cut -c1-110)"
  else
    fault_ko "$what: rc=$rc after $took s (bound $BOUND s), message naming rank 1: '${msg}'; stderr: $(grep -v '^-' "$T/err" | head -5)"
  fi
  kill -CONT "$pid" 2>/dev/null
}
