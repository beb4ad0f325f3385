#!/usr/bin/env bash
# Uneven pipeline stages from the command line (issue #28 item 5): --pp-first-layers / --pp-last-layers and
# --pp-layout stated and simulated (Llama 3 405B's 126 layers on 16 stages, interleaved over 8 chunks with the
# embedding and the head alone in the edge chunks); bad layouts exit 2 naming the layout (and an interleaved
# schedule over layers no chunk count divides names the layout, not the batch); --emit-megatron-args writes
# Megatron-core's arguments and --megatron-args reads them back as the same plan with the same step; the
# interleaved schedule's sends beside the next pass (--overlap-p2p-comm) on and off, refused where Megatron-LM
# does not run it, written and read back.
# Usage: test_pplayout.sh ZPLAN
set -u
Z="$1"
. "$(dirname "$0")/lib.sh"

L3="--model llama-3-405b --gpus 8192 --cluster dgx-h100 --mp 8 --pp 16 --global-batch 2048"
PLAN="$L3 --stage 1 --micro-batch 1 --sp --recompute full --exact"

echo "== bad layouts"
bad "interleaved, 126 on 16, a release without the accounting" "^zplan: --schedule interleaved with --pp 16: no number of model chunks divides the model's 126 layers evenly over the 16 stages \(the layout, not the batch" $L3 --schedule interleaved --framework megatron-2021
bad "sum" "^zplan: --pp-layout 7,8\*15: 127 layers in all, but the model has 126" $L3 --pp-layout 7,8*15
bad "a stage without layers" "^zplan: --pp-layout 0,9,8\*13,7: stage 0 gets 0 layers" $L3 --pp-layout 0,9,8*13,7
bad "entries" "^zplan: --pp-layout 8\*2: 2 entries, but the pipeline has 16 stages of 1 model chunk" $L3 --pp-layout 8,8
bad "first/last leave a remainder" "^zplan: --pp-first-layers 7 --pp-last-layers 8: the other 111 of the model's 126 layers do not divide evenly over the 14 other stages" $L3 --pp-first-layers 7 --pp-last-layers 8
bad "first/last over chunks" "^zplan: --pp-first-layers 7 --pp-last-layers 7: stage 0 gets 7 layers; with --virtual-stages" $L3 --pp-first-layers 7 --pp-last-layers 7 --virtual-stages 2
bad "a middle chunk empty" "^zplan: --pp-layout 1,0,1\*125,0: virtual stage 1 gets 0 layers; only the first" $L3 --pp-layout 1,0,1*125,0 --virtual-stages 8
bad "malformed" "^zplan: --pp-layout 7,x: 'x' is not a layer count" $L3 --pp-layout 7,x
bad "no --pp" "^zplan: --pp-layout: an uneven pipeline layout needs the stages \(give --pp P\)" --model llama-3-405b --gpus 8192 --cluster dgx-h100 --pp-layout 7,8*14,7

bad "exec" "^zplan exec: --pp-first-layers / --pp-last-layers / --pp-layout: zplan exec runs the even split" exec --model tiny --pp 2 --pp-layout 1,1

echo "== stated and simulated"
"$Z" $PLAN --pp-first-layers 7 --pp-last-layers 7 --top 1 >"$T/out" 2>"$T/err" || ko "first/last: rc=$?"
has "first/last: the plan" "Recommended: ZeRO stage 1 (Pos), MP 8, PP 16 (1f1b, --pp-first-layers 7 --pp-last-layers 7), DP 64"
"$Z" $PLAN --schedule interleaved --virtual-stages 8 --pp-layout 0,1*126,0 --top 1 >"$T/out" 2>"$T/err" ||
  ko "Llama 3 layout: rc=$?"
has "Llama 3 layout: the plan" "Recommended: ZeRO stage 1 (Pos), MP 8, PP 16 (interleaved, 8 virtual stages, --pp-layout 0,1\*126,0), DP 64"
step=$(sed -n 's/^  step \([0-9.]*\) s,.*/\1/p' "$T/out")
echo "  Llama 3 405B, 126 layers as 0,1*126,0 over 16 x 8 chunks: step $step s"

