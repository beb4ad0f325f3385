#!/usr/bin/env bash
# A team's units in the what-if's JSON and text (tokens/s, MFU, a token budget's days, GPU-hours, energy
# and cost, checked against their own arithmetic), FlashAttention on by default on H100 and off on V100, a
# config.json's sequence and why, the model's family, fixed-point step times, bad values exit 2.
# Usage: test_units.sh ZPLAN SOURCE_ROOT
set -u
Z="$1"
ROOT="$2"
. "$(dirname "$0")/lib.sh"
check() { # check "description" python-expression-on-d (the JSON as d) < file
  local what="$1" expr="$2" file="$3"
  if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($expr) else 1)" "$file"; then
    ok; echo "ok   $what"
  else ko "$what"; fi
}

# the issue's command: --json, and plans[i].tokens_per_s_per_gpu
"$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --json >"$T/8b.json" 2>"$T/err" || ko "llama-3-8b --json: $(cat "$T/err")"
check "--json: plans[0].tokens_per_s_per_gpu" "'tokens_per_s_per_gpu' in d['plans'][0]" "$T/8b.json"
check "tokens/s = global batch x seq / step, per GPU / 8" \
  "all(abs(p['tokens_per_s'] - p['global_batch'] * d['model']['seq'] / p['step_time_s']) < 1e-6 * p['tokens_per_s'] and abs(p['tokens_per_s_per_gpu'] * 8 - p['tokens_per_s']) < 1e-6 * p['tokens_per_s'] for p in d['plans'] if p['fits'])" "$T/8b.json"
check "MFU = model FLOPs per token x tokens/s per GPU / 989 TFLOP/s" \
  "all(abs(p['mfu'] - d['model_flops_per_token'] * p['tokens_per_s_per_gpu'] / 989e12) < 1e-6 and abs(p['model_tflops_per_gpu'] - p['mfu'] * 989) < 1e-4 for p in d['plans'] if p['fits'])" "$T/8b.json"
check "mfu_definition names PaLM's 6N+12LHQT and causal" "'6N+12LHQT' in d['mfu_definition'] and 'causal' in d['mfu_definition']" "$T/8b.json"
check "FlashAttention on by default on H100" "d['flash_attention'] is True" "$T/8b.json"
check "model family" "d['model']['family'] == 'llama'" "$T/8b.json"
check "fitting plans ranked by tokens/s within a method" \
  "all(a['tokens_per_s'] >= b['tokens_per_s'] for a, b in zip(d['plans'], d['plans'][1:]) if a['fits'] and b['fits'] and a['method'] == b['method'] == 'simgrid')" "$T/8b.json"

"$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --no-flash-attention --json >"$T/nofa.json" 2>/dev/null
check "--no-flash-attention" "d['flash_attention'] is False" "$T/nofa.json"
"$Z" --model 13B --gpus 16 --json --analytic >"$T/v100.json" 2>/dev/null
check "FlashAttention off by default on V100 (dgx2)" "d['flash_attention'] is False and d['model']['family'] == 'gpt'" "$T/v100.json"

# no plan fits: each change that would make one says its speed in the same units
"$Z" --model 13B --gpus 16 --stage 3 --mp 1 --micro-batch 200 --analytic --json >"$T/nm.json" 2>/dev/null
check "near_miss fixes: tokens/s per GPU and MFU" \
  "d['near_miss']['fixes'] and all(f['tokens_per_s_per_gpu'] > 0 and 0 < f['mfu'] < 1 for f in d['near_miss']['fixes'])" "$T/nm.json"

# zplan schedule takes the what-if's default: its plan on H100 is FlashAttention's unless turned off
"$Z" schedule --model llama-3-8b --gpus 8 --cluster dgx-h100 --analytic --format json >"$T/s1.json" 2>/dev/null
"$Z" schedule --model llama-3-8b --gpus 8 --cluster dgx-h100 --analytic --flash-attention --format json >"$T/s2.json" 2>/dev/null
"$Z" schedule --model llama-3-8b --gpus 8 --cluster dgx-h100 --analytic --no-flash-attention --format json >"$T/s3.json" 2>/dev/null
if [ -s "$T/s1.json" ] && cmp -s "$T/s1.json" "$T/s2.json" && ! cmp -s "$T/s1.json" "$T/s3.json"; then ok
  echo "ok   schedule: FlashAttention by default on H100"; else ko "schedule FlashAttention default"; fi

# a token budget: 2T (decimal), priced
"$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --train-tokens 2T --gpu-hour-price 2.5 --json >"$T/b.json" 2>/dev/null
check "--train-tokens 2T: days, GPU-hours, MWh at 700 W, dollars" \
  "d['train_tokens'] == 2e12 and all(abs(p['train_days'] - 2e12 / p['tokens_per_s'] / 86400) < 1e-6 * p['train_days'] and abs(p['gpu_hours'] - 8 * 2e12 / p['tokens_per_s'] / 3600) < 1e-6 * p['gpu_hours'] and abs(p['energy_mwh'] - 0.7 * p['gpu_hours'] / 1000) < 1e-6 * p['energy_mwh'] and abs(p['cost_usd'] - 2.5 * p['gpu_hours']) < 1e-6 * p['cost_usd'] for p in d['plans'] if p['fits'])" "$T/b.json"
