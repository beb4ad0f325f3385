# Shared by the tests that run zplan under mpirun and count what they tried (tests/hardening/test_faults.sh
# for `zplan calibrate`, tests/exec/test_exec_faults.sh for `zplan exec`, tests/cli/test_sweep.sh). Sourcing it
# makes the scratch directory T (removed on exit), lets mpirun run as root and oversubscribe the cores, and sets
# the counters pass, fail and tried to 0; ko counts a failure. Set BOUND (seconds the job may take to end after
# the fault) before calling fault.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
pass=0 fail=0 tried=0
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }

# fault_signal WHAT SIGNAL JOB TENTHS: sends SIGNAL to rank 1 of JOB (mpirun in the background; each rank has
# written its PID to $T/pid/RANK) and waits up to TENTHS tenths of a second for JOB to end. Sets fault_pid,
# fault_took (seconds from the signal) and fault_rc (JOB's exit status). Returns 1, the failure counted and
# the job killed, when rank 1 never started or the job still runs (a silent hang).
fault_signal() {
  local what="$1" sig="$2" job="$3" tenths="$4"
  fault_pid=$(cat "$T/pid/1" 2>/dev/null)
  [ -n "$fault_pid" ] || { ko "$what: rank 1 did not start"; kill -9 "$job"; return 1; }
  local t0=$SECONDS waited=0
  kill "-$sig" "$fault_pid"
  while kill -0 "$job" 2>/dev/null && [ $waited -lt "$tenths" ]; do sleep 0.1; waited=$((waited + 1)); done
  fault_took=$((SECONDS - t0))
  if kill -0 "$job" 2>/dev/null; then
    ko "$what: the job still runs $fault_took s after the fault (silent hang)"
    kill -9 "$job"; pkill -9 -P "$job" 2>/dev/null; kill -CONT "$fault_pid" 2>/dev/null; kill -9 "$fault_pid" 2>/dev/null
    return 1
  fi
  wait "$job"
  fault_rc=$?
  return 0
}

# fault WHAT SIGNAL COMMAND...: starts COMMAND under `mpirun -np 3` (COMMAND may use $OMPI_COMM_WORLD_RANK;
# it runs through sh -c), sends SIGNAL to rank 1 three seconds into the run, and checks that the job ends
# within BOUND seconds with an error and a message naming rank 1 — never a silent hang.
fault() {
  local what="$1" sig="$2"
  shift 2
  tried=$((tried + 1))
  rm -rf "$T/pid" && mkdir -p "$T/pid"
  mpirun -np 3 sh -c "echo \$\$ >\"$T/pid/\$OMPI_COMM_WORLD_RANK\"; exec $*" >"$T/out" 2>"$T/err" &
  local job=$! i
  for i in $(seq 1 100); do [ -s "$T/pid/1" ] && break; sleep 0.1; done
  sleep 3 # into the work
  fault_signal "$what" "$sig" $job $((BOUND * 10 + 100)) || return
  local msg
  msg=$(grep -E -m1 'rank 1 (has not been heard|made no progress)|process rank 1 with PID .* (exited on signal|killed)' "$T/err")
  if [ $fault_rc -ne 0 ] && [ $fault_took -le $BOUND ] && [ -n "$msg" ]; then
    pass=$((pass + 1))
    printf '  bad input %-44s -> job ended in %d s (bound %d s), exit %d: %s\n' "$what" $fault_took $BOUND $fault_rc "$(echo "$msg" | cut -c1-110)"
  else
    ko "$what: rc=$fault_rc after $fault_took s (bound $BOUND s), message naming rank 1: '${msg}'; stderr: $(grep -v '^-' "$T/err" | head -5)"
  fi
  kill -CONT "$fault_pid" 2>/dev/null
}