echo "== searched where no chunk count divides: the embedding and the loss counted as a layer each"
# 126 + 2 = 128 layers over 16 stages x 8 chunks: Megatron-core's --account-for-embedding/loss-in-pipeline-split,
# the same layers per virtual stage as --pp-layout 0,1*126,0, so the same step
"$Z" $L3 --stage 1 --micro-batch 1 --sp --recompute full --schedule interleaved --virtual-stages 8 --top 1 \
  >"$T/out" 2>"$T/err" || ko "accounted: rc=$?"
has "accounted: the plan" "Recommended: ZeRO stage 1 (Pos), MP 8, PP 16 (interleaved, 8 virtual stages, --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split), DP 64, .* interleaved:v8 +emb/loss\."
has "accounted: the step of the layout given" "^  step $step s,"
"$Z" $L3 --format json --top 3 >"$T/out" 2>"$T/err" || ko "searched: rc=$?"
has "searched: JSON names the layout" '"pp_layout": "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"'

echo "== Megatron-core's arguments, written and read back"
"$Z" $PLAN --schedule interleaved --virtual-stages 8 --pp-layout 0,1*126,0 --top 1 \
  --emit-megatron-args "$T/args.sh" >"$T/out" 2>"$T/err" || ko "emit: rc=$?"
cp "$T/args.sh" "$T/out"
has "emit: chunks" "--num-virtual-stages-per-pipeline-rank 8 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
emitted=$(sed -n 's/.*; step \([0-9.]*\) s,.*/\1/p' "$T/args.sh")
"$Z" --megatron-args "$T/args.sh" --gpus 8192 --cluster dgx-h100 --top 1 >"$T/out" 2>"$T/err" || ko "read: rc=$?"
has "read: the plan and the same step" "your launch: $emitted s a step.*PP 16 (interleaved, 8 chunks a rank)"
# priced analytically (the layout and the step compared as above, without simulating the verdict's searches)
"$Z" $PLAN --pp-first-layers 7 --pp-last-layers 7 --top 1 --analytic --emit-megatron-args "$T/fl.sh" >"$T/out" 2>"$T/err" ||
  ko "emit first/last: rc=$?"
cp "$T/fl.sh" "$T/out"
has "emit: first/last" "--pipeline-model-parallel-size 16 --decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 7"
emitted=$(sed -n 's/.*; step \([0-9.]*\) s,.*/\1/p' "$T/fl.sh")
"$Z" --megatron-args "$T/fl.sh" --gpus 8192 --cluster dgx-h100 --top 1 --analytic >"$T/out" 2>"$T/err" ||
  ko "read first/last: rc=$?"
has "read first/last: the same step" "your launch: $emitted s a step.*PP 16 (1f1b, 1 chunk a rank)"

echo "== torchtitan's split, written and read back"
# torchtitan weighs the embedding and the output as a layer each by default
# (pipeline_parallel_first/last_stage_less_layers = 1): the TOML states the weights that make the plan's split,
# 0 for an even one, 1 for the embedding and the loss counted; read back, the same step; without the keys,
# torchtitan's default split, not the even one
E8="--model llama-3-8b --gpus 64 --cluster dgx-h100 --global-batch 512 --pp 4 --mp 2"
"$Z" $E8 --emit-torchtitan "$T/e8.toml" >"$T/out" 2>"$T/err" || ko "torchtitan even: rc=$?"
cp "$T/e8.toml" "$T/out"
has "torchtitan even: weights 0" "^pipeline_parallel_first_stage_less_layers = 0"
emitted=$(sed -n 's/.*; step \([0-9.]*\) s,.*/\1/p' "$T/e8.toml")
"$Z" --torchtitan "$T/e8.toml" --gpus 64 --cluster dgx-h100 --top 1 >"$T/out" 2>"$T/err" || ko "read even: rc=$?"
has "read even: the same step" "your launch: $emitted s a step"
grep -v less_layers "$T/e8.toml" >"$T/d8.toml"
"$Z" --torchtitan "$T/d8.toml" --gpus 64 --cluster dgx-h100 --top 1 >"$T/out" 2>"$T/err" || ko "read default: rc=$?"
grep -q "your launch: $emitted s a step" "$T/out" && ko "read default: the even split's step" || ok
"$Z" --model llama-3-405b --gpus 8192 --cluster dgx-h100 --mp 8 --pp 32 --global-batch 2048 --stage 0 --micro-batch 1 \
  --sp --recompute full --schedule interleaved --virtual-stages 2 --analytic --emit-torchtitan "$T/a.toml" >"$T/out" 2>"$T/err" || ko "torchtitan accounted: rc=$?"
