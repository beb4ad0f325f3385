#!/bin/sh
# test_cli.sh TOOL CHECK MPIRUN HAVE_MPI — `zplan calibrate` end to end: options and exit codes,
# "no CUDA device", a quick calibration alone and under mpirun -np 2, atomic output.
tool="$1"; check="$2"; mpirun="$3"; have_mpi="$4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect() { # expect CODE DESCRIPTION -- command...
  want="$1"; what="$2"; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, want $want"; cat "$tmp/err" >&2; fi
}
small="--quick --hidden 32,64 --tokens 64 --max-bytes 64K --reps 2 --warmup 1"

expect 0 "help" -- "$tool" --help
grep -q -- "--backend" "$tmp/out" && ok || bad "help lists --backend"
expect 2 "unknown option" -- "$tool" --frobnicate
expect 2 "missing value" -- "$tool" --backend
expect 2 "stray argument" -- "$tool" extra
expect 2 "bad reps" -- "$tool" --reps 0
expect 2 "unknown backend" -- "$tool" --backend tpu

# no GPU here: cuda must say so and exit 2, without touching an existing profile
echo '{"keep": true}' >"$tmp/keep.json"
expect 2 "cuda without a device" -- "$tool" --backend cuda -o "$tmp/keep.json"
grep -q "no CUDA device" "$tmp/err" && ok || { bad "message names 'no CUDA device'"; cat "$tmp/err" >&2; }
grep -q '"keep": true' "$tmp/keep.json" && ok || bad "existing file damaged"

# one rank: a complete, valid profile; no temporary left behind
expect 0 "quick calibration" -- "$tool" $small -o "$tmp/p1.json"
expect 0 "profile valid" -- "$check" "$tmp/p1.json"
[ "$(ls "$tmp" | grep -c tmp)" -eq 0 ] && ok || bad "temporary file left: $(ls "$tmp")"
grep -q "profile written" "$tmp/out" 2>/dev/null || true
# to stdout when no -o
expect 0 "profile on stdout" -- "$tool" $small
grep -q '"format": "zplan-profile"' "$tmp/out" && ok || bad "stdout holds the profile JSON"

if [ "$have_mpi" = 1 ]; then
  # up to 4 MiB: past the latency-bound sizes, so the bandwidth fit holds even on a loaded machine
  expect 0 "calibration under mpirun -np 2" -- "$mpirun" 2 "$tool" $small --max-bytes 4Mi -o "$tmp/p2.json"
  expect 0 "collectives measured on 2 ranks" -- "$check" "$tmp/p2.json" 2
  # issue #18 case 7: under mpirun on a terminal, rank 0 draws the progress (mpirun forwards its stderr
  # through a pipe; the launcher's is the terminal); in a pipe, nothing
  if command -v script >/dev/null 2>&1; then
    script -qec "'$mpirun' 2 '$tool' $small -o '$tmp/p3.json'" /dev/null >"$tmp/tty.out" 2>&1
    tr '\r' '\n' <"$tmp/tty.out" | grep -q '^\[#* *\] *[0-9]*% ' && ok ||
      bad "no progress under mpirun on a terminal: $(head -c 300 "$tmp/tty.out")"
  else
    echo "calibrate cli: skipped the terminal case (no script(1))"
  fi
  "$mpirun" 2 "$tool" $small -o "$tmp/p4.json" 2>"$tmp/pipe.err" >/dev/null
  grep -q '%' "$tmp/pipe.err" && bad "progress drawn into a pipe: $(head -c 200 "$tmp/pipe.err")" || ok
fi

echo "calibrate cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
