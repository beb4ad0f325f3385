#!/usr/bin/env bash
# The framework releases of 2020-2022 as strategy rows (issue #29 item 1, vocab/zp_framework.c): what each
# refuses (options its release did not have), and what each changes in the step, in the direction and by the
# mechanism expected. deepspeed-2020 (DeepSpeed v0.2 with Megatron-LM 2019): fp16 only, the loss scaler's
# per-tensor overflow check and norm (the op fp16_scaler_check, in the optimizer part), ZeRO's reductions on
# the compute stream unless --overlap-comm is given. megatron-deepspeed-2022 (BLOOM's): ZeRO-1 at most beside
# its pipeline engine, bf16 with fp32 gradients (reduced in fp32), reductions after the flush.
# Usage: test_frameworks.sh ZPLAN
set -u
Z="$1"
. "$(dirname "$0")/lib.sh"

# col FIELD < CSV: the field of the first data row
col() { awk -F, -v k="$1" 'NR==1{for(i=1;i<=NF;i++) if($i==k) c=i; next} NR==2{print $c; exit}'; }
# more A B: A > B (numbers)
more() { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a > b)}'; }

echo "== what the releases did not have"
bad "2020: bf16" "^zplan: --framework deepspeed-2020: DeepSpeed v0.2 with Megatron-LM 2019 \(2020, the ZeRO paper's\) does not run bf16 or fp8" --model 1.3B --gpus 8 --cluster dgx-a100 --framework deepspeed-2020 --precision bf16
bad "2020: pipeline" "does not run pipeline stages \(--pp; its pipeline engine came later\)" --model 1.3B --gpus 16 --global-batch 64 --pp 2 --framework deepspeed-2020
bad "2020: ZeRO-3" "does not run ZeRO stage 3 \(--stage\)" --model 1.3B --gpus 16 --stage 3 --framework deepspeed-2020
bad "2020: offload" "does not run --offload" --model 1.3B --gpus 16 --stage 2 --offload optimizer --framework deepspeed-2020
bad "2020: FlashAttention" "does not run FlashAttention" --model 1.3B --gpus 8 --cluster dgx-a100 --framework deepspeed-2020 --flash-attention
bad "2022: ZeRO-2 (BF16_Optimizer)" "^zplan: --framework megatron-deepspeed-2022: .* does not run ZeRO stages 2-3 \\(--stage\\)" --model 1.3B --gpus 16 --global-batch 64 --pp 2 --stage 2 --framework megatron-deepspeed-2022
bad "2022: overlap" "^zplan: --framework megatron-deepspeed-2022: .* reduces gradients after the backward" --model 1.3B --gpus 16 --framework megatron-deepspeed-2022 --overlap-comm
bad "2022: SP" "does not run --sp" --model 1.3B --gpus 16 --cluster dgx-a100 --mp 2 --framework megatron-deepspeed-2022 --sp
bad "2022: interleaved" "does not run the interleaved schedule" --model 1.5B --gpus 16 --global-batch 64 --pp 4 --virtual-stages 2 --framework megatron-deepspeed-2022
bad "unknown names both" "use any, megatron-2021, deepspeed, deepspeed-2020 or megatron-deepspeed-2022" --model 1.3B --gpus 16 --framework deepspeed-2019

echo "== deepspeed-2020: the ZeRO paper's 100B run (400 V100, MP 16, stage 2, Pa)"
ZERO="--model 100B --gpus 400 --stage 2 --mp 16 --global-batch 800 --pa --micro-batch 32 --exact --format csv"
"$Z" $ZERO >"$T/any.csv" 2>"$T/err" || ko "any: $(cat "$T/err")"
"$Z" $ZERO --framework deepspeed-2020 >"$T/ds.csv" 2>"$T/err" || ko "deepspeed-2020: $(cat "$T/err")"
"$Z" $ZERO --framework deepspeed-2020 --overlap-comm >"$T/dso.csv" 2>"$T/err" || ko "deepspeed-2020 --overlap-comm: $(cat "$T/err")"
a=$(col step_time_s <"$T/any.csv"); d=$(col step_time_s <"$T/ds.csv"); o=$(col step_time_s <"$T/dso.csv")
# reductions on the compute stream (v0.2.0's overlap_comm default false): the step grows by seconds
if more "$d" "$(awk -v a="$a" 'BEGIN{print a * 1.02}')"; then ok; else ko "deepspeed-2020 step $d s not 2% above any's $a s"; fi
# with --overlap-comm only the scaler's per-tensor passes remain: longer, by well under 1%
if more "$o" "$a" && more "$(awk -v a="$a" 'BEGIN{print a * 1.01}')" "$o"; then ok; else
  ko "deepspeed-2020 --overlap-comm step $o s: want above any's $a s by < 1%"; fi
