#!/usr/bin/env bash
# zplan sweep (issue 16 part 4): the rows of a sweep and the scaling report made from one are the same,
# byte for byte, without mpirun and under mpirun -np 2 (and -np 3, a rank with fewer cells); bad input
# (a bad grid row named by file:line, more cells than the limit, a GPU count the fabric cannot hold, a
# partial file left by an earlier sweep) exits 2 before any cell runs, on every rank; a rank killed
# (kill -9) or stopped (a hang, caught by --timeout) ends the job within a bound with the output not
# written and the rows done kept in OUT.partial, each of them a row of the complete sweep.
# Usage: test_sweep.sh ZPLAN     (the mpirun parts are skipped without mpirun)
set -u
Z="$1"
# shellcheck source=../fault_lib.sh
. "$(dirname "$0")/../fault_lib.sh"
export OMPI_MCA_mpi_yield_when_idle=1 OMP_NUM_THREADS=1
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
have_mpi=1
command -v mpirun >/dev/null || have_mpi=0
mpi() { mpirun --bind-to none -np "$@"; }

# same WHAT FILE1 FILE2: byte-for-byte equal
same() {
  if [ -s "$2" ] && cmp -s "$2" "$3"; then ok "$1 ($(wc -c <"$2") bytes)"; else ko "$1: $2 and $3 differ or are empty"; fi
}

# ZeRO stage 1 given: the cells' searches take a second less each (what is tested is how the cells are
# shared over the ranks and written, not the search)
SMALL=(--models 1.5B,13B --gpus 64,128,256 --cluster dgx2 --stage 1)
printf 'model,gpus,cluster\n# two clusters, a default one\n8B,1K,dgx-h100\n1.5B,64\n13B,512,dgx-a100\n' >"$T/grid.csv"

echo "== single process"
"$Z" sweep "${SMALL[@]}" --format csv -o "$T/s1.csv" 2>"$T/err" && [ "$(wc -l <"$T/s1.csv")" -eq 7 ] &&
  head -1 "$T/s1.csv" | grep -q '^cell,model,cluster,gpus,stage,mp,dp' && [ ! -e "$T/s1.csv.partial" ] &&
  ok "6 cells, a CSV row each, no partial file left" || ko "single-process sweep: $(cat "$T/err")"
"$Z" sweep "${SMALL[@]}" --format json -o "$T/s1.json" 2>"$T/err" &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["cells"])==6, d' "$T/s1.json" &&
  ok "JSON: 6 cells" || ko "JSON sweep: $(cat "$T/err")"
"$Z" sweep --grid "$T/grid.csv" --format csv -o "$T/g1.csv" 2>"$T/err" && [ "$(wc -l <"$T/g1.csv")" -eq 4 ] &&
  grep -q '^2,1.5B,dgx2,64,' "$T/g1.csv" && ok "grid file: 3 cells, the default cluster filled in" ||
  ko "grid sweep: $(cat "$T/err") $(cat "$T/g1.csv")"
"$Z" report scaling --model 8B --cluster dgx-h100 --gpus 1K,2K,4K -o "$T/r1.txt" 2>"$T/err" &&
  grep -q 'Scaling of 8B on dgx-h100' "$T/r1.txt" && ok "report scaling" || ko "report scaling: $(cat "$T/err")"

if [ $have_mpi = 1 ]; then
  echo "== mpirun equals the single process, byte for byte"
  mpi 2 "$Z" sweep "${SMALL[@]}" --format csv -o "$T/s2.csv" 2>"$T/err" || ko "mpirun -np 2 csv: $(cat "$T/err")"
  same "mpirun -np 2, CSV" "$T/s1.csv" "$T/s2.csv"
  mpi 2 "$Z" sweep "${SMALL[@]}" --format json -o "$T/s2.json" 2>"$T/err" || ko "mpirun -np 2 json: $(cat "$T/err")"
  same "mpirun -np 2, JSON" "$T/s1.json" "$T/s2.json"
  mpi 3 "$Z" sweep --grid "$T/grid.csv" --format csv -o "$T/g3.csv" 2>"$T/err" || ko "mpirun -np 3 grid: $(cat "$T/err")"
  same "mpirun -np 3, grid file" "$T/g1.csv" "$T/g3.csv"
  mpi 2 "$Z" sweep --models 1.5B --gpus 64 --format csv >"$T/o2.csv" 2>"$T/err" || ko "one cell on 2 ranks: $(cat "$T/err")"
  "$Z" sweep --models 1.5B --gpus 64 --format csv >"$T/o1.csv"
  same "one cell on 2 ranks (rank 1 idle), to stdout" "$T/o1.csv" "$T/o2.csv"
  mpi 2 "$Z" report scaling --model 8B --cluster dgx-h100 --gpus 1K,2K,4K -o "$T/r2.txt" 2>"$T/err" ||
    ko "report scaling under mpirun: $(cat "$T/err")"
  same "report scaling under mpirun -np 2" "$T/r1.txt" "$T/r2.txt"
