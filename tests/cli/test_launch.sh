#!/usr/bin/env bash
# A verdict on a launch a team already has (issue #30 items 4 and 5): the frameworks' own example files
# (tests/cli/fixtures/, sources in its README) read and judged: Megatron-LM's GPT-3 175B launch script,
# torchtitan's Llama 3 8B TOML, NeMo's Megatron GPT YAML, and a DeepSpeed config; malformed and misspelt
# launch files exit 2 naming the line and the key; what zplan emits (--emit-megatron-args, --emit-torchtitan,
# --emit-ds-config) reads back as the same plan with the same step; training.compile (torchtitan's default
# false: eager) against compile true, --compile on|off, compile = in --emit-torchtitan.
# Usage: test_launch.sh ZPLAN SRCROOT
set -u
Z="$1"
F="$2/tests/cli/fixtures"
. "$(dirname "$0")/lib.sh"

# judged NAME ARGS...: exit 0, and the verdict's three lines on stdout
judged() {
  local what="$1"; shift
  if "$Z" "$@" >"$T/out" 2>"$T/err" && grep -q '^Verdict on ' "$T/out" && grep -q '^  your launch: ' "$T/out" &&
     grep -q '^  best: ' "$T/out"; then
    ok; echo "  judged $what:"; sed -n '/^Verdict on /,$p' "$T/out" | sed 's/^/    /'
  else
    ko "$what: rc=$? $(cat "$T/err") $(tail -5 "$T/out")"
  fi
}

echo "== the frameworks' own files, judged"
# Megatron-LM: 8 GPUs a node x NUM_NODES=1 in the script, for TP 8 x PP 16: --gpus gives the 1024 it needs
# (priced analytically: what is checked is the launch read, not its simulated step)
judged "Megatron-LM train_gpt3_175b_distributed.sh" --megatron-args "$F/train_gpt3_175b_distributed.sh" \
  --gpus 1024 --cluster dgx-a100 --top 1 --analytic
has "175B: its plan" "ZeRO stage 0, TP 8, PP 16 (1f1b, 1 chunk a rank), DP 8, micro-batch 1 x 192, no recompute"
has "175B: the model" "96 layers, hidden 12288, 96 heads, seq 2048, vocab 51200"
has "175B: rampup noted" "rampup-batch-size 16 16 5859375: judged at the full global batch"
has "175B: one change" "^  one change:  --"
judged "torchtitan llama3_8b.toml" --torchtitan "$F/llama3_8b.toml" --gpus 64 --cluster dgx-a100 --top 1
has "llama3 8B: its plan (selective_ac_option 'op': torchtitan's op-level policy)" \
  "ZeRO stage 3, TP 1, DP 64, micro-batch 1 x 1, op recompute"
has "llama3 8B: the flavor" "model: llama-3-8b"
# torchtitan's HSDP beside a pipeline: FSDP within the 4 shard ranks, replicated 8 times (--shard-group 4), the
# reshard policy's default with PP (the stage's parameters kept gathered: 60.7 GB with the fixture's op-level
# recompute, on the 96 GB GPU the test was written for) or read (always)
sed -e 's/^data_parallel_replicate_degree = 1/data_parallel_replicate_degree = 8/' \
    -e 's/^data_parallel_shard_degree = -1/data_parallel_shard_degree = 4/' \
    -e 's/^pipeline_parallel_degree = 1/pipeline_parallel_degree = 2/' \
    -e 's/^batch_size = 1/local_batch_size = 8\nglobal_batch_size = 256/' "$F/llama3_8b.toml" >"$T/hsdp.toml"
judged "torchtitan HSDP with PP" --torchtitan "$T/hsdp.toml" --gpus 64 --cluster dgx-a100 --gpu-mem 96G --analytic \
  --top 1
has "HSDP: shard groups of 4, kept gathered" "op-ckpt 1f1b HSDP4 keep-params  *60.7 "
sed 's/^pipeline_parallel_degree = 2/pipeline_parallel_degree = 2\nfsdp_reshard_after_forward = "always"/' \
  "$T/hsdp.toml" >"$T/hsdp2.toml"
