#!/bin/sh
# test_exec_cp.sh ZPLAN ZP_MPIRUN — `zplan exec --cp` (context parallelism) under mpirun (issue 28): each
# sequence cut over the CP ranks (Megatron-core's causal load balancing, chunks r and 2CP-1-r); in the
# all-gather form K and V all-gathered, their gradients reduce-scattered back; in the ring form (the default)
# K and V passed round point to point, merged by online softmax, their gradients passed round back to their
# owners; the gradients reduced over DP with the CP ranks in it. The loss of every step equals the one-rank
# run of the same global batch (relative 1e-5), all-gather form:
#  - tiny (learned positions: the slice's rows of wpe, and their gradient) with CP 2, CP 4, CP 2 x TP 2 x
#    ZeRO-1 (4 ranks), CP 2 x DP 2 at stage 3 with checkpointing (the recompute gathers K and V again),
#    CP 2 x TP 2 at stage 2 with Pa, CP 2 with accumulation and small buckets;
#  - tiny-llama (rotary by global position, GQA) with CP 2 and CP 2 x TP 2 x ZeRO-1;
#  - the ring form (no --cp-comm): tiny at CP 2, CP 4 (stage 2), CP 2 x TP 2 x ZeRO-1, CP 2 x DP 2 at stage 3
#    with checkpointing (the recompute passes K and V round again); tiny-llama at CP 2, CP 4 and
#    CP 2 x TP 2 x ZeRO-1;
#  - a run whose slices are not the ones the loss is compared with is seen (--seed 2 differs);
#  - --validate: the measured memory is the replay of the executor's schedule with CP (activations of the
#    slice, the gathered K and V; in the ring form two chunks and two of their gradients) in every
#    category, exactly, and the ring form holds less than the all-gather form;
#  - bad inputs exit 2 naming the fix: a CP degree whose double does not divide the sequence, a CP degree
#    not dividing the DP ranks, pipelines and MoE with CP (either form).
set -u
# the profile --validate predicts with: a small calibration (two hidden sizes, one token count, 64 KB
# collectives; seconds): what is checked is memory, exact whatever the profile, and a step predicted
small_profile="--quick --hidden 32,64 --tokens 64 --max-bytes 64K --reps 2 --warmup 1"
steps=3
. "$(dirname "$0")/exec_lib.sh"

ag="--cp-comm all-gather"
# ---- tiny, global batch 4 ----
run ref 1 --micro-batch 4 || exit 1
echo "tiny reference (1 rank, stage 0, micro-batch 4): $(losses "$tmp/ref.json" | tr '\n' ' ')"
# shellcheck disable=SC2086
{
run cp2 2 --cp 2 $ag --micro-batch 4 && same cp2
run cp4_s2 4 --cp 4 $ag --stage 2 --micro-batch 4 && same cp4_s2
run cp2_tp2_s1 4 --cp 2 --mp 2 --stage 1 $ag --micro-batch 4 && same cp2_tp2_s1
run cp2_dp2_s3_ckpt 4 --cp 2 --stage 3 --checkpoint $ag --micro-batch 2 && same cp2_dp2_s3_ckpt
run cp2_tp2_s2_pa 4 --cp 2 --mp 2 --stage 2 --checkpoint --pa $ag --micro-batch 4 && same cp2_tp2_s2_pa
run cp2_ga2_bucket 2 --cp 2 --stage 2 --grad-accum 2 --bucket 7777 $ag --micro-batch 2 && same cp2_ga2_bucket
run cp2_seed 2 --cp 2 $ag --micro-batch 4 --seed 2
}
# the ring form, the default --cp-comm
run ring_cp2 2 --cp 2 --micro-batch 4 && same ring_cp2
run ring_cp4_s2 4 --cp 4 --stage 2 --micro-batch 4 && same ring_cp4_s2
run ring_cp2_tp2_s1 4 --cp 2 --mp 2 --stage 1 --micro-batch 4 && same ring_cp2_tp2_s1
run ring_cp2_dp2_s3_ckpt 4 --cp 2 --stage 3 --checkpoint --micro-batch 2 && same ring_cp2_dp2_s3_ckpt
run ring_seed 2 --cp 2 --micro-batch 4 --seed 2
differs ring_seed ref "another seed gives other losses under the ring" "--seed 2 under the ring gave the reference's losses"
differs cp2_seed ref "another seed gives other losses under CP" "--seed 2 under --cp 2 gave the reference's losses"
grep -q '"cp": 2' "$tmp/cp2.json" || { echo "FAIL: the JSON report's config has no \"cp\": 2"; fail=1; }