echo "  step: any $a s, deepspeed-2020 $d s, with --overlap-comm $o s"

echo "== deepspeed-2020: fp16 on an A100 (bf16 by default otherwise), the scaler's op in the schedule"
"$Z" --model 1.3B --gpus 8 --cluster dgx-a100 --stage 2 --micro-batch 4 --exact --framework deepspeed-2020 --format csv >"$T/a.csv" 2>"$T/err" || ko "A100: $(cat "$T/err")"
p=$(col precision <"$T/a.csv")
if [ "$p" = fp16 ]; then ok; else ko "deepspeed-2020 on dgx-a100: precision '$p', want fp16"; fi
"$Z" schedule --model 1.3B --gpus 8 --cluster dgx-a100 --stage 2 --micro-batch 4 --exact --framework deepspeed-2020 >"$T/out" 2>"$T/err" || ko "schedule: $(cat "$T/err")"
has "the scaler's op before Adam" "compute optimizer .*fp16_scaler_check"
"$Z" schedule --model 1.3B --gpus 8 --cluster dgx-a100 --stage 2 --micro-batch 4 --exact --framework deepspeed >"$T/out" 2>"$T/err"
if grep -q fp16_scaler_check "$T/out"; then ko "deepspeed (today's) has the 2020 scaler check"; else ok; fi

echo "== megatron-deepspeed-2022: BLOOM's shape scaled down (TP 4, PP 4, ZeRO-1, bf16)"
B="--model 13B --gpus 64 --cluster dgx-a100 --mp 4 --pp 4 --stage 1 --micro-batch 2 --global-batch 256 --exact --format csv"
"$Z" $B --framework deepspeed >"$T/d.csv" 2>"$T/err" || ko "deepspeed: $(cat "$T/err")"
"$Z" $B --framework megatron-deepspeed-2022 >"$T/m.csv" 2>"$T/err" || ko "megatron-deepspeed-2022: $(cat "$T/err")"
g=$(col grad_bytes <"$T/m.csv")
if [ "$g" = 4 ]; then ok; else ko "megatron-deepspeed-2022: grad_bytes '$g', want 4 (BF16_Optimizer's fp32 gradients)"; fi
sd=$(col step_time_s <"$T/d.csv"); sm=$(col step_time_s <"$T/m.csv")
if more "$sm" "$sd"; then ok; else ko "megatron-deepspeed-2022 step $sm s not above deepspeed's $sd s"; fi
echo "  step: deepspeed $sd s, megatron-deepspeed-2022 $sm s"

echo "== the ZeRO paper's Megatron-LM baselines across DGX-2 nodes (issue #29 item 2)"
# Megatron-LM 2019 splits the heads over the MP ranks (mpu divide(num_attention_heads, world_size)): the
# paper's 100B baseline at MP 128 needs a model of 128 heads (its Table 4's 100B has 64); the refusal says so
bad "MP 128 over 64 heads" "use an --mp that divides 64, or a model whose heads are a multiple of 128" --model 100B --gpus 384 --mp 128 --stage 0 --framework deepspeed-2020
printf '{"model_type": "gpt2", "n_layer": 125, "n_embd": 8192, "n_head": 128, "n_positions": 1024, "vocab_size": 50257}' >"$T/100b128.json"
"$Z" --model "$T/100b128.json" --cluster dgx2 --gpus 384 --stage 0 --mp 128 --micro-batch 2 --exact --framework deepspeed-2020 --format csv >"$T/m.csv" 2>"$T/err" || ko "100B, 128 heads, MP 128: $(cat "$T/err")"
t=$(col tflops_per_gpu <"$T/m.csv")
if more "$t" 0; then ok; else ko "100B MP 128 on 384 GPUs: TFLOPs/GPU '$t'"; fi
echo "  100B (128 heads), MP 128 over 8 DGX-2, batch 6: $t TFLOPs/GPU"

finish