judged "torchtitan HSDP, resharded" --torchtitan "$T/hsdp2.toml" --gpus 64 --cluster dgx-a100 --analytic --top 1
has "HSDP: resharded after forward" "1f1b HSDP4  *[0-9]"
judged "NeMo megatron_gpt_config.yaml" --nemo "$F/megatron_gpt_config.yaml" --cluster dgx-a100 --top 1
has "NeMo: its plan" "ZeRO stage 0, TP 1, DP 1, micro-batch 4 x 2, no recompute"
has "NeMo: the GPUs from trainer" "GPUs: 1, as the file states them"
has "NeMo: interpolated positions" "12 layers, hidden 768, 12 heads, seq 512, vocab 50304"
# NeMo-Framework-Launcher's GPT-3 5B: 16 nodes x 8 from trainer, ${multiply:4, ${.hidden_size}} resolved
judged "NeMo-Framework-Launcher gpt3 5b.yaml" --nemo "$F/gpt3_5b.yaml" --cluster dgx-a100 --top 1
has "5B: its plan" "ZeRO stage 1, TP 1, DP 128, micro-batch 4 x 4, no recompute"
has "5B: multiply resolved" "24 layers, hidden 4096, 32 heads, seq 2048, vocab 50304, FFN 16384"
cat >"$T/ds.json" <<'EOF'
{"train_batch_size": 512, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
 "bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "overlap_comm": true}}
EOF
judged "a DeepSpeed config" --ds-config "$T/ds.json" --model llama-2-13b --gpus 64 --cluster dgx-a100 --top 1
has "DeepSpeed: its plan" "ZeRO stage 3, TP 1, DP 64, micro-batch 4 x 2, full recompute"
"$Z" --ds-config "$T/ds.json" --model llama-2-13b --gpus 64 --cluster dgx-a100 --analytic --format json \
  >"$T/j.json" 2>"$T/err"
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/j.json" && grep -q '^Verdict on ' "$T/err"; then
  ok; else ko "JSON answer with a verdict: stdout must stay JSON, the verdict on stderr"; fi

echo "== malformed and misspelt launch files"
cp "$F/train_gpt3_175b_distributed.sh" "$T/m.sh"
sed 's/--num-layers 96/--num-layer 96/' "$T/m.sh" >"$T/typo.sh"
bad "misspelt Megatron-LM key" 'typo.sh:29: unknown key --num-layer: did you mean --num-layers' \
  --megatron-args "$T/typo.sh" --gpus 1024
sed 's/--micro-batch-size 1/--micro-batch-size one/' "$T/m.sh" >"$T/val.sh"
bad "Megatron-LM value not a number" 'val.sh:38: --micro-batch-size: .one. is not a whole number' \
  --megatron-args "$T/val.sh" --gpus 1024
sed 's/--seq-length 2048/--seq-length $SEQ/' "$T/m.sh" >"$T/var.sh"
bad "a shell variable left unset" 'var.sh:[0-9]+: --seq-length: its value .\$SEQ. is not set in the file' \
  --megatron-args "$T/var.sh" --gpus 1024
printf -- '--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --vocab-size 1000 \\\n  --micro-batch-size 1 --context-parallel-size 2\n' >"$T/cp.args"
judged "a Megatron-LM launch with context parallelism 2" --megatron-args "$T/cp.args" --gpus 8
has "the launch's CP degree" 'your launch: .*CP 2, DP 4'
sed 's/--context-parallel-size 2/--context-parallel-size 2 --cp-comm-type all_gather/' "$T/cp.args" >"$T/cpag.args"
judged "a Megatron-LM launch with CP's all-gather" --megatron-args "$T/cpag.args" --gpus 8
sed 's/--context-parallel-size 2/--context-parallel-size 2 --cp-comm-type a2a/' "$T/cp.args" >"$T/cpa2a.args"
bad "CP's all-to-all form" "cpa2a.args:[0-9]+: --cp-comm-type 'a2a': zplan models p2p and all_gather" --megatron-args "$T/cpa2a.args" --gpus 8
sed 's/--context-parallel-size 2/--context-parallel-size 3/' "$T/cp.args" >"$T/cp3.args"
bad "CP not cutting the sequence" '2 x 3 equal chunks' --megatron-args "$T/cp3.args" --gpus 24
printf -- '--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --vocab-size 1000 --fp16 x\n' >"$T/flag.args"
bad "a flag with a value" 'flag.args:1: --fp16 is a flag and takes no value' --megatron-args "$T/flag.args" --gpus 8
printf -- '--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 --tokenizer-type Llama3Tokenizer\n' >"$T/voc.args"
bad "an unknown tokenizer's vocabulary" 'the vocabulary is not stated' --megatron-args "$T/voc.args" --gpus 8
bad "--mp beside a launch" 'sets the plan: drop --mp' --megatron-args "$T/cp.args" --gpus 8 --mp 2
bad "--model beside a stated shape" "states the model's shape: drop --model" --megatron-args "$T/cp.args" \
  --gpus 8 --model 1.5B
bad "a launch with an emission" 'is judged, not converted' --megatron-args "$T/cp.args" --gpus 8 --emit-torchtitan "$T/x.toml"
bad "two launch files" 'one launch file at a time' --megatron-args "$T/cp.args" --nemo "$T/cp.args" --gpus 8
sed 's/^tensor_parallel_degree = 1/tensor_paralel_degree = 1/' "$F/llama3_8b.toml" >"$T/typo.toml"
bad "misspelt torchtitan key" 'typo.toml:43: unknown key parallelism.tensor_paralel_degree: did you mean parallelism.tensor_parallel_degree' \
  --torchtitan "$T/typo.toml" --gpus 64
sed 's/^\[training\]/[training/' "$F/llama3_8b.toml" >"$T/hdr.toml"
bad "torchtitan header unclosed" 'hdr.toml:32: a section header must be \[name\]' --torchtitan "$T/hdr.toml" --gpus 64
sed 's/^context_parallel_degree = 1/context_parallel_degree = 2/' "$F/llama3_8b.toml" >"$T/cp.toml"
judged "torchtitan context parallelism 2" --torchtitan "$T/cp.toml" --gpus 64
has "torchtitan's CP degree" 'your launch: .*CP 2, DP 32'
sed "s/^mode = 'selective'/mode = 'sometimes'/" "$F/llama3_8b.toml" >"$T/mode.toml"
bad "torchtitan recompute mode" "mode.toml:56: activation_checkpoint.mode 'sometimes'" --torchtitan "$T/mode.toml" --gpus 64
# torchtitan's deepseek_v3 flavors as the zoo's models (16B: DeepSeek-V2-Lite's shape) with its expert
# parallelism (an all-to-all, a copy per token and expert) and its op-level recompute of MoE blocks
sed -e 's/^name = "llama3"/name = "deepseek_v3"/' -e 's/^flavor = "8B"/flavor = "16B"/' \
    -e 's/^tensor_parallel_degree = 1/tensor_parallel_degree = 1\nexpert_parallel_degree = 8/' \
    -e "s/^mode = 'selective'/mode = 'full'/" "$F/llama3_8b.toml" >"$T/dsv3.toml"
judged "torchtitan deepseek_v3 16B with EP 8" --torchtitan "$T/dsv3.toml" --gpus 64 --cluster dgx-h100 --analytic --top 1
has "torchtitan EP: its plan" 'your launch: .*EP 8 (alltoall), DP 64'
sed "s/^mode = 'full'/mode = 'selective'/" "$T/dsv3.toml" >"$T/dsv3op.toml"
judged "torchtitan deepseek_v3 16B with EP 8 and op-level recompute" --torchtitan "$T/dsv3op.toml" --gpus 64 \
  --cluster dgx-h100 --analytic --top 1
has "torchtitan's op-level recompute of MoE blocks: its plan" 'your launch: .*EP 8 (alltoall), DP 64, .*, op recompute'
if "$Z" --model deepseek-v2-lite --gpus 64 --ep 8 --mp 1 --pp 1 --stage 3 --micro-batch 1 --global-batch 64 --exact \
     --recompute op --cluster dgx-h100 --analytic --emit-torchtitan "$T/dsop.toml" >/dev/null 2>"$T/err" &&
   grep -q 'selective_ac_option = "op"' "$T/dsop.toml"; then
  ok
  read_back "the torchtitan TOML of DeepSeek-V2-Lite's op-level recompute" "torchtitan TOML of op-level MoE" \
    --torchtitan "$T/dsop.toml" --gpus 64 --cluster dgx-h100 --analytic
else
  ko "emitting op-level recompute of MoE blocks for torchtitan: $(cat "$T/err")"
fi
sed 's/^tensor_parallel_degree = 1/tensor_parallel_degree = 2/' "$T/dsv3.toml" >"$T/dsv3tp.toml"
bad "torchtitan EP beside TP with whole experts" "expert_tensor_parallel_degree defaults to 1" \
  --torchtitan "$T/dsv3tp.toml" --gpus 64 --cluster dgx-h100 --analytic
bad "--mtp-layers beside a launch" "states the model's multi-token prediction .*drop --mtp-layers" \
  --torchtitan "$T/dsv3.toml" --gpus 64 --cluster dgx-h100 --analytic --mtp-layers 0
sed 's/^  micro_batch_size: 4/  micro_batch_sise: 4/' "$F/megatron_gpt_config.yaml" >"$T/typo.yaml"
bad "misspelt NeMo key" 'typo.yaml:46: unknown key model.micro_batch_sise: did you mean model.micro_batch_size' \
  --nemo "$T/typo.yaml"
sed 's/^  num_layers: 12/\tnum_layers: 12/' "$F/megatron_gpt_config.yaml" >"$T/tab.yaml"
bad "NeMo tab indentation" 'tab.yaml:55: a tab in the indentation' --nemo "$T/tab.yaml"
sed 's/^  hidden_size: 768/  hidden_size: ${model.nope}/' "$F/megatron_gpt_config.yaml" >"$T/interp.yaml"
bad "NeMo unresolved interpolation" 'interp.yaml:56: model.hidden_size: its value' --nemo "$T/interp.yaml"
sed 's/^  pipeline_model_parallel_size: 1 /  context_parallel_size: 2 /' "$F/megatron_gpt_config.yaml" >"$T/cp.yaml"
bad "NeMo context parallelism beyond its GPU" 'context parallelism 2 does not divide the 1 ranks' --nemo "$T/cp.yaml"
# NeMo FP8: Transformer Engine's delayed scaling unless model.fp8_recipe says; refused where zplan does not
# model it (FP8 parameters, bf16 weight gradients) or the GPU cannot run it
sed 's/^  fp8: False/  fp8: True/' "$F/gpt3_5b.yaml" >"$T/fp8.yaml"
judged "NeMo FP8 (delayed)" --nemo "$T/fp8.yaml" --cluster dgx-h100 --top 1
has "NeMo FP8: the recipe" 'fp8 (recipe delayed, Transformer Engine)'
bad "NeMo FP8 on A100" 'has no FP8 tensor cores' --nemo "$T/fp8.yaml" --cluster dgx-a100
sed 's/^  fp8_hybrid: True .*/  fp8_recipe: mxfp8/' "$T/fp8.yaml" >"$T/mx.yaml"
bad "NeMo mxfp8 on H100" 'mxfp8: the H100-SXM5-80GB of --cluster dgx-h100 has no tensor cores that apply block scales' \
  --nemo "$T/mx.yaml" --cluster dgx-h100
sed 's/^  fp8_hybrid: True .*/  fp8_recipe: nvfp4/' "$T/fp8.yaml" >"$T/nv.yaml"
bad "NeMo unknown FP8 recipe" 'nv.yaml:139: model.fp8_recipe: --fp8-recipe nvfp4: not a Megatron-core recipe' \
  --nemo "$T/nv.yaml" --cluster dgx-h100
sed 's/^  fp8_hybrid: True .*/  fp8_params: True/' "$T/fp8.yaml" >"$T/fp.yaml"
bad "NeMo FP8 parameters" 'fp.yaml:139: model.fp8_params true: FP8 parameters' --nemo "$T/fp.yaml" --cluster dgx-h100
sed 's/^  fp8_hybrid: True .*/  fp8_wgrad: False/' "$T/fp8.yaml" >"$T/wg.yaml"
bad "NeMo bf16 weight gradients" 'wg.yaml:139: model.fp8_wgrad false' --nemo "$T/wg.yaml" --cluster dgx-h100
# NeMo's interleaved schedule: model.overlap_p2p_comm False (the 5B YAML's, NeMo's default) waits for each send
sed -e 's/^  pipeline_model_parallel_size: 1/  pipeline_model_parallel_size: 4/' \
    -e 's/^  virtual_pipeline_model_parallel_size: null.*/  virtual_pipeline_model_parallel_size: 2/' "$F/gpt3_5b.yaml" >"$T/vp.yaml"
sed 's/^  overlap_p2p_comm: False.*/  overlap_p2p_comm: True/' "$T/vp.yaml" >"$T/vpon.yaml"
vstep() { "$Z" --nemo "$1" --cluster dgx-a100 --top 1 2>/dev/null | sed -n 's/^  your launch: \([0-9.]*\) s a step.*/\1/p'; }
v_off=$(vstep "$T/vp.yaml") v_on=$(vstep "$T/vpon.yaml")
echo "  NeMo 5B, PP 4 x 2 chunks: model.overlap_p2p_comm False $v_off s, True $v_on s"
awk -v a="$v_on" -v b="$v_off" 'BEGIN { exit !(a > 0 && a < b) }' && ok || ko "NeMo overlap_p2p_comm: on $v_on s, off $v_off s"
# ... and model.overlap_p2p_comm_warmup_flush True the warm-up's and the flush's sends too; without
# overlap_p2p_comm True beside it, refused (not modelled)
sed 's/^  overlap_p2p_comm: True.*/  overlap_p2p_comm: True\n  overlap_p2p_comm_warmup_flush: True/' "$T/vpon.yaml" >"$T/vpall.yaml"
v_all=$(vstep "$T/vpall.yaml")
echo "  NeMo 5B, PP 4 x 2 chunks: model.overlap_p2p_comm_warmup_flush True $v_all s"
awk -v a="$v_all" -v b="$v_on" 'BEGIN { exit !(a > 0 && a < b) }' && ok || ko "NeMo warmup flush: $v_all s, not below $v_on s"
sed 's/^  overlap_p2p_comm: False.*/  overlap_p2p_comm: False\n  overlap_p2p_comm_warmup_flush: True/' "$T/vp.yaml" >"$T/wf.yaml"
bad "NeMo warm-up sends without the steady state's" "wf.yaml: the warm-up's and the flush's pipeline sends overlapped without the steady state's" \
  --nemo "$T/wf.yaml" --cluster dgx-a100
sed 's/^  global_batch_size: 8/  global_batch_size: 6/' "$F/megatron_gpt_config.yaml" >"$T/gb.yaml"
bad "NeMo global batch not micro x DP" 'global batch 6 is not a multiple of micro-batch 4' --nemo "$T/gb.yaml"

echo "== what zplan writes reads back as the same plan, with the same step"
# steps_match WHAT EMITTED: the step in the emitted file's header equals the verdict's "your launch" step
steps_match() {
  local e j
  e=$(sed -n 's/.*; step \([0-9.e+]*\) s, .*/\1/p' "$2" | head -1)
  j=$(sed -n 's/^  your launch: \([0-9.e+]*\) s a step.*/\1/p' "$T/out")
  if [ -n "$e" ] && [ "$e" = "$j" ]; then ok; echo "  $1: written at $e s, read back at $j s"
  else ko "$1: written at '$e' s, read back at '$j' s: $(cat "$2") $(tail -4 "$T/out")"; fi
}
# read_back JUDGED STEPS OPTION FILE ARGS...: a launch file zplan wrote, judged (as judged JUDGED) and its step
# read back as written (as steps_match STEPS)
read_back() {
  local judged_what="$1" steps_what="$2" opt="$3" file="$4"; shift 4
  judged "$judged_what" "$opt" "$file" "$@"
  steps_match "$steps_what" "$file"
}
if "$Z" --model llama-3-8b --gpus 64 --cluster dgx-a100 --analytic --emit-megatron-args "$T/e.args" \
     --emit-torchtitan "$T/e.toml" >/dev/null 2>"$T/err"; then
  ok
  grep -q -- '--rotary-base 500000' "$T/e.args" && grep -q -- '--vocab-size 128256' "$T/e.args" && ok ||
    ko "Megatron-LM args state the rope base and the vocabulary: $(cat "$T/e.args")"
  read_back "the Megatron-LM arguments zplan wrote" "Megatron-LM arguments" --megatron-args "$T/e.args" --gpus 64 \
    --cluster dgx-a100 --analytic
  read_back "the torchtitan TOML zplan wrote" "torchtitan TOML" --torchtitan "$T/e.toml" --gpus 64 --cluster dgx-a100 \
    --analytic
else
  ko "emitting: $(cat "$T/err")"
fi
# TP overlap reads back: Megatron-LM's --tp-comm-overlap (te), torchtitan's enable_async_tensor_parallel (async)
if "$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --seq 4k --mp 8 --pp 1 --sp --stage 1 --global-batch 8 \
     --recompute selective --analytic --tp-comm-overlap te --emit-megatron-args "$T/tpo.args" >/dev/null 2>"$T/err" &&
   "$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --seq 4k --mp 8 --pp 1 --sp --stage 3 --global-batch 8 \
     --recompute full --analytic --tp-comm-overlap async --emit-torchtitan "$T/tpo.toml" >/dev/null 2>>"$T/err" &&
   grep -q -- '--tp-comm-overlap' "$T/tpo.args" && grep -q 'enable_async_tensor_parallel = true' "$T/tpo.toml"; then
  ok
  read_back "Megatron-LM arguments with --tp-comm-overlap" "Megatron-LM arguments with --tp-comm-overlap" \
    --megatron-args "$T/tpo.args" --gpus 16 --cluster dgx-h100 --analytic
  read_back "torchtitan TOML with async TP" "torchtitan TOML with async TP" --torchtitan "$T/tpo.toml" --gpus 16 \
    --cluster dgx-h100 --analytic
else
  ko "emitting TP overlap: $(cat "$T/err")"
fi
sed 's/ --sequence-parallel//' "$T/tpo.args" >"$T/tponosp.args"
bad "--tp-comm-overlap without SP" 'needs sequence parallelism.*--sequence-parallel' --megatron-args "$T/tponosp.args" --gpus 16 \
  --cluster dgx-h100
echo "== mixture of experts from Megatron-LM arguments: experts, dispatcher, overlap, routing groups, layer pattern"
cat >"$T/moe.sh" <<'EOF'
#!/bin/bash
GPUS_PER_NODE=8
NUM_NODES=4
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)
MODEL_ARGS=(
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32
    --group-query-attention --num-query-groups 8 --seq-length 4096 --max-position-embeddings 32768
    --swiglu --normalization RMSNorm --position-embedding-type rope --rotary-base 1000000
    --untie-embeddings-and-output-weights --disable-bias-linear --vocab-size 32000 --make-vocab-size-divisible-by 1
)
MOE_ARGS=(
    --num-experts 8 --moe-router-topk 2 --moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 1e-2
    --moe-grouped-gemm --moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm
)
TRAIN=(
    --micro-batch-size 1 --global-batch-size 256 --bf16 --use-distributed-optimizer --overlap-grad-reduce
    --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 1
    --expert-model-parallel-size 8 --recompute-granularity selective
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${MODEL_ARGS[@]} ${MOE_ARGS[@]} ${TRAIN[@]}
EOF
judged "a Mixtral-shaped Megatron-LM script" --megatron-args "$T/moe.sh" --cluster dgx-h100 --analytic --top 1
has "MoE: its plan" "TP 2 with SP, EP 8 (alltoall, overlapped), DP 16, micro-batch 1 x 16, selective recompute"
has "MoE: the model (Mixtral 8x7B's 46.7B)" "4.67e+10 parameters"
# DeepSeek's layout: a dense first block, a shared expert, group-limited routing, DeepEP
sed -e 's/--num-experts 8 --moe-router-topk 2/--num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 1024 --moe-shared-expert-intermediate-size 2048 --moe-router-num-groups 4 --moe-router-group-topk 2 --moe-router-enable-expert-bias --moe-layer-freq ([0]*1+[1]*31)/' \
    -e 's/--moe-token-dispatcher-type alltoall/--moe-token-dispatcher-type flex --moe-enable-deepep/' "$T/moe.sh" >"$T/ds.sh"
"$Z" --megatron-args "$T/ds.sh" --cluster dgx-h100 --analytic --top 1 --json >"$T/ds.json" 2>"$T/err" || ko "DeepSeek-shaped: $(cat "$T/err")"
python3 - "$T/ds.json" <<'PY' && ok "DeepSeek-shaped: dense first block, shared expert, groups, DeepEP read" || ko "DeepSeek-shaped: $(head -c 300 "$T/ds.json")"
import json, sys
d = json.load(open(sys.argv[1])); m = d["model"]
sys.exit(0 if m["experts"] == 16 and m["top_k"] == 4 and m["shared_experts"] == 1 else 1)
PY
# the shared expert beside the all-to-alls (--moe-shared-expert-overlap): read with the alltoall dispatcher,
# refused with flex (Megatron-core: alltoall only) and beside the combined 1F1B
sed -e 's/--moe-token-dispatcher-type flex --moe-enable-deepep --overlap-moe-expert-parallel-comm/--moe-token-dispatcher-type alltoall --moe-shared-expert-overlap/' \
    "$T/ds.sh" >"$T/ds-so.sh"
judged "DeepSeek-shaped with --moe-shared-expert-overlap" --megatron-args "$T/ds-so.sh" --cluster dgx-h100 --analytic --top 1
has "shared experts beside: its plan" "TP 2 with SP, EP 8 (alltoall, shared experts beside), DP 16"
bad "the shared-expert overlap with flex" "--moe-shared-expert-overlap with the deepep token dispatcher: Megatron-core runs it with alltoall only" \
  --megatron-args <(sed 's/--moe-enable-deepep/--moe-enable-deepep --moe-shared-expert-overlap/' "$T/ds.sh") --cluster dgx-h100 --analytic
bad "the shared-expert overlap beside the combined 1F1B" "Megatron-core refuses the two together" \
  --megatron-args <(sed 's/--overlap-moe-expert-parallel-comm/--overlap-moe-expert-parallel-comm --moe-shared-expert-overlap/' "$T/moe.sh") --cluster dgx-h100 --analytic
# --recompute-modules: core_attn (Megatron-core's default) is zplan's selective recompute; the others are read
# (the plan names them), --moe-layer-recompute adds moe; an unknown module, or one the model has nothing for,
# is refused naming it; modules without selective granularity are noted (Megatron-core does not use them)
judged "--recompute-modules core_attn" --megatron-args <(sed 's/--recompute-granularity selective/--recompute-granularity selective --recompute-modules core_attn/' "$T/moe.sh") \
  --cluster dgx-h100 --analytic --top 1
has "core_attn is selective recompute" "micro-batch 1 x 16, selective recompute$"
judged "--recompute-modules core_attn moe_act layernorm" \
  --megatron-args <(sed 's/--recompute-granularity selective/--recompute-granularity selective --recompute-modules core_attn moe_act layernorm/' "$T/moe.sh") \
  --cluster dgx-h100 --analytic --top 1
has "the modules in the plan" "micro-batch 1 x 16, selective recompute of core_attn, moe_act, layernorm"
judged "--moe-layer-recompute" --megatron-args <(sed 's/--recompute-granularity selective/--moe-layer-recompute/' "$T/moe.sh") \
  --cluster dgx-h100 --analytic --top 1
has "--moe-layer-recompute: moe beside core_attn" "selective recompute of core_attn, moe"
bad "--recompute-modules with an unknown module" "recompute-modules: unknown module 'moe_actt'" \
  --megatron-args <(sed 's/--recompute-granularity selective/--recompute-granularity selective --recompute-modules core_attn moe_actt/' "$T/moe.sh") \
  --cluster dgx-h100 --analytic
bad "--recompute-modules mla_up_proj without MLA" "nothing to recompute for mla_up_proj: it has no multi-latent attention" \
  --megatron-args <(sed 's/--recompute-granularity selective/--recompute-granularity selective --recompute-modules mla_up_proj/' "$T/moe.sh") \
  --cluster dgx-h100 --analytic
judged "--recompute-modules with full granularity" \
  --megatron-args <(sed 's/--recompute-granularity selective/--recompute-granularity full --recompute-modules moe/' "$T/moe.sh") \
  --cluster dgx-h100 --analytic --top 1
grep -q "recompute modules without selective granularity: Megatron-core does not use them" "$T/err" && ok ||
  ko "modules beside full recompute not noted: $(cat "$T/err")"
# Megatron-core's default dispatcher (allgather) when none is stated: read as it, and refused beside the overlap
bad "the overlap with the default allgather dispatcher" "Megatron-core overlaps alltoall or flex only; state --moe-token-dispatcher-type alltoall" \
  --megatron-args <(sed 's/--moe-token-dispatcher-type alltoall//' "$T/moe.sh") --cluster dgx-h100 --analytic
sed -e 's/--moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm//' "$T/moe.sh" >"$T/moe-ag.sh"
judged "MoE with Megatron-core's default dispatcher" --megatron-args "$T/moe-ag.sh" --cluster dgx-h100 --analytic --top 1
has "MoE, default dispatcher: its plan" "TP 2 with SP, EP 8 (allgather), DP 16"
bad "flex without DeepEP" "flex without --moe-enable-deepep" \
  --megatron-args <(sed 's/--moe-token-dispatcher-type alltoall/--moe-token-dispatcher-type flex/' "$T/moe.sh") --cluster dgx-h100 --analytic
bad "EP not dividing the experts" "must divide the 16 data-parallel ranks and the 6 experts" \
  --megatron-args <(sed 's/--num-experts 8/--num-experts 6/' "$T/moe.sh") --cluster dgx-h100 --analytic
bad "a layer pattern of the wrong length" "moe-layer-freq lists 30 layers, the model has 32" \
  --megatron-args <(sed 's/--moe-grouped-gemm/--moe-grouped-gemm --moe-layer-freq ([0]*2+[1]*28)/' "$T/moe.sh") --cluster dgx-h100 --analytic
bad "a layer pattern zplan cannot read" "moe-layer-freq '\[0,2\]\*16'" \
  --megatron-args <(sed 's/--moe-grouped-gemm/--moe-grouped-gemm --moe-layer-freq [0,2]*16/' "$T/moe.sh") --cluster dgx-h100 --analytic
bad "latent-attention sizes without MLA" "without --multi-latent-attention" \
  --megatron-args <(sed 's/--moe-grouped-gemm/--moe-grouped-gemm --kv-lora-rank 512/' "$T/moe.sh") --cluster dgx-h100 --analytic
# DeepSeek-V3 as Megatron-core states it (multi-head latent attention, MTP, DeepEP; the model arguments of
# public DeepSeek-V3 launch scripts, on 512 GPUs to keep the verdict's searches small), torchrun's arguments an
# array on one line: the zoo's 671.03B parameters
cat >"$T/dsv3.sh" <<'EOF'
DISTRIBUTED_ARGS=(--nproc_per_node 8 --nnodes 64)
MODEL_ARGS=(
    --disable-bias-linear --num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128
    --kv-channels 128 --normalization RMSNorm --position-embedding-type rope --norm-epsilon 1e-6 --swiglu
    --untie-embeddings-and-output-weights --vocab-size 129280 --make-vocab-size-divisible-by 1
    --seq-length 4096 --max-position-embeddings 4096
    --multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64
    --v-head-dim 128 --qk-layernorm --rotary-scaling-factor 40 --rotary-base 10000 --mscale 1.0 --mscale-all-dim 1.0
    --num-experts 256 --moe-layer-freq ([0]*3+[1]*58) --moe-ffn-hidden-size 2048 --moe-router-topk 8
    --moe-shared-expert-intermediate-size 2048 --moe-router-enable-expert-bias --moe-router-group-topk 4
    --moe-router-num-groups 8 --moe-grouped-gemm --moe-token-dispatcher-type flex --moe-enable-deepep
    --mtp-num-layers 1
)
TRAIN=(
    --expert-model-parallel-size 32 --pipeline-model-parallel-size 16 --tensor-model-parallel-size 1
    --micro-batch-size 1 --global-batch-size 1024 --bf16 --use-distributed-optimizer
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${MODEL_ARGS[@]} ${TRAIN[@]}
EOF
"$Z" --megatron-args "$T/dsv3.sh" --cluster hgx-h800 --analytic --top 1 --json >"$T/dsv3.json" 2>"$T/err" || ko "DeepSeek-V3 with MLA: $(cat "$T/err")"
python3 - "$T/dsv3.json" <<'PY' && ok "DeepSeek-V3's Megatron-core arguments: MLA, MTP, 512 GPUs, 671.03B as the zoo's" || ko "DeepSeek-V3 with MLA: $(head -c 400 "$T/dsv3.json")"
import json, sys
d = json.load(open(sys.argv[1])); m = d["model"]
sys.exit(0 if abs(m["params"] - 671026420000) < 1e6 and m.get("attention") == "mla" else 1)
PY
# NeMo: the same keys under model. (NeMo-Framework-Launcher's 5B with 8 experts over EP 8)
awk '/^model:/{print; print "  num_moe_experts: 8\n  moe_router_topk: 2\n  expert_model_parallel_size: 8\n  moe_token_dispatcher_type: alltoall\n  moe_grouped_gemm: true"; next} {print}' \
  "$F/gpt3_5b.yaml" >"$T/moe.yaml"
judged "NeMo 5B YAML with experts" --nemo "$T/moe.yaml" --cluster dgx-a100 --analytic --top 1
has "NeMo MoE: its plan" "TP 1, EP 8 (alltoall), DP 128, micro-batch 4 x 4"
judged "NeMo MoE with model.moe_shared_expert_overlap" --nemo <(sed 's/^  moe_grouped_gemm: true/  moe_grouped_gemm: true\n  moe_shared_expert_intermediate_size: 1024\n  moe_shared_expert_overlap: true/' "$T/moe.yaml") \
  --cluster dgx-a100 --analytic --top 1
has "NeMo MoE, shared experts beside: its plan" "TP 1, EP 8 (alltoall, shared experts beside), DP 128"
judged "NeMo MoE with the default allgather dispatcher" --nemo <(sed '/moe_token_dispatcher_type/d' "$T/moe.yaml") --cluster dgx-a100 --analytic --top 1
has "NeMo MoE, default dispatcher: its plan" "TP 1, EP 8 (allgather), DP 128"
# NeMo: latent attention by Megatron-core's names under model.
awk '/^model:/{print; print "  multi_latent_attention: true\n  kv_lora_rank: 512\n  qk_head_dim: 128\n  qk_pos_emb_head_dim: 64\n  v_head_dim: 128"; next} {print}' \
  "$F/gpt3_5b.yaml" >"$T/mla.yaml"
"$Z" --nemo "$T/mla.yaml" --cluster dgx-a100 --analytic --top 1 --json >"$T/mla.json" 2>"$T/err" &&
  python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["model"]["attention"] != "mla")' "$T/mla.json" &&
  ok "NeMo: model.multi_latent_attention and its sizes read" || ko "NeMo MLA: $(cat "$T/err")"
# written and read back: DeepEP and the overlap in the arguments, the same step
if "$Z" --model mixtral-8x7b --seq 4096 --gpus 32 --cluster dgx-h100 --ep 8 --mp 2 --sp --pp 1 --stage 1 --global-batch 64 \
     --recompute selective --moe-dispatcher deepep --overlap-moe-expert-parallel-comm --analytic \
     --emit-megatron-args "$T/moe.args" >/dev/null 2>"$T/err" &&
   grep -q -- '--moe-token-dispatcher-type flex --moe-enable-deepep --overlap-moe-expert-parallel-comm' "$T/moe.args"; then
  ok
  read_back "MoE Megatron-LM arguments zplan wrote" "MoE Megatron-LM arguments" --megatron-args "$T/moe.args" \
    --gpus 32 --cluster dgx-h100 --analytic
else
  ko "emitting MoE: $(cat "$T/err") $(cat "$T/moe.args")"
fi

# DeepSeek's models written as Megatron-core arguments and read back: latent attention with every size, the
# shared experts, the dense first blocks as a --moe-layer-freq list, group-limited routing, the router's bias,
# MTP; DeepSeek-V2-Lite with the shared experts beside the all-to-alls, DeepSeek-V3 on 512 GPUs with DeepEP
for ds in "deepseek-v2-lite --gpus 64 --ep 8 --pp 1 --mp 1 --global-batch 128 --moe-shared-expert-overlap" \
          "deepseek-v3 --gpus 512 --ep 32 --pp 16 --mp 1 --global-batch 1024 --moe-dispatcher deepep"; do
  # shellcheck disable=SC2086
  if "$Z" --model $ds --cluster hgx-h800 --stage 1 --micro-batch 1 --recompute full --analytic \
       --emit-megatron-args "$T/ds.args" >/dev/null 2>"$T/err" &&
     grep -q -- '--multi-latent-attention .*--kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128' "$T/ds.args" &&
     grep -q -- '--moe-layer-freq "(\[0\]\*[13]+\[1\]\*[0-9]*)"' "$T/ds.args"; then
    ok
    read_back "Megatron-LM arguments of ${ds%% *}" "Megatron-LM arguments of ${ds%% *}" --megatron-args "$T/ds.args" \
      --gpus "$(echo "$ds" | sed 's/.*--gpus \([0-9]*\).*/\1/')" --cluster hgx-h800 --analytic
  else
    ko "emitting ${ds%% *}: $(cat "$T/err") $(cat "$T/ds.args" 2>/dev/null)"
  fi
done
# Megatron-core's custom layout with its MTP module: zplan writes the m beside the loss, reads it back (the same
# step), reads Megatron-core's repetitions, and refuses a layout whose m count is not --mtp-num-layers
if "$Z" --model deepseek-v3 --gpus 512 --ep 32 --pp 16 --mp 1 --global-batch 1024 --cluster hgx-h800 --stage 1 \
     --micro-batch 1 --recompute full --analytic --pp-layout 4*7,5,3,4*6,1 --emit-megatron-args "$T/dsl.args" \
     >/dev/null 2>"$T/err" && grep -q -- '--pipeline-model-parallel-layout "Etttt|.*|ttt|.*|tmL"' "$T/dsl.args"; then
  ok
  read_back "a DeepSeek-V3 layout with its MTP module" "a DeepSeek-V3 layout with its MTP module" \
    --megatron-args "$T/dsl.args" --gpus 512 --cluster hgx-h800 --analytic
else
  ko "emitting a layout with MTP: $(cat "$T/err") $(grep -o -- '--pipeline-model-parallel-layout [^ ]*' "$T/dsl.args")"
fi
judged "NVIDIA's DeepSeek-V3 layout, repeats and MTP" --megatron-args \
  <(sed 's/--pipeline-model-parallel-layout "[^"]*"/--pipeline-model-parallel-layout "Et*4|(tttt|)*14tmL"/' "$T/dsl.args") \
  --gpus 512 --cluster hgx-h800 --analytic --top 1
bad "a layout without the MTP module" "places 0 MTP modules \\(m\\), the model has 1" --megatron-args \
  <(sed 's/--pipeline-model-parallel-layout "[^"]*"/--pipeline-model-parallel-layout "Et*4|(tttt|)*14tL"/' "$T/dsl.args") \
  --gpus 512 --cluster hgx-h800 --analytic
# DeepSeek's own recompute (its report, section 3.3.2-3: RMSNorm and MLA's up-projections, the SwiGLU output, its
# input cached in FP8) as Megatron-core's modules and --activation-func-fp8-input-store, written and read back
if "$Z" --model deepseek-v2-lite --gpus 64 --ep 8 --pp 1 --mp 1 --global-batch 128 --cluster hgx-h800 --stage 1 \
     --micro-batch 1 --recompute-modules layernorm,mla_up_proj,moe_act --activation-func-fp8-input-store --analytic \
     --emit-megatron-args "$T/rc.args" >/dev/null 2>"$T/err" &&
   grep -q -- '--recompute-granularity selective --recompute-modules moe_act layernorm mla_up_proj --activation-func-fp8-input-store' "$T/rc.args"; then
  ok
  read_back "Megatron-LM arguments with recompute modules" "Megatron-LM arguments with recompute modules" \
    --megatron-args "$T/rc.args" --gpus 64 --cluster hgx-h800 --analytic
else
  ko "emitting the recompute modules: $(cat "$T/err") $(cat "$T/rc.args" 2>/dev/null)"
fi
grep -q -- '--moe-router-enable-expert-bias --moe-router-num-groups 8 --moe-router-group-topk 4' "$T/ds.args" &&
  grep -q -- '--mtp-num-layers 1 --moe-token-dispatcher-type flex --moe-enable-deepep' "$T/ds.args" &&
  grep -q -- '--q-lora-rank 1536' "$T/ds.args" && ok || ko "DeepSeek-V3's routing, MTP and Q rank: $(cat "$T/ds.args")"

# zplan's DeepSeek plans written as torchtitan TOMLs (deepseek_v3 flavors, EP, TP over the experts) and read
# back; DeepSeek-V3 only without its MTP module, which torchtitan's model has not; its 61 layers on 8 stages
# split as torchtitan splits them (7, 8 x 5, 7, 7), priced by the fullest stage alike written or read
for ds in "deepseek-v2-lite --gpus 64 --ep 8 --mp 2 --sp --stage 0" \
          "deepseek-v3 --gpus 512 --ep 32 --pp 1 --stage 3 --mtp-layers 0" \
          "deepseek-v3 --gpus 512 --ep 32 --pp 8 --stage 0 --mtp-layers 0"; do
  # shellcheck disable=SC2086
  if "$Z" --model $ds --cluster dgx-h100 --recompute full --analytic --emit-torchtitan "$T/dse.toml" \
       >/dev/null 2>"$T/err" && grep -q '^name = "deepseek_v3"' "$T/dse.toml" &&
     grep -q "^expert_parallel_degree = $(echo "$ds" | sed 's/.*--ep \([0-9]*\).*/\1/')" "$T/dse.toml"; then
    ok
    case "$ds" in *"--mp 2"*) grep -q '^expert_tensor_parallel_degree = 2' "$T/dse.toml" && ok ||
      ko "TP over the experts in torchtitan's TOML: $(cat "$T/dse.toml")" ;; esac
    read_back "the torchtitan TOML of ${ds%% *}" "torchtitan TOML of ${ds%% *}" --torchtitan "$T/dse.toml" \
      --gpus "$(echo "$ds" | sed 's/.*--gpus \([0-9]*\).*/\1/')" --cluster dgx-h100 --analytic
  else
    ko "emitting ${ds%% *} for torchtitan: $(cat "$T/err")"
  fi
