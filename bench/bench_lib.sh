# bench_lib.sh — what the bench scripts share (source it).
# bench_exec_env BUILD_DIR: for the scripts that run zplan exec under mpirun: $zplan (exit 2 when it is not
# built), one OpenMP/BLAS thread per rank (OpenMP and BLAS threads on top of oversubscribed ranks spin
# against each other), and $root (--allow-run-as-root when root).
bench_exec_env() {
  zplan="$1/src/zplan"
  [ -x "$zplan" ] || { echo "$(basename "$0"): no $zplan (build first: scripts/build)"; exit 2; }
  export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMPI_MCA_mpi_yield_when_idle=1
  root=""; [ "$(id -u)" = 0 ] && root="--allow-run-as-root"
}

# best_of N cmd...: the fastest of N runs of the
# whole command (its process start included), in seconds with 3 decimals.
best_of() {
  local n=$1; shift; local best=999
  for _ in $(seq "$n"); do
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
    best=$(awk -v a="$best" -v b="$(awk -v x="$t0" -v y="$t1" 'BEGIN{print y-x}')" 'BEGIN{print (b<a)?b:a}')
  done
  printf '%.3f' "$best"
}
