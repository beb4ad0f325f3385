# exec_lib.sh — shared by the exec shell tests `test_exec_*.sh ZPLAN ZP_MPIRUN` (sourced, with the test's own
# arguments): reads them into $zplan and $mpirun_sh, makes the scratch directory $tmp (removed on exit), sets
# $fail to 0 and runs every rank on one thread (OpenBLAS's too: with more, MPI ranks oversubscribe the cores).
# The test sets $steps, the training steps of every run.
zplan="$1"
mpirun_sh="$2"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# losses FILE: the "loss" values of a JSON report, one per line
losses() { sed -n 's/.*"loss": *\([-0-9.eE+]*\).*/\1/p' "$1"; }

same() { # same NAME [REF]: every step's loss within 1e-5 (relative) of REF's (default: ref)
    _ref="${2:-ref}"
    losses "$tmp/$_ref.json" > "$tmp/a"
    losses "$tmp/$1.json" > "$tmp/b"
    if [ "$(wc -l < "$tmp/b")" -ne "$steps" ]; then echo "FAIL $1: $(wc -l < "$tmp/b") steps in the report"; fail=1; return; fi
    if paste "$tmp/a" "$tmp/b" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * $1) bad = 1} END {exit bad}'; then
        echo "ok   $1: $(tr '\n' ' ' < "$tmp/b")"
    else
        echo "FAIL $1: losses $(tr '\n' ' ' < "$tmp/b") vs $_ref $(tr '\n' ' ' < "$tmp/a")"; fail=1
    fi
}

differs() { # differs NAME REF OK FAIL: some step's loss is off REF's by more than 1e-5 (relative), so that
            # same() is seen to fail on another run; prints "ok   OK", or "FAIL: FAIL" and fails
    losses "$tmp/$1.json" > "$tmp/b"
    losses "$tmp/$2.json" > "$tmp/a"
    if paste "$tmp/a" "$tmp/b" | awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * $1) diff = 1} END {exit !diff}'; then
        echo "ok   $3"
    else
        echo "FAIL: $4"; fail=1
    fi
}

run() { # run NAME NP ARGS...: `zplan exec --model tiny` on NP ranks, its JSON report into $tmp/NAME.json
    name="$1"; np="$2"; shift 2
    if [ "$np" = 1 ]; then
        timeout 120 "$zplan" exec --model tiny --steps "$steps" --format json "$@" > "$tmp/$name.json" \
            2> "$tmp/$name.err"
    else
        timeout 120 "$mpirun_sh" "$np" "$zplan" exec --model tiny --steps "$steps" --format json "$@" \
            > "$tmp/$name.json" 2> "$tmp/$name.err"
    fi
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL $name (np $np $*): exit $rc"; cat "$tmp/$name.err"; fail=1; return 1
    fi
    return 0
}

bad() { # bad NP PATTERN ARGS...: `zplan exec ARGS` on NP ranks exits 2 with a message matching PATTERN
    np="$1"; pat="$2"; shift 2
    if [ "$np" = 1 ]; then
        timeout 60 "$zplan" exec "$@" > /dev/null 2> "$tmp/bad.err"; rc=$?
    else
        timeout 60 "$mpirun_sh" "$np" "$zplan" exec "$@" > /dev/null 2> "$tmp/bad.err"; rc=$?
    fi
    if [ $rc -eq 2 ] && grep -q -- "$pat" "$tmp/bad.err"; then
        echo "ok   exit 2: $(grep -m1 -- "$pat" "$tmp/bad.err")"
    else
        echo "FAIL: np $np exec $*: exit $rc (want 2, message matching '$pat')"; cat "$tmp/bad.err"; fail=1
    fi
}