done
# Megatron-core's precision-aware optimizer: Adam's moments in bf16 (DeepSeek-V3's) read, written and read back
# at the same step; without --use-precision-aware-optimizer refused naming the fix. Its main gradients in bf16
# (--main-grads-dtype bf16), or --grad-reduce-in-bf16: bf16 gradients, 2 bytes a parameter less; refused beside
# --accumulate-allreduce-grads-in-fp32 and without the precision-aware optimizer, as Megatron-LM asserts
judged "--use-precision-aware-optimizer with fp32 types" --megatron-args \
  <(sed 's/$/ --use-precision-aware-optimizer --exp-avg-dtype fp32 --main-grads-dtype fp32/' "$T/rc.args") \
  --gpus 64 --cluster hgx-h800 --analytic --top 1
if "$Z" --model deepseek-v2-lite --gpus 64 --ep 8 --pp 1 --mp 1 --global-batch 128 --cluster hgx-h800 --stage 1 \
     --micro-batch 1 --adam-moments bf16 --analytic --emit-megatron-args "$T/am.args" >/dev/null 2>"$T/err" &&
   grep -q -- '--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16' "$T/am.args"; then
  ok
  read_back "Megatron-LM arguments with bf16 Adam moments" "Megatron-LM arguments with bf16 Adam moments" \
    --megatron-args "$T/am.args" --gpus 64 --cluster hgx-h800 --analytic
