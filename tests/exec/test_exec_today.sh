#!/bin/sh
# test_exec_today.sh ZPLAN ZP_MPIRUN — `zplan exec` runs today's architectures under mpirun (issue 13):
#  - tiny-llama (GQA 4 heads / 2 KV heads, SwiGLU, RMSNorm, rotary, untied head, no biases): the loss of every
#    step equals the one-rank run of the same global batch (relative 1e-5) for ZeRO stages 0-3 on 2 and 4
#    ranks, MP 2 (stages 1 and 3, checkpointing), pipeline stages;
#  - tiny-moe (Mixtral's layout: 4 experts, top-2): the same for EP 1 and EP 2 (and 4) on 2 and 4 ranks,
#    stages 0-3, MP 2 beside EP 2, checkpointing with accumulation; another learning rate is seen;
#  - --validate: the memory of both is the replay of the executor's schedule (error below 1e-9 in every
#    category), and the step is predicted;
#  - what the executor does not run exits 2 with a message naming the option.
set -u
# the profile --validate predicts with: a small calibration (two hidden sizes, one token count, 64 KB
# collectives; seconds): what is checked is memory, exact whatever the profile, and a step predicted
small_profile="--quick --hidden 32,64 --tokens 64 --max-bytes 64K --reps 2 --warmup 1"
steps=3
. "$(dirname "$0")/exec_lib.sh"

llama() { name="$1"; np="$2"; shift 2; run "$name" "$np" --model tiny-llama "$@"; }
moe() { name="$1"; np="$2"; shift 2; run "$name" "$np" --model tiny-moe "$@"; }

# ---- tiny-llama, global batch 4 ----
llama lref 1 --micro-batch 4 || exit 1
echo "tiny-llama reference (1 rank, stage 0): $(losses "$tmp/lref.json" | tr '\n' ' ')"
for s in 0 1 2 3; do
    llama "llama_s${s}_np2" 2 --stage $s --micro-batch 2 && same "llama_s${s}_np2" lref
done
llama llama_s3_np4 4 --stage 3 --micro-batch 1 && same llama_s3_np4 lref
llama llama_s2_np4_bucket 4 --stage 2 --micro-batch 1 --bucket 7777 && same llama_s2_np4_bucket lref
llama llama_mp2_s1_np2 2 --mp 2 --stage 1 --micro-batch 4 && same llama_mp2_s1_np2 lref
llama llama_mp2_s3_ckpt_np4 4 --mp 2 --stage 3 --micro-batch 2 --checkpoint && same llama_mp2_s3_ckpt_np4 lref
llama llama_pp2_np2 2 --pp 2 --micro-batch 1 --grad-accum 4 && same llama_pp2_np2 lref

# ---- tiny-moe, global batch 4 ----
moe mref 1 --micro-batch 4 || exit 1
echo "tiny-moe reference (1 rank, stage 0, EP 1): $(losses "$tmp/mref.json" | tr '\n' ' ')"
moe moe_ep1_s2_np2 2 --stage 2 --micro-batch 2 && same moe_ep1_s2_np2 mref
for s in 0 1 2 3; do
    moe "moe_ep2_s${s}_np2" 2 --ep 2 --stage $s --micro-batch 2 && same "moe_ep2_s${s}_np2" mref
done
moe moe_ep2_s1_np4 4 --ep 2 --stage 1 --micro-batch 1 && same moe_ep2_s1_np4 mref
moe moe_ep2_s3_np4 4 --ep 2 --stage 3 --micro-batch 1 && same moe_ep2_s3_np4 mref
moe moe_ep1_s3_np4 4 --ep 1 --stage 3 --micro-batch 1 && same moe_ep1_s3_np4 mref
moe moe_ep4_s2_np4 4 --ep 4 --stage 2 --micro-batch 1 --bucket 7777 && same moe_ep4_s2_np4 mref
moe moe_mp2_ep2_s1_np4 4 --mp 2 --ep 2 --stage 1 --micro-batch 2 && same moe_mp2_ep2_s1_np4 mref
moe moe_ep2_s3_ckpt_np2 2 --ep 2 --stage 3 --micro-batch 1 --grad-accum 2 --checkpoint && same moe_ep2_s3_ckpt_np2 mref
# the comparison sees a different run
moe moe_lr 2 --ep 2 --stage 1 --micro-batch 2 --lr 3e-3
differs moe_lr mref "a different learning rate gives different tiny-moe losses" \
    "--lr 3e-3 gave the reference's tiny-moe losses"

# ---- --validate: memory is the replay of the schedule (to the byte), the step is predicted ----
if "$zplan" calibrate $small_profile -o "$tmp/p.json" > /dev/null 2>&1; then
    for v in "tiny-llama --stage 2" "tiny-moe --ep 2 --stage 3"; do
        # shellcheck disable=SC2086
        if timeout 120 "$mpirun_sh" 2 "$zplan" exec --model $v --steps 3 --micro-batch 2 --validate \
               --profile "$tmp/p.json" --format json > "$tmp/v.json" 2> "$tmp/v.err" &&
           python3 - "$tmp/v.json" "$v" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d["validation"]
me = v["memory_error"]
for k, e in me.items():
    assert abs(e) < 1e-9, (k, e)
assert v["predicted_memory_gb"]["total"] > 0, v
assert v["predicted_step_s"] > 0 and v["measured_step_s"] > 0, v
print("ok   --validate %s: memory %.4f MB predicted exactly; step %.3g s predicted, %.3g s measured (%+.0f%%)"
      % (sys.argv[2], v["predicted_memory_gb"]["total"] * 1e3, v["predicted_step_s"], v["measured_step_s"],
         100 * v["step_error"]))
PY
        then :; else echo "FAIL: --validate $v"; cat "$tmp/v.err"; fail=1; fi
    done
else
    echo "FAIL: zplan calibrate --quick"; fail=1
fi

# ---- what the executor does not run: exit 2, naming the option ----
bad 4 "key/value heads" --model tiny-llama --mp 4
bad 2 "ep" --model tiny --ep 2
bad 2 "ep" --model tiny-moe --ep 4
bad 2 "--pp with the mixture-of-experts" --model tiny-moe --pp 2
bad 1 "--offload with the mixture-of-experts" --model tiny-moe --stage 1 --offload optimizer
bad 1 "multi-head latent attention" --model deepseek-v2-lite
exit $fail
