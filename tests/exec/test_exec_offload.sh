#!/bin/sh
# test_exec_offload.sh ZPLAN ZP_MPIRUN — `zplan exec --offload optimizer` on the cpu backend (the
# emulation of ZeRO-Offload) under mpirun -np 1, 2 and 4: every step's loss matches the run without
# offload of the same configuration within 5e-5 relative (the fp16 rounding of the parameters that come
# back to the device; tests/exec/test_exec_offload.c justifies the tolerance and shows that a run without
# the gradients' copy leaves it), the first step's loss is the same, optimizer states are host memory
# (device "optimizer" 0, "host" > 0), and --backend cuda on a machine without a GPU exits 2 saying so.
set -u
steps=4
. "$(dirname "$0")/exec_lib.sh"
RTOL=5e-5

peak() { sed -n "/memory_peak_gb/,/}/s/.*\"$2\": *\([-0-9.eE+]*\).*/\1/p" "$1"; }

compare() { # compare NAME NP ARGS...: with and without --offload optimizer
    cn="$1"; cnp="$2"; shift 2  # (run() sets name and np)
    run "${cn}_ref" "$cnp" "$@" || return
    run "${cn}_off" "$cnp" "$@" --offload optimizer || return
    losses "$tmp/${cn}_ref.json" > "$tmp/a"
    losses "$tmp/${cn}_off.json" > "$tmp/b"
    if [ "$(wc -l < "$tmp/b")" -ne 4 ]; then echo "FAIL $cn: $(wc -l < "$tmp/b") steps"; fail=1; return; fi
    if paste "$tmp/a" "$tmp/b" | awk -v r=$RTOL '
        NR == 1 && $1 != $2 { bad = 1 }
        { d = $1 - $2; if (d < 0) d = -d; if (d > r * $1) bad = 1 } END { exit bad }'; then
        echo "ok   $cn (np $cnp): offload $(tr '\n' ' ' < "$tmp/b")vs $(tr '\n' ' ' < "$tmp/a")"
    else
        echo "FAIL $cn (np $cnp): offload losses $(tr '\n' ' ' < "$tmp/b")vs $(tr '\n' ' ' < "$tmp/a")(rtol $RTOL)"
        fail=1
    fi
    o=$(peak "$tmp/${cn}_off.json" optimizer); h=$(peak "$tmp/${cn}_off.json" host)
    if awk -v o="$o" -v h="$h" 'BEGIN { exit !(o == 0 && h > 0) }'; then
        echo "ok   $cn (np $cnp): optimizer on the device $o GB, host $h GB"
    else
        echo "FAIL $cn (np $cnp): optimizer $o GB on the device, host $h GB"; fail=1
    fi
}

compare s1 1 --stage 1 --micro-batch 4
compare s3 1 --stage 3 --micro-batch 2 --grad-accum 2 --bucket 20000
compare s1 2 --stage 1 --micro-batch 2 --bucket 7777
compare s2 2 --stage 2 --micro-batch 2 --overlap-comm
compare s3 2 --stage 3 --micro-batch 1 --grad-accum 2 --checkpoint-activations
compare s2 4 --stage 2 --micro-batch 1 --bucket 5001
compare s3 4 --stage 3 --micro-batch 1
compare mp2_s3 4 --stage 3 --mp 2 --micro-batch 2 --checkpoint-activations --pa

# no GPU here: --backend cuda (with or without offload) exits 2 naming the reason
for extra in "" "--stage 2 --offload optimizer"; do
    # shellcheck disable=SC2086
    timeout 60 "$zplan" exec --model tiny --backend cuda $extra > /dev/null 2> "$tmp/cuda.err"; rc=$?
    if [ $rc -eq 2 ] && grep -q "no CUDA device" "$tmp/cuda.err"; then
        echo "ok   --backend cuda $extra: exit 2: $(head -1 "$tmp/cuda.err")"
    elif [ $rc -eq 2 ] && grep -q "built without CUDA" "$tmp/cuda.err"; then
        echo "ok   --backend cuda $extra: exit 2 (a build without CUDA): $(head -1 "$tmp/cuda.err")"
    else
        echo "FAIL: --backend cuda $extra: exit $rc, want 2 and 'no CUDA device'"; cat "$tmp/cuda.err"; fail=1
    fi
done

exit $fail
