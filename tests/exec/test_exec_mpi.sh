#!/bin/sh
# test_exec_mpi.sh ZPLAN ZP_MPIRUN — `zplan exec` under mpirun: the loss of every step is the same
# (relative 1e-5) for ZeRO stages 0-3, for 1, 2 and 4 ranks at the same global batch (4 sequences),
# with and without MP, checkpointing, Pa, overlapped collectives and small buckets; a different
# learning rate is seen (the comparison can fail); bad inputs exit 2 on every rank without hanging;
# the JSON report has the documented keys.
set -u
steps=3
. "$(dirname "$0")/exec_lib.sh"

run ref 1 --micro-batch 4 || exit 1
echo "reference (1 rank, stage 0, micro-batch 4): $(losses "$tmp/ref.json" | tr '\n' ' ')"
for key in '"config"' '"ranks"' '"steps"' '"step"' '"time_s"' '"memory_peak_gb"' '"params"' '"grads"' \
           '"optimizer"' '"activations"' '"buffers"' '"total"'; do
    grep -q "$key" "$tmp/ref.json" || { echo "FAIL: JSON report without $key"; fail=1; }
done

run s3_np1 1 --stage 3 --micro-batch 4 && same s3_np1
run ckpt_np1 1 --micro-batch 2 --grad-accum 2 --checkpoint-activations --stage 2 --bucket 20000 && same ckpt_np1
for s in 0 1 2 3; do
    run "s${s}_np2" 2 --stage $s --micro-batch 2 && same "s${s}_np2"
    run "s${s}_np4" 4 --stage $s --micro-batch 1 && same "s${s}_np4"
done
run mp2_np2 2 --mp 2 --micro-batch 4 --stage 1 && same mp2_np2
run mp2_pa_np2 2 --mp 2 --micro-batch 4 --stage 2 --checkpoint-activations --pa && same mp2_pa_np2
run mp2_pa_s3_np4 4 --mp 2 --micro-batch 2 --stage 3 --checkpoint-activations --pa && same mp2_pa_s3_np4
run mp4_np4 4 --mp 4 --micro-batch 4 --stage 0 --checkpoint-activations && same mp4_np4
run overlap_s3_np4 4 --stage 3 --micro-batch 1 --overlap-comm --bucket 30000 && same overlap_s3_np4
run overlap_s2_np2 2 --stage 2 --micro-batch 1 --grad-accum 2 --overlap-comm --bucket 7777 && same overlap_s2_np2
# stages 1-2 gather updated buckets in place: odd buckets put unit paddings against each other
run s1_bucket_np4 4 --stage 1 --micro-batch 1 --bucket 7777 && same s1_bucket_np4
run s2_bucket_np2 2 --stage 2 --micro-batch 1 --grad-accum 2 --bucket 5001 && same s2_bucket_np2
run nomd_np2 2 --stage 1 --micro-batch 2 --checkpoint-activations --no-md && same nomd_np2

# the comparison sees a different run: another learning rate changes the later losses
run lr 2 --stage 2 --micro-batch 2 --lr 3e-3
differs lr ref "a different learning rate gives different losses" "--lr 3e-3 gave the reference's losses"

# stage 3 holds a quarter of the parameters on each of 4 ranks; stage 0 all of them
p0=$(sed -n '/memory_peak_gb/,/}/s/.*"params": *\([-0-9.eE+]*\).*/\1/p' "$tmp/s0_np4.json")
p3=$(sed -n '/memory_peak_gb/,/}/s/.*"params": *\([-0-9.eE+]*\).*/\1/p' "$tmp/s3_np4.json")
if awk -v a="$p0" -v b="$p3" 'BEGIN {r = b / a; exit !(r > 0.24 && r < 0.27)}'; then
    echo "ok   stage-3 parameters per rank are 1/4 of stage 0's ($p3 vs $p0 GB)"
else
    echo "FAIL: stage-3 parameters per rank $p3 GB vs stage 0 $p0 GB"; fail=1
fi

# bad inputs: exit 2 with a message, on every rank, never hanging
bad 1 "no-such-model" --model no-such-model
bad 1 "is required" --stage 1
bad 1 "not a ZeRO stage" --model tiny --stage 4
bad 1 "micro-batch" --model tiny --micro-batch 0
bad 2 "does not divide the 2 ranks" --model tiny --mp 4
bad 3 "does not divide the 4 attention heads" --model tiny --mp 3
bad 1 "checkpoint" --model tiny --pa
bad 1 "backend cuda" --model tiny --backend cuda
bad 1 "needs ZeRO stage 1, 2 or 3" --model tiny --stage 0 --offload optimizer
bad 1 "only optimizer offload" --model tiny --stage 3 --offload params
bad 1 "needs --profile" --model tiny --validate
bad 2 "unknown option" --model tiny --frobnicate
bad 1 "min-seconds" --model tiny --min-seconds -1
bad 2 "min-seconds" --model tiny --min-seconds soon

# --min-seconds: past --steps until the steps after the first took that long, every rank stopping
# after the same step (a rank that stopped alone would hang the others)
timeout 120 "$mpirun_sh" 2 "$zplan" exec --model tiny --steps 2 --min-seconds 0.5 --format json > "$tmp/ms.json" \
    2> "$tmp/ms.err" || { echo "FAIL --min-seconds: exit $?"; cat "$tmp/ms.err"; fail=1; }
if awk -F: '/"time_s"/ {n++; if (n > 1) t += $2} END {exit !(n > 2 && t >= 0.5)}' \
       "$tmp/ms.json"; then
    echo "ok   --min-seconds 0.5: $(grep -c '"time_s"' "$tmp/ms.json") steps"
else
    echo "FAIL --min-seconds 0.5: $(grep -c '"time_s"' "$tmp/ms.json") steps"; fail=1
fi

exit $fail
