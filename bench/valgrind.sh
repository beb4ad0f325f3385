#!/usr/bin/env bash
# valgrind memcheck on the CLI's main paths; prints, per path, the processes checked (simulations run in
# forked children: --trace-children=yes), memcheck's errors and the definitely / indirectly lost bytes.
#   bench/valgrind.sh [BUILD_DIR (default build)] [PATH_NAME...]
# Paths: whatif-analytic, whatif-sim (one simulated plan, -o, --trace, --emit-ds-config), whatif-search
# (the full search: every candidate simulated), report-table1, report-table2, report-scaling (html),
# calibrate (--quick, 1 rank), exec-2ranks (mpirun -np 2, when this zplan has `exec`).
# Suppressions: tests/sanitize/valgrind.supp (ld.so false positive) and Open MPI's own file. Logs are
# kept in $ZP_VALGRIND_WORK (default /tmp/zplan-valgrind). Exit 1 when any path has errors or leaks.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
Z="$build/src/zplan"
[ -x "$Z" ] || { echo "no $Z: build first (scripts/build)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found (scripts/bootstrap installs it)" >&2; exit 2; }
work=${ZP_VALGRIND_WORK:-/tmp/zplan-valgrind}
rm -rf "$work" && mkdir -p "$work/out"
supp=(--suppressions="$root/tests/sanitize/valgrind.supp")
[ -f /usr/share/openmpi/openmpi-valgrind.supp ] && supp+=(--suppressions=/usr/share/openmpi/openmpi-valgrind.supp)
VG=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --num-callers=30 "${supp[@]}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI keeps its components loaded so that its leaks are attributed (and suppressed) correctly
export OMPI_MCA_mca_base_component_disable_dlclose=1

selected=("$@")
want() { [ ${#selected[@]} -eq 0 ] && return 0; local s; for s in "${selected[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

bad=0
printf '%-16s %6s %7s %15s %15s %8s\n' path procs errors "definitely lost" "indirectly lost" seconds
# summarise NAME SECONDS: sums the per-process logs of a path
summarise() {
  local name=$1 secs=$2 logs procs errs def ind
  logs=("$work/$name".*.log)
  procs=0 errs=0 def=0 ind=0
  for l in "${logs[@]}"; do
    [ -f "$l" ] || continue
    grep -q 'ERROR SUMMARY' "$l" || continue   # an exec'd helper that valgrind did not follow to the end
    procs=$((procs + 1))
    errs=$((errs + $(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$l" | tr -d , | tail -1)))
    def=$((def + $(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$l" | tr -d , | tail -1 | sed 's/^$/0/')))
    ind=$((ind + $(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$l" | tr -d , | tail -1 | sed 's/^$/0/')))
  done
  printf '%-16s %6d %7d %15d %15d %8s\n' "$name" "$procs" "$errs" "$def" "$ind" "$secs"
  if [ "$errs" -gt 0 ] || [ "$def" -gt 0 ] || [ "$ind" -gt 0 ] || [ "$procs" -eq 0 ]; then
    bad=1
    grep -l -E 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]|indirectly lost: [1-9]' "${logs[@]}" 2>/dev/null |
      head -3 | sed 's/^/    see /'
  fi
}
# path NAME [--children] ARGS... : zplan ARGS under memcheck (cwd: the work dir's out/)
path() {
  local name=$1; shift
  want "$name" || return 0
  local children=()
  if [ "${1:-}" = --children ]; then children=(--trace-children=yes); shift; fi
  local t0=$SECONDS
  (cd "$work/out" && "${VG[@]}" "${children[@]}" --log-file="$work/$name.%p.log" "$Z" "$@" >"$work/$name.stdout" 2>"$work/$name.stderr")
  local rc=$?
  [ $rc -eq 0 ] || { echo "  $name: zplan exited $rc: $(tail -2 "$work/$name.stderr" | tr '\n' ' ')"; bad=1; }
  summarise "$name" $((SECONDS - t0))
}

path whatif-analytic                --model 100B --gpus 400 --analytic --format json
path whatif-sim         --children  --model 1.5B --gpus 32 --stage 2 --mp 1 --micro-batch 4 -o whatif.txt \
                                    --trace trace.json --emit-ds-config ds.json --report whatif.html
path whatif-search      --children  --model 100B --gpus 400 --jobs 2
path report-table1                  report table1 --format html -o table1.html
path report-table2                  report table2 --format html -o table2.html
path report-scaling     --children  report scaling --model 8B --gpus 16,64 --format html -o scaling.html
path calibrate                      calibrate --quick --reps 1 --warmup 0 --hidden 128 --tokens 128 \
                                    --max-bytes 1Mi --timeout 1e5 -o profile.json
if want exec-2ranks && "$Z" exec --help >/dev/null 2>&1 && command -v mpirun >/dev/null; then
  t0=$SECONDS
  (cd "$work/out" && mpirun --oversubscribe -np 2 "${VG[@]}" --log-file="$work/exec-2ranks.%p.log" "$Z" exec \
     --model tiny --steps 2 >"$work/exec-2ranks.stdout" 2>"$work/exec-2ranks.stderr")
  rc=$?
  [ $rc -eq 0 ] || { echo "  exec-2ranks: exited $rc: $(tail -2 "$work/exec-2ranks.stderr" | tr '\n' ' ')"; bad=1; }
  summarise exec-2ranks $((SECONDS - t0))
fi
echo "logs: $work/*.log"
exit $bad