fi

echo "== bad input: exit 2 before any cell runs"
# bad WHAT NP PATTERN ARGS...: exit 2, PATTERN on stderr (once: rank 0 says it), no output file
bad() {
  local what="$1" np="$2" pat="$3"
  shift 3
  tried=$((tried + 1))
  rm -f "$T/bad.out"
  if [ "$np" -gt 1 ]; then
    [ $have_mpi = 1 ] || return 0
    timeout 120 mpirun --bind-to none -np "$np" "$Z" sweep "$@" -o "$T/bad.out" >"$T/out" 2>"$T/err"
  else
    timeout 120 "$Z" sweep "$@" -o "$T/bad.out" >"$T/out" 2>"$T/err"
  fi
  local rc=$? n
  n=$(grep -c -- "$pat" "$T/err")
  if [ $rc -eq 2 ] && [ "$n" -eq 1 ] && [ ! -e "$T/bad.out" ] && [ ! -e "$T/bad.out.partial" ]; then
    ok "$what (np $np) -> exit 2: $(grep -m1 -- "$pat" "$T/err" | cut -c1-110)"
  else
    ko "$what (np $np): rc=$rc, '$pat' $n times on stderr: $(head -c 600 "$T/err")"
  fi
}
printf 'model,gpus,cluster\n1.5B,64\n\n# fine so far\n13B,sixty-four,dgx2\n' >"$T/badrow.csv"
bad "bad grid row (line 5)" 1 "badrow.csv:5: gpus: 'sixty-four' is not a number" --grid "$T/badrow.csv"
bad "bad grid row (line 5)" 2 "badrow.csv:5: gpus: 'sixty-four' is not a number" --grid "$T/badrow.csv"
printf 'model,gpus\n1.5B,64\nnosuchmodel,64\n' >"$T/badmodel.csv"
bad "unknown model in a grid row (line 3)" 2 "badmodel.csv:3: " --grid "$T/badmodel.csv"
printf 'model,gpus\n1.5B,64,dgx2,extra\n' >"$T/extra.csv"
bad "a row with more fields than the header" 1 "extra.csv:2: 4 fields where the header has 2" --grid "$T/extra.csv"
printf '1.5B,64\n' >"$T/nohdr.csv"
bad "no header" 1 "nohdr.csv:1: the first line must be the header" --grid "$T/nohdr.csv"
gpus=$(seq -s, 1 2049)
bad "2 x 2049 = 4098 cells (limit 4096)" 1 "is more than the limit of 4096" --models 1.5B,13B --gpus "$gpus"
bad "2 x 2049 = 4098 cells (limit 4096)" 2 "is more than the limit of 4096" --models 1.5B,13B --gpus "$gpus"
{ echo model,gpus; for i in $(seq 1 4097); do echo 1.5B,64; done; } >"$T/big.csv"
bad "a grid of 4097 rows (limit 4096)" 1 "big.csv:4098: more than 4096 cells" --grid "$T/big.csv"
bad "a GPU count the fabric cannot hold" 1 "more than the dgx-h100-railopt fabric holds" \
  --models 13B --gpus 1K,200000 --cluster dgx-h100-railopt
bad "--mp that no cell can take" 1 "cell 1 (1.5B on 64 GPUs of dgx2): --mp: 3 does not divide" \
  --models 1.5B --gpus 64 --mp 3
