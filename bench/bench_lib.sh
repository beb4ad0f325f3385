# bench_lib.sh — what the bench scripts share (source it). best_of N cmd...: the fastest of N runs of the
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
