#!/usr/bin/env bash
# Fidelity of the simulator against the ZeRO paper (DGX-2 preset): predicted, paper, ratio.
# Usage: bench/fidelity.sh [path/to/zplan [ARGS...]]   (default: build/src/zplan; run scripts/build first)
# ARGS are added to every simulated run, e.g. `--framework deepspeed-2020` (the paper's own software stack:
# DeepSpeed v0.2 with Megatron-LM 2019, vocab/zp_framework.c).
set -euo pipefail
Z="${1:-build/src/zplan}"
shift || true
X=("$@")
[ -x "$Z" ] || { echo "bench/fidelity.sh: $Z not found: run scripts/build first" >&2; exit 2; }
col() { # col CSV-FIELD-NAME: value of that column in the first data row of a CSV on stdin
  awk -F, -v k="$1" 'NR==1{for(i=1;i<=NF;i++) if($i==k) c=i; next} NR==2{print $c}'  # reads to the end: an early exit would SIGPIPE zplan under pipefail
}
row() { printf '%-62s %10s %10s %8s\n' "$1" "$2" "$3" "$4"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a/b}'; }

echo "zplan fidelity vs the ZeRO paper (SC'20), DGX-2 preset; TFLOPs = executed FLOPs incl. recompute"
row "experiment" "zplan" "paper" "ratio"
row "----------" "-----" "-----" "-----"

t=$("$Z" --model 100B --gpus 400 --stage 2 --mp 16 --global-batch 800 --pa "${X[@]}" --format csv | col tflops_per_gpu)
row "ZeRO 100B, 400 GPUs, MP 16, stage 2, batch 800: TFLOPs/GPU" "$(printf %.1f "$t")" 38 "$(ratio "$t" 38)"
p=$("$Z" --model 100B --gpus 400 --stage 2 --mp 16 --global-batch 800 --pa "${X[@]}" --format csv | col pflops)
row "  same: aggregate PFLOPs" "$(printf %.2f "$p")" 15 "$(ratio "$p" 15)"

t=$("$Z" --model 40B --gpus 32 --stage 0 --mp 32 --micro-batch 4 --exact "${X[@]}" --format csv | col tflops_per_gpu)
row "Megatron-LM 40B, MP 32 across 2 nodes, batch 4: TFLOPs/GPU" "$(printf %.1f "$t")" 5 "$(ratio "$t" 5)"
t=$("$Z" --model 20B --gpus 16 --stage 0 --mp 16 --micro-batch 8 --exact "${X[@]}" --format csv | col tflops_per_gpu)
row "Megatron-LM 20B, MP 16 within one node: TFLOPs/GPU" "$(printf %.1f "$t")" "~30" "$(ratio "$t" 30)"

b=$("$Z" report table2 --mp 1 --dp 128 --format csv | col baseline_real_b)
row "Plain DP, 128 GPUs: largest model that fits (B params)" "$(printf %.2f "$b")" 1.4 "$(ratio "$b" 1.4)"

sum=0; n=0; largest=""
for m in 1.5B 2.5B 4B 6B 8B 10B 13B; do
  out=$("$Z" --model "$m" --gpus 128 --stage 2 --mp 1 "${X[@]}" --format csv)
  fits=$(echo "$out" | col fits)
  t=$(echo "$out" | col tflops_per_gpu)
  mb=$(echo "$out" | col micro_batch)
  row "  ZeRO stage 2, 128 GPUs, no MP: $m (micro-batch $mb)" "$(printf %.1f "$t")" "" ""
  [ "$fits" = true ] && largest=$m
  sum=$(awk -v a="$sum" -v b="$t" 'BEGIN{print a+b}'); n=$((n + 1))
done
avg=$(awk -v a="$sum" -v n="$n" 'BEGIN{printf "%.1f", a/n}')
row "ZeRO stage 2, 128 GPUs, no MP, 1.5B-13B: average TFLOPs/GPU" "$avg" ">40" "$(ratio "$avg" 40)"
row "  largest of them that fits" "$largest" 13B ""

t64=$("$Z" --model 60B --gpus 64 --stage 2 --mp 16 "${X[@]}" --format csv | col tflops_per_gpu)
t400=$("$Z" --model 60B --gpus 400 --stage 2 --mp 16 "${X[@]}" --format csv | col tflops_per_gpu)
row "60B, stage 2, MP 16: TFLOPs/GPU on 64 GPUs" "$(printf %.2f "$t64")" "" ""
row "60B, stage 2, MP 16: TFLOPs/GPU on 400 GPUs (super-linear: > 64)" "$(printf %.2f "$t400")" "" "$(ratio "$t400" "$t64")"

echo
"$Z" report table2