"$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --train-tokens 15T >"$T/b.txt" 2>/dev/null
if grep -q '^Training 15T tokens at the recommended plan' "$T/b.txt" && grep -q 'tokens/s per GPU' "$T/b.txt" &&
   grep -q 'MFU [0-9.]*%' "$T/b.txt"; then ok; echo "ok   text: training line, tokens/s, MFU"; else ko "text units: $(grep -A2 Recommended "$T/b.txt")"; fi
for bad in "--train-tokens lots" "--train-tokens 0" "--train-tokens -2T" "--gpu-hour-price -1"; do
  # shellcheck disable=SC2086
  "$Z" --model llama-3-8b --gpus 8 $bad >"$T/out" 2>"$T/err"
  if [ $? -eq 2 ] && grep -q '^zplan: ' "$T/err" && [ ! -s "$T/out" ]; then ok; echo "ok   bad $bad -> exit 2"; else ko "bad $bad"; fi
done

# fixed-point step times: never an exponent (the text table, the recommendation)
"$Z" --model 1T --gpus 512 --analytic --top 3 >"$T/1t.txt" 2>/dev/null
if ! sed -n '/^Plans that fit/,/^$/p;/^  step/p' "$T/1t.txt" | grep -Eq '[0-9]e[+-][0-9]'; then ok; echo "ok   fixed-point steps"
else ko "exponent in a step: $(grep -E '[0-9]e[+-]' "$T/1t.txt" | head -3)"; fi

# a config.json's sequence: the pre-training context, and the line that says why; --seq changes it
"$Z" --model "$ROOT/tests/models/hf/qwen2-7b.json" --gpus 8 --cluster dgx-h100 --analytic >"$T/q.txt" 2>/dev/null
if grep -q 'seq 8192,' "$T/q.txt" && grep -q 'sequence 8192: max_position_embeddings 131072 capped at 8192' "$T/q.txt"; then
  ok; echo "ok   qwen2-7b: sequence 8192, and why"; else ko "qwen2 sequence: $(grep ^Model "$T/q.txt")"; fi
"$Z" --model "$ROOT/tests/models/hf/qwen2-7b.json" --gpus 8 --cluster dgx-h100 --analytic --seq 4k >"$T/q4.txt" 2>/dev/null
if grep -q 'seq 4096,' "$T/q4.txt" && grep -q 'sequence 4096: --seq' "$T/q4.txt"; then ok; echo "ok   --seq 4k"
else ko "--seq: $(grep ^Model "$T/q4.txt")"; fi

# the header's batch: the plans' own when they differ from the default batch
"$Z" --model llama-3-70b --gpus 64 --cluster dgx-h100 --analytic >"$T/70.txt" 2>/dev/null
hb=$(sed -n 's/^Batch: *\([0-9]*\) sequences.*/\1/p' "$T/70.txt")
runs=$(sed -n 's/.*the plans shown run \([0-9 ,or]*\) sequences.*/\1/p' "$T/70.txt")
globals=$(sed -n '/^Plans that fit/,/^$/p' "$T/70.txt" | awk 'NR > 3 && NF > 8 {print $8}' | sort -u | tr '\n' ' ')
said() { # every plan's global batch is the header's, or one the header says the plans run
  local g
  for g in $globals; do [ "$g" = "$hb" ] || echo "$runs" | grep -qw "$g" || return 1; done
}
if [ -n "$hb" ] && [ -n "$globals" ] && said; then ok; echo "ok   header batch $hb, plans run: $globals"
else ko "header batch $hb, runs '$runs', plans $globals"; fi

# report scaling: one global batch across the points, or the table says they differ
"$Z" report scaling --model 13B --gpus 16,32,64 --cluster dgx-a100 --analytic >"$T/sc.txt" 2>/dev/null
n=$(awk '/^ *[0-9]+  / && NF > 8 {print $6}' "$T/sc.txt" | sort -u | wc -l)
if grep -q 'Tokens/s/GPU' "$T/sc.txt" && { [ "$n" -eq 1 ] || grep -q '^The global batch differs between the points' "$T/sc.txt"; }; then
  ok; echo "ok   report scaling: tokens/s, MFU, the batch across points"; else ko "scaling: $(head -12 "$T/sc.txt")"; fi
"$Z" report scaling --model 13B --gpus 16,32,64 --cluster dgx-a100 --analytic --global-batch 2048 >"$T/sc2.txt" 2>/dev/null
n=$(awk '/^ *[0-9]+  / && NF > 8 {print $6}' "$T/sc2.txt" | sort -u | tr -d ' \n')
if [ "$n" = 2048 ] && ! grep -q 'differs between the points' "$T/sc2.txt"; then ok; echo "ok   report scaling --global-batch 2048"
else ko "scaling --global-batch: '$n' $(head -12 "$T/sc2.txt")"; fi

# zplan sweep: a model's cells of different global batches are said to differ
printf 'model,gpus,cluster\n13B,16,dgx-a100\n13B,64,dgx-a100\n' >"$T/grid.csv"
"$Z" sweep --grid "$T/grid.csv" --analytic >"$T/sw.txt" 2>/dev/null
b=$(awk '/^[0-9]+  / && NF > 8 {print $11}' "$T/sw.txt" | sort -u | wc -l)
if grep -q 'Tokens/s/GPU' "$T/sw.txt" && { [ "$b" -eq 1 ] || grep -q "^A model's global batch differs between its cells" "$T/sw.txt"; }; then
  ok; echo "ok   sweep: tokens/s, MFU, the batch across cells"; else ko "sweep batch: $b $(head -12 "$T/sw.txt")"; fi

finish