# ---- tiny-llama (rotary, GQA 4/2, RMSNorm, SwiGLU), global batch 4 ----
llama() { name="$1"; np="$2"; shift 2; run "$name" "$np" --model tiny-llama "$@"; }
llama lref 1 --micro-batch 4 || exit 1
echo "tiny-llama reference (1 rank, stage 0): $(losses "$tmp/lref.json" | tr '\n' ' ')"
# shellcheck disable=SC2086
{
llama llama_cp2 2 --cp 2 $ag --micro-batch 4 && same llama_cp2 lref
llama llama_cp2_tp2_s1 4 --cp 2 --mp 2 --stage 1 $ag --micro-batch 4 && same llama_cp2_tp2_s1 lref
}
llama llama_ring_cp2 2 --cp 2 --micro-batch 4 && same llama_ring_cp2 lref
llama llama_ring_cp4 4 --cp 4 --micro-batch 4 && same llama_ring_cp4 lref
llama llama_ring_cp2_tp2_s1 4 --cp 2 --mp 2 --stage 1 --micro-batch 4 && same llama_ring_cp2_tp2_s1 lref

# ---- --validate: memory is the replay of the schedule with CP, to the byte ----
if "$zplan" calibrate $small_profile -o "$tmp/p.json" > /dev/null 2>&1; then
    for v in "2 tiny --cp 2 $ag" "4 tiny-llama --cp 2 --mp 2 --stage 1 $ag" "2 tiny --cp 2" \
             "4 tiny-llama --cp 2 --mp 2 --stage 1" "4 tiny --cp 4 --checkpoint"; do
        np=${v%% *}; opts=${v#* }
        # shellcheck disable=SC2086
        if timeout 120 "$mpirun_sh" "$np" "$zplan" exec --model $opts --steps 2 --micro-batch 4 --validate \
               --profile "$tmp/p.json" \
               --format json > "$tmp/v.json" 2> "$tmp/v.err" &&
           python3 - "$tmp/v.json" "$v" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d["validation"]
for k, e in v["memory_error"].items():
    assert abs(e) < 1e-9, (k, e)
assert v["predicted_memory_gb"]["activations"] > 0, v
print("ok   --validate np %s: memory %.4f MB (activations %.4f MB) predicted exactly"
      % (sys.argv[2], v["predicted_memory_gb"]["total"] * 1e3, v["predicted_memory_gb"]["activations"] * 1e3))
PY
        then :; else echo "FAIL: --validate $v"; cat "$tmp/v.err"; fail=1; fi
        act=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["validation"]["predicted_memory_gb"]["activations"])' "$tmp/v.json")
        case "$v" in
        "2 tiny --cp 2 $ag") ag_act=$act ;;
        "2 tiny --cp 2") ring_act=$act ;;
        esac
    done
    # the ring holds two K and V chunks and the rows' log-sum-exp, not the gathered K and V and the scores
    if python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "${ring_act:-1}" "${ag_act:-0}"; then
        echo "ok   the ring form's activations ($ring_act GB) are below the all-gather form's ($ag_act GB)"
    else echo "FAIL: ring activations ${ring_act:-?} GB not below all-gather's ${ag_act:-?} GB"; fail=1; fi
else
    echo "FAIL: zplan calibrate --quick"; fail=1
fi

# ---- bad inputs: exit 2 naming the fix ----
bad 3 "does not cut into 2 x 3 equal chunks" --model tiny --cp 3 $ag
bad 3 "does not cut into 2 x 3 equal chunks" --model tiny --cp 3
bad 2 "--cp 4 does not divide the 2 data-parallel ranks" --model tiny --cp 4 $ag
bad 4 "--cp with --pp" --model tiny --cp 2 --pp 2 $ag
bad 4 "--cp with --pp" --model tiny --cp 2 --pp 2
bad 2 "--cp with the mixture-of-experts" --model tiny-moe --cp 2 $ag
exit $fail