cp "$T/a.toml" "$T/out"
has "torchtitan accounted: weights 1" "^pipeline_parallel_last_stage_less_layers = 1"
emitted=$(sed -n 's/.*; step \([0-9.]*\) s,.*/\1/p' "$T/a.toml")
"$Z" --torchtitan "$T/a.toml" --gpus 8192 --cluster dgx-h100 --top 1 --analytic >"$T/out" 2>"$T/err" || ko "read accounted: rc=$?"
has "read accounted: the same step" "your launch: $emitted s a step"

echo "== the interleaved schedule's sends beside the next pass (--overlap-p2p-comm, Megatron-LM's default)"
# Llama 3 8B, TP 8 a node, 4 stages on 4 nodes, 2 chunks: on (the default) the steady state's sends leave the
# compute stream; off (--no-overlap-p2p-communication) each is waited for; all, every send leaves it. Off is written into the emitted
# arguments and read back at the same step; on is Megatron-LM's default and written as nothing.
P8="--model llama-3-8b --gpus 32 --cluster dgx-h100 --mp 8 --pp 4 --sp --stage 1 --micro-batch 1 --global-batch 16
  --schedule interleaved --virtual-stages 2 --recompute none --exact --top 1"
bad "on with 1F1B" "^zplan: --overlap-p2p-comm on: only the interleaved schedule overlaps its pipeline sends \(Megatron-LM: \"non-interleaved schedule does not support overlapping p2p communication\"\)" \
  --model llama-3-8b --gpus 32 --pp 4 --schedule 1f1b --overlap-p2p-comm on
bad "on without stages" "^zplan: --overlap-p2p-comm on: only the interleaved schedule" --model llama-3-8b --gpus 32 --pp 1 \
  --overlap-p2p-comm on
bad "on, Megatron-LM v2" "^zplan: --framework megatron-2021: Megatron-LM v2 \(2021, the SC'21 paper's\) waits for every pipeline send and receive" \
  --model gpt2-1.5B --gpus 32 --pp 4 --framework megatron-2021 --overlap-p2p-comm on
bad "not on or off" "^zplan: --overlap-p2p-comm 'yes': use on" --model llama-3-8b --gpus 32 --overlap-p2p-comm yes
step_of() { sed -n 's/^  step \([0-9.]*\) s,.*/\1/p' "$T/out"; }
"$Z" $P8 >"$T/out" 2>"$T/err" || ko "p2p on: rc=$?"
s_on=$(step_of)
"$Z" $P8 --overlap-p2p-comm off >"$T/out" 2>"$T/err" || ko "p2p off: rc=$?"
s_off=$(step_of)
echo "  Llama 3 8B, 4 stages x 2 chunks over 4 nodes: $s_on s with the sends overlapped, $s_off s without"
awk -v a="$s_on" -v b="$s_off" 'BEGIN { exit !(a > 0 && a < b) }' && ok || ko "p2p: on $s_on s not below off $s_off s"
"$Z" $P8 --format json >"$T/out" 2>"$T/err" || ko "p2p json: rc=$?"
has "p2p: JSON says on" '"overlap_p2p_comm": true'
"$Z" $P8 --overlap-p2p-comm off --format json >"$T/out" 2>"$T/err" || ko "p2p off json: rc=$?"
grep -q overlap_p2p_comm "$T/out" && ko "p2p off: JSON says overlap_p2p_comm" || ok
# emitted (with fp32 gradients, which Megatron-LM's bf16 requires: each file's step in its header), read back
for o in on off; do
  "$Z" $P8 --overlap-p2p-comm $o --emit-megatron-args "$T/p2p$o.sh" >"$T/out" 2>"$T/err" || ko "p2p emit $o: rc=$?"
