#!/usr/bin/env bash
# Speed-up of a sweep over MPI ranks (issue 16 part 4): `mpirun -np 2 zplan sweep` against the same sweep
# in one process, side by side in one run, rounds interleaved (single, mpirun, single, mpirun, ...) so that
# a spell of load from elsewhere falls on both; each output compared byte for byte with the first
# single-process one. Also the fixed cost of mpirun (one cell, where there is nothing to split) and the
# scaling report of 1K-100K GPUs.
# Usage: bench/sweep.sh [ROUNDS (default 3)] [path/to/zplan]
# Timings are wall seconds of the whole command (mpirun's start and MPI_Init included), the best of the
# rounds; run it on an idle machine (`uptime`) and run nothing else meanwhile.
set -euo pipefail
rounds="${1:-3}"
Z="${2:-build/src/zplan}"
[ -x "$Z" ] || { echo "bench/sweep.sh: $Z not found: run scripts/build first" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench/sweep.sh: needs mpirun" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
bench_exec_env "$(dirname "$Z")/.." # $root, one BLAS/OpenMP thread per rank, ranks yield while they wait
np2() { mpirun $root --oversubscribe --bind-to none -np 2 "$@"; }
secs() { # secs CMD...: wall seconds of one run
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
  awk -v x="$t0" -v y="$t1" 'BEGIN{printf "%.3f", y-x}'
}
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (b<a)?b:a}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }

# side LABEL ARGS...: `zplan ARGS -o FILE` in one process and under mpirun -np 2, rounds interleaved
side() {
  local label=$1; shift
  local s1=999 s2=999 same=yes i t
  for i in $(seq "$rounds"); do
    rm -f "$T/one" "$T/two"
    t=$(secs "$Z" "$@" -o "$T/one"); s1=$(min "$s1" "$t")
    [ "$i" = 1 ] && cp "$T/one" "$T/ref"
    t=$(secs np2 "$Z" "$@" -o "$T/two"); s2=$(min "$s2" "$t")
    cmp -s "$T/ref" "$T/one" || same=NO
    cmp -s "$T/ref" "$T/two" || same=NO
  done
  printf '%-46s %10s %12s %9s  %s\n' "$label" "$s1" "$s2" "$(ratio "$s1" "$s2")" "$same ($(wc -c <"$T/ref") bytes)"
}

echo "zplan sweep over MPI ranks: $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1 /proc/loadavg) (1-minute average);" \
  "best of $rounds interleaved rounds; wall s"
printf '%-46s %10s %12s %9s  %s\n' "" "1 process" "mpirun -np 2" "speed-up" "byte-identical"
side "1 cell (mpirun's fixed cost)" sweep --models 1.5B --gpus 64 --format csv
side "32 cells: 4 models x 1K..100K GPUs, dgx-h100" sweep --models gpt3-175B,13B,8B,1.5B \
  --gpus 1024,2048,4096,8192,16384,32768,65536,102400 --cluster dgx-h100 --format csv
side "36 cells: 3 models x 3 clusters x 4 counts, JSON" sweep --models gpt3-175B,llama-2-70b,13B \
  --gpus 1K,4K,16K,64K --cluster dgx-h100,dgx-a100,dgx-h100-railopt --format json
side "report scaling 175B, dgx-h100 (8 counts, 1K..100K)" report scaling --model gpt3-175B --cluster dgx-h100
echo "load at the end: $(cut -d' ' -f1 /proc/loadavg)"