bad "--report scaling of two models" 1 "the report of one model on one cluster" \
  --models 1.5B,13B --gpus 64 --report scaling
tried=$((tried + 1))
touch "$T/left.csv.partial"
"$Z" sweep --models 1.5B --gpus 64 -o "$T/left.csv" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'left.csv.partial exists' "$T/err" && [ ! -e "$T/left.csv" ] &&
  ok "a partial file left by an earlier sweep -> exit 2: $(cut -c1-100 "$T/err")" ||
  ko "partial left: rc=$rc $(cat "$T/err")"

if [ $have_mpi = 1 ]; then
  echo "== a rank that dies or hangs stops the sweep: no output, the rows done kept"
  # 32 cells at ZeRO stage 3 (about 0.1 s a cell here, 0.3 s under ASan): long enough to be stopped halfway
  BIG=(--models gpt3-175B,13B,8B,1.5B --gpus 1024,2048,4096,8192,16384,32768,65536,102400 --cluster dgx-h100
    --stage 3 --format csv)
  "$Z" sweep "${BIG[@]}" -o "$T/full.csv" 2>"$T/err" || ko "the complete 32-cell sweep: $(cat "$T/err")"
  BOUND=30
  # sweep_fault WHAT SIGNAL [options]: kill rank 1 once a row is in the partial file; the job must end within
  # BOUND s, not zero, with no output and a partial file whose rows are rows of the complete sweep
  sweep_fault() {
    local what="$1" sig="$2"
    shift 2
    tried=$((tried + 1))
    rm -rf "$T/pid" "$T/k.csv" "$T/k.csv.partial" && mkdir -p "$T/pid"
    mpirun --bind-to none -np 2 sh -c "echo \$\$ >\"$T/pid/\$OMPI_COMM_WORLD_RANK\"; exec \"$Z\" sweep $* -o \"$T/k.csv\"" \
      >"$T/out" 2>"$T/err" &
    local job=$! i
    for i in $(seq 1 600); do [ "$(cat "$T/k.csv.partial" 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
    fault_signal "$what" "$sig" $job $((BOUND * 10)) || return
    local rows foreign
    rows=$(($(wc -l <"$T/k.csv.partial") - 1))
    # the partial file has every column (the pipeline ones too, whatever the rows): each of its rows must
    # be the complete sweep's row of that cell in the columns they share, and no pipeline in the others
    foreign=$(python3 - "$T/k.csv.partial" "$T/full.csv" <<'PY'
import csv, sys
part = list(csv.DictReader(open(sys.argv[1])))
full = {r["cell"]: r for r in csv.DictReader(open(sys.argv[2]))}
bad = 0
for r in part:
    f = full.get(r["cell"])
    bad += f is None or any(r[k] != f[k] for k in f) or r.get("pp", "1") != "1"
print(bad)
PY
)
    if [ $fault_rc -ne 0 ] && [ ! -e "$T/k.csv" ] && [ "$rows" -ge 1 ] && [ "$foreign" -eq 0 ] &&
      head -1 "$T/k.csv.partial" | grep -q '^cell,model' && grep -q 'rank 1' "$T/err"; then
      ok "$what: ended in $fault_took s (bound $BOUND), exit $fault_rc, no output, $rows rows of 32 kept in the partial file"
    else
      ko "$what: rc=$fault_rc after $fault_took s, output $([ -e "$T/k.csv" ] && echo written || echo absent), $rows rows kept," \
        "$foreign not of the complete sweep; stderr: $(grep -v '^-' "$T/err" | head -5)"
    fi
    kill -CONT "$fault_pid" 2>/dev/null
  }
  sweep_fault "rank 1 of 2 killed (kill -9)" KILL "${BIG[*]}"
  sweep_fault "rank 1 of 2 stopped (SIGSTOP), --timeout 4" STOP "${BIG[*]} --timeout 4"
  mpi 2 "$Z" sweep "${BIG[@]}" -o "$T/full2.csv" 2>"$T/err" || ko "32 cells on 2 ranks: $(cat "$T/err")"
  same "32 cells, mpirun -np 2 against the single process" "$T/full.csv" "$T/full2.csv"
fi

echo "bad inputs tried: $tried"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