else
  ko "emitting bf16 Adam moments: $(cat "$T/err") $(cat "$T/am.args" 2>/dev/null)"
fi
bad "bf16 Adam moments without the flag" "add --use-precision-aware-optimizer" \
  --megatron-args <(sed 's/ --use-precision-aware-optimizer//' "$T/am.args") --gpus 64 --cluster hgx-h800 --analytic
for g in "--main-grads-dtype bf16" "--grad-reduce-in-bf16"; do
  judged "$g" --megatron-args <(sed -e 's/ --accumulate-allreduce-grads-in-fp32//' -e "s/\$/ $g/" "$T/am.args") \
    --gpus 64 --cluster hgx-h800 --analytic --top 1
  has "$g: bf16 gradients" "^Precision: bf16 mixed precision: 2-byte parameters, bf16 gradients, 8 bytes of optimizer state: 12 bytes"
done
bad "bf16 main gradients beside fp32 accumulation" 'Megatron-LM refuses it ..--main-grads-dtype can only be fp32 when' \
  --megatron-args <(sed 's/$/ --main-grads-dtype bf16/' "$T/am.args") --gpus 64 --cluster hgx-h800 --analytic
bad "bf16 main gradients without the precision-aware optimizer" "add --use-precision-aware-optimizer" \
  --megatron-args <(sed -e 's/ --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16//' \
  -e 's/ --accumulate-allreduce-grads-in-fp32//' -e 's/$/ --main-grads-dtype bf16/' "$T/am.args") --gpus 64 \
  --cluster hgx-h800 --analytic