done
cp "$T/p2poff.sh" "$T/out"
has "p2p emit: off written" "--num-layers-per-virtual-pipeline-stage 4 --no-overlap-p2p-communication"
grep -q overlap-p2p "$T/p2pon.sh" && ko "p2p emit: on (Megatron-LM's default) written" || ok
e_on=$(sed -n 's/.*; step \([0-9.]*\) s,.*/\1/p' "$T/p2pon.sh") e_off=$(sed -n 's/.*; step \([0-9.]*\) s,.*/\1/p' "$T/p2poff.sh")
awk -v a="$e_on" -v b="$e_off" 'BEGIN { exit !(a > 0 && a < b) }' && ok || ko "p2p emitted: on $e_on s not below off $e_off s"
"$Z" --megatron-args "$T/p2poff.sh" --gpus 32 --cluster dgx-h100 --top 1 >"$T/out" 2>"$T/err" || ko "p2p read: rc=$?"
has "p2p read off: the same step" "your launch: $e_off s a step"
"$Z" --megatron-args "$T/p2pon.sh" --gpus 32 --cluster dgx-h100 --top 1 >"$T/out" 2>"$T/err" || ko "p2p read on: rc=$?"
has "p2p read on: the same step" "your launch: $e_on s a step"
# all: the warm-up's and the flush's sends too (Megatron-LM's --overlap-p2p-communication-warmup-flush), faster
# still, written and read back; with --no-overlap-p2p-communication beside it, refused
"$Z" $P8 --overlap-p2p-comm all --emit-megatron-args "$T/p2pall.sh" >"$T/out" 2>"$T/err" || ko "p2p emit all: rc=$?"
cp "$T/p2pall.sh" "$T/out"
has "p2p emit: all written" "--num-layers-per-virtual-pipeline-stage 4 --overlap-p2p-communication-warmup-flush"
e_all=$(sed -n 's/.*; step \([0-9.]*\) s,.*/\1/p' "$T/p2pall.sh")
awk -v a="$e_all" -v b="$e_on" 'BEGIN { exit !(a > 0 && a < b) }' && ok || ko "p2p emitted: all $e_all s not below on $e_on s"
echo "  emitted with fp32 gradients: off $e_off s, on $e_on s, all $e_all s"
"$Z" --megatron-args "$T/p2pall.sh" --gpus 32 --cluster dgx-h100 --top 1 >"$T/out" 2>"$T/err" || ko "p2p read all: rc=$?"
has "p2p read all: the same step" "your launch: $e_all s a step"
"$Z" $P8 --overlap-p2p-comm all --format json >"$T/out" 2>"$T/err" || ko "p2p all json: rc=$?"
has "p2p all: JSON says so" '"overlap_p2p_comm_warmup_flush": true'
sed 's/ --no-overlap-p2p-communication/ --no-overlap-p2p-communication --overlap-p2p-communication-warmup-flush/' \
  "$T/p2poff.sh" >"$T/wf.sh"
bad "warm-up and flush without the steady state" "wf.sh: the warm-up's and the flush's pipeline sends overlapped without the steady state's" \
  --megatron-args "$T/wf.sh" --gpus 32 --cluster dgx-h100
bad "all with 1F1B" "^zplan: --overlap-p2p-comm all: only the interleaved schedule" --model llama-3-8b --gpus 32 --pp 4 \
  --schedule 1f1b --overlap-p2p-comm all

echo "== the interleaved warm-up at m = P (4 micro-batches on 4 stages, 2 chunks)"
# Megatron-core today caps the warm-up at the stage's passes (get_pp_rank_microbatches): stages 2 and 3 run
# 1F1B and hold fewer micro-batches than stage 0; Megatron-LM v2 ran every forward first on every stage.
M1="--model gpt2-1.5B --gpus 32 --cluster dgx-a100 --mp 1 --pp 4 --stage 0 --micro-batch 1 --global-batch 32
  --schedule interleaved --virtual-stages 2 --recompute none --exact"
acts() { awk -v s="$1" '$1 == s && NF == 7 && $5 ~ /^[0-9.]+$/ { print $5 }' "$T/out"; }
for fw in any megatron-2021; do
  "$Z" $M1 --framework $fw >"$T/out" 2>"$T/err" || ko "$fw: rc=$?"
  a0=$(acts 0) a2=$(acts 2)
  echo "  --framework $fw: stage 0 holds $a0 GB of activations, stage 2 $a2 GB"
  if [ "$fw" = any ]; then
    awk -v a="$a0" -v b="$a2" 'BEGIN { exit !(b < a) }' && ok || ko "any: stage 2 ($a2) below stage 0 ($a0)"
  else
    [ -n "$a0" ] && [ "$a0" = "$a2" ] && ok || ko "megatron-2021: stage 2 ($a2) as stage 0 ($a0)"
  fi
done

finish