bad "fp16 main gradients" "--main-grads-dtype 'fp16': use fp32 or bf16" \
  --megatron-args <(sed 's/$/ --main-grads-dtype fp16/' "$T/am.args") --gpus 64 --cluster hgx-h800 --analytic
bad "fp16 main parameters" "--main-params-dtype fp16: the precision-aware optimizer's main parameters" \
  --megatron-args <(sed 's/$/ --main-params-dtype fp16/' "$T/am.args") --gpus 64 --cluster hgx-h800 --analytic
# The SwiGLU unfused (Megatron-LM's --no-bias-swiglu-fusion; NeMo's model.bias_activation_fusion false): written,
# read back at the same step and with the SiLU's output kept (JSON swiglu_fusion false); read from NeMo; the FP8
# input store noted and dropped without the fused kernel, which alone keeps it; refused in a torchtitan TOML
swiglu_json() { "$Z" "$@" --json 2>/dev/null | python3 -c \
  "import json,sys; d=json.load(sys.stdin); print(d.get('swiglu_fusion', True), d['plans'][0]['memory_gb']['activations'])"; }
if "$Z" --model llama-3-8b --gpus 64 --cluster dgx-a100 --analytic --swiglu-fusion off \
     --emit-megatron-args "$T/sw.args" >/dev/null 2>"$T/err" && grep -q -- ' --no-bias-swiglu-fusion' "$T/sw.args"; then
  ok
  read_back "Megatron-LM arguments with the SwiGLU unfused" "Megatron-LM arguments with the SwiGLU unfused" \
    --megatron-args "$T/sw.args" --gpus 64 --cluster dgx-a100 --analytic
  read -r k_off gb_off <<<"$(swiglu_json --megatron-args "$T/sw.args" --gpus 64 --cluster dgx-a100 --analytic)"
  read -r k_on gb_on <<<"$(swiglu_json --megatron-args <(sed 's/ --no-bias-swiglu-fusion//' "$T/sw.args") --gpus 64 \
    --cluster dgx-a100 --analytic)"
  if [ "$k_off" = False ] && [ "$k_on" = True ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$gb_off" "$gb_on"; then
    ok; echo "  --no-bias-swiglu-fusion read: $gb_off GB of activations, fused $gb_on GB"
  else ko "--no-bias-swiglu-fusion read: $k_off $gb_off GB, without it $k_on $gb_on GB"; fi
else
  ko "emitting --no-bias-swiglu-fusion: $(cat "$T/err") $(cat "$T/sw.args" 2>/dev/null)"
fi
sed -e 's/^  bias_activation_fusion: True.*/  bias_activation_fusion: False\n  activation: swiglu/' "$F/gpt3_5b.yaml" >"$T/swu.yaml"
sed -e 's/^  bias_activation_fusion: True.*/  bias_activation_fusion: True\n  activation: swiglu/' "$F/gpt3_5b.yaml" >"$T/swf.yaml"
read -r k_off gb_off <<<"$(swiglu_json --nemo "$T/swu.yaml" --cluster dgx-a100 --analytic)"
read -r k_on gb_on <<<"$(swiglu_json --nemo "$T/swf.yaml" --cluster dgx-a100 --analytic)"
if [ "$k_off" = False ] && [ "$k_on" = True ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$gb_off" "$gb_on"; then
  ok; echo "  NeMo model.bias_activation_fusion false with swiglu: $gb_off GB of activations, true $gb_on GB"
else ko "NeMo model.bias_activation_fusion: false $k_off $gb_off GB, true $k_on $gb_on GB"; fi
"$Z" --megatron-args <(sed 's/$/ --activation-func-fp8-input-store/' "$T/sw.args") --gpus 64 --cluster dgx-a100 \
  --analytic >"$T/out" 2>"$T/err" && ok || ko "the FP8 input store without the fusion: $(cat "$T/err")"
has "the FP8 input store noted without the fusion" "activation_func_fp8_input_store without the SwiGLU fusion"
bad "torchtitan TOML with the SwiGLU unfused" "torchtitan fuses a SwiGLU under torch.compile" \
  --model llama-3-8b --gpus 64 --cluster dgx-a100 --analytic --swiglu-fusion off --emit-torchtitan "$T/x.toml"
bad "torchtitan TOML with the SwiGLU input in FP8" "input-store is Megatron-core's: torchtitan has no such option" \
  --model llama-3-8b --gpus 64 --cluster dgx-a100 --analytic --activation-func-fp8-input-store --emit-torchtitan "$T/x.toml"
bad "torchtitan TOML of DeepSeek-V3 with MTP" "torchtitan's deepseek_v3 has not: plan it with --mtp-layers 0" \
  --model deepseek-v3 --gpus 512 --ep 32 --pp 8 --cluster dgx-h100 --analytic --emit-torchtitan "$T/x.toml"

echo "== torchtitan's checkpointing modes: every k-th block, op-level; written and read back"
sed "s/^selective_ac_option = 'op'/selective_ac_option = '2'/" "$F/llama3_8b.toml" >"$T/sac2.toml"
judged "torchtitan selective_ac_option '2'" --torchtitan "$T/sac2.toml" --gpus 64 --cluster dgx-a100 --top 1
has "every 2nd block checkpointed" "micro-batch 1 x 1, full recompute of every 2nd block"
grep -v '^selective_ac_option' "$F/llama3_8b.toml" >"$T/sacdef.toml"
judged "torchtitan mode 'selective' alone (its default option, '2')" --torchtitan "$T/sacdef.toml" --gpus 64 \
  --cluster dgx-a100 --top 1
has "the default option is every 2nd block" "full recompute of every 2nd block"
for v in x -1 2.5 ' 2'; do
  sed "s/^selective_ac_option = 'op'/selective_ac_option = '$v'/" "$F/llama3_8b.toml" >"$T/sacbad.toml"
  bad "torchtitan selective_ac_option '$v'" "sacbad.toml:57: activation_checkpoint.selective_ac_option '$v': use 'op' or a whole number" \
    --torchtitan "$T/sacbad.toml" --gpus 64
done
for mode in "--checkpoint-every 2" "--checkpoint-every 40" "--recompute op"; do
  # shellcheck disable=SC2086
  if "$Z" --model llama-3-8b --gpus 64 --cluster dgx-h100 --analytic --stage 3 --micro-batch 1 --global-batch 64 \
       --exact $mode --emit-torchtitan "$T/m.toml" >/dev/null 2>"$T/err"; then
    want='selective_ac_option = "op"'
    [ "$mode" != "--recompute op" ] && want="selective_ac_option = \"${mode##* }\""
    if grep -q "^mode = \"selective\"" "$T/m.toml" && grep -qF "$want" "$T/m.toml"; then ok; else
      ko "$mode written as $want: $(cat "$T/m.toml")"; fi
    read_back "the torchtitan TOML of $mode" "torchtitan TOML of $mode" --torchtitan "$T/m.toml" --gpus 64 \
      --cluster dgx-h100 --analytic
  else
    ko "emitting $mode: $(cat "$T/err")"
  fi
done
echo "== torch.compile or eager: training.compile (torchtitan's default false), --compile on|off, compile = written"
step_of() { sed -n 's/^  your launch: \([0-9.e+]*\) s a step.*/\1/p' "$T/out"; }
sed 's/^compile = false/compile = true/' "$F/llama3_8b.toml" >"$T/compile.toml"
judged "torchtitan training.compile true" --torchtitan "$T/compile.toml" --gpus 8 --cluster dgx-h100 --top 1
on=$(step_of)
judged "torchtitan training.compile false (the fixture)" --torchtitan "$F/llama3_8b.toml" --gpus 8 --cluster dgx-h100 --top 1
off=$(step_of)
has "eager: what zplan costs, said" "Kernels:   PyTorch eager: a block's elementwise ops as separate kernels"
grep -v '^compile' "$F/llama3_8b.toml" >"$T/nocompile.toml"
judged "torchtitan without training.compile" --torchtitan "$T/nocompile.toml" --gpus 8 --cluster dgx-h100 --top 1
absent=$(step_of)
has "compile not stated: said" "training.compile not stated: PyTorch eager, torchtitan's default"
if python3 -c 'import sys; on, off, ab = map(float, sys.argv[1:]); sys.exit(0 if off > 1.1 * on and ab == off else 1)' \
     "$on" "$off" "$absent"; then
  ok; echo "  eager (compile false or not stated) $off s a step, compiled $on s: PyTorch eager's separate kernels"
else ko "compile: true $on s, false $off s, not stated $absent s"; fi
for c in on off; do
  "$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --stage 3 --mp 1 --micro-batch 1 --global-batch 8 --recompute op \
    --compile $c --emit-torchtitan "$T/c$c.toml" >/dev/null 2>"$T/err" || ko "--compile $c: $(cat "$T/err")"
done
if grep -q '^compile = true$' "$T/con.toml" && grep -q '^compile = false$' "$T/coff.toml"; then
  ok; echo "  --emit-torchtitan writes compile = true (--compile on) and compile = false (--compile off)"
else ko "compile = in the emitted TOML: $(grep -h '^compile' "$T/con.toml" "$T/coff.toml")"; fi
for c in on off; do
  judged "the torchtitan TOML of --compile $c" --torchtitan "$T/c$c.toml" --gpus 8 --cluster dgx-h100 --top 1
  steps_match "torchtitan TOML of --compile $c" "$T/c$c.toml"
done
sed 's/^tensor_parallel_degree = 1/tensor_parallel_degree = 8\nenable_async_tensor_parallel = true/' "$T/nocompile.toml" \
  >"$T/asyncnc.toml"
judged "torchtitan async TP without training.compile" --torchtitan "$T/asyncnc.toml" --gpus 16 --cluster dgx-h100 --analytic --top 1
has "async TP needs compile: said" "enable_async_tensor_parallel without training.compile: torchtitan runs async TP compiled only"
bad "--compile maybe" "--compile 'maybe': use on .* or off" --model llama-3-8b --gpus 8 --compile maybe
bad "--compile with a launch" "sets the plan: drop --compile" --torchtitan "$F/llama3_8b.toml" --gpus 8 --compile on
bad "--compile off with async TP" "async TP runs under torch.compile only" --model llama-3-8b --gpus 16 \
  --cluster dgx-h100 --mp 8 --sp --tp-comm-overlap async --compile off
sed 's/^compile = false/compile = maybe/' "$F/llama3_8b.toml" >"$T/compile.toml"
bad "torchtitan training.compile maybe" "compile.toml:37: training.compile 'maybe': use true or false" \
  --torchtitan "$T/compile.toml" --gpus 64
bad "--checkpoint-every 0" "--checkpoint-every: '0' must be at least 1" --model llama-3-8b --gpus 8 --checkpoint-every 0
bad "--checkpoint-every two" "--checkpoint-every: 'two' is not a number" --model llama-3-8b --gpus 8 --checkpoint-every two
bad "--checkpoint-every 1.5" "--checkpoint-every: '1.5' must be a whole number" --model llama-3-8b --gpus 8 \
  --checkpoint-every 1.5
bad "--checkpoint-every with --recompute none" 'it needs --recompute full \(drop --recompute none\)' \
  --model llama-3-8b --gpus 8 --checkpoint-every 2 --recompute none
bad "--checkpoint-every with --pa" 'checkpoint-every with --pa/--pa-cpu' --model llama-3-8b --gpus 8 --mp 2 \
  --checkpoint-every 2 --pa
bad "--recompute op on parallel attention and MLP" "model 'gpt-j-6b' has parallel attention and MLP: use --recompute full" \
  --model gpt-j-6b --gpus 8 --recompute op
bad "--recompute op with an MTP module, analytic" "model 'deepseek-v3' has 1: plan it with --mtp-layers 0" \
  --model deepseek-v3 --gpus 256 --recompute op --analytic
bad "the executor and --checkpoint-every" '--checkpoint-every: the executor runs full recompute of every block or none' \
  exec --model tiny --checkpoint-every 2
bad "the executor and --recompute op" '--recompute op: the executor runs full recompute of every block or none' \
  exec --model tiny --recompute op
bad "Megatron-LM arguments of every k-th block" "--emit-megatron-args: --checkpoint-every is torchtitan's" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --checkpoint-every 2 --analytic --emit-megatron-args "$T/x.args"
bad "a DeepSpeed config of op-level recompute" "does not run torchtitan's checkpointing modes" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --recompute op --analytic --emit-ds-config "$T/x.json"
bad "--recompute unknown" "--recompute: unknown value 'some' \(use full, selective, none or op\)" \
  --model llama-3-8b --gpus 8 --recompute some
bad "torchtitan TOML of a model it cannot name" 'not a torchtitan llama3 or deepseek_v3 flavor' --model 1.5B --gpus 16 --analytic \
  --emit-torchtitan "$T/x.toml"
# --emit-ds-config plans within what DeepSpeed runs (no SP, no selective recompute), and says so
if "$Z" --model llama-2-13b --gpus 64 --cluster dgx-a100 --analytic --emit-ds-config "$T/e.json" >"$T/out" 2>"$T/err" &&
   grep -q 'planning within --framework deepspeed' "$T/err" && ! grep -Eq '^1 .*(SP|sel-ckpt)' "$T/out"; then
  ok; else ko "--emit-ds-config within deepspeed: $(cat "$T/err") $(grep '^1 ' "$T/out")"; fi
bad "DeepSpeed config of a plan it cannot say" 'interleaved pipeline schedule, which DeepSpeed does not' \
  --model 1.5B --gpus 16 --analytic --framework megatron-2021 --pp 4 --schedule interleaved --virtual-stages 2 \
  --global-batch 64 --emit-ds-config "$T/il.json"
finish
