#!/usr/bin/env bash
# FP8 training (issue #28 point 1): --precision fp8 on H100 runs and is faster than bf16 on the same plan,
# its JSON names the precision and recipe (bf16's does not), a GPU without FP8 and a bad recipe exit 2, and
# the launch files: --emit-megatron-args / --emit-torchtitan write the recipe and read back to the same step.
# Usage: test_fp8.sh ZPLAN
set -u
Z="$1"
. "$(dirname "$0")/lib.sh"
ok() { pass=$((pass + 1)); echo "ok   $*"; }
check() { # check "description" python-expression-on-d (the JSON as d) file
  if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$3"; then ok "$1"
  else ko "$1"; fi
}
bad() { # (fixed text, not lib.sh's pattern) bad "description" "message fragment" args...: exit 2 naming the fix
  local what="$1" msg="$2"; shift 2
  "$Z" "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$msg" "$T/err"; then ok "$what"; else ko "$what: rc $rc, $(cat "$T/err")"; fi
}

PLAN="--model llama-3-8b --gpus 8 --cluster dgx-h100 --stage 1 --mp 1 --micro-batch 1 --global-batch 16 --exact"
# shellcheck disable=SC2086
"$Z" $PLAN --json >"$T/bf16.json" 2>"$T/err" || ko "bf16: $(cat "$T/err")"
for r in delayed current torchao-tensorwise; do
  # shellcheck disable=SC2086
  "$Z" $PLAN --precision fp8 --fp8-recipe $r --json >"$T/$r.json" 2>"$T/err" || ko "fp8 $r: $(cat "$T/err")"
done
check "fp8 (delayed) JSON: precision fp8, recipe delayed" \
  "d['plans'][0]['precision'] == 'fp8' and d['plans'][0]['fp8_recipe'] == 'delayed'" "$T/delayed.json"
check "bf16 JSON: no fp8_recipe key" "d['plans'][0]['precision'] == 'bf16' and 'fp8_recipe' not in d['plans'][0]" \
  "$T/bf16.json"
python3 - "$T" <<'PY' && ok "fp8 delayed and current faster than bf16, delayed faster than current, MFU over the bf16 peak" || ko "fp8 step times"
import json, sys
t = sys.argv[1]
s = {k: json.load(open(f"{t}/{k}.json"))["plans"][0] for k in ("bf16", "delayed", "current", "torchao-tensorwise")}
b, d, c = s["bf16"]["step_time_s"], s["delayed"]["step_time_s"], s["current"]["step_time_s"]
print(f"  bf16 {b:.3f} s, delayed {d:.3f} s ({b/d:.2f}x), current {c:.3f} s ({b/c:.2f}x), "
      f"torchao eager {s['torchao-tensorwise']['step_time_s']:.3f} s")
mfu = s["delayed"]["mfu"] * 989 / s["delayed"]["model_tflops_per_gpu"]
sys.exit(0 if d < c < b and abs(mfu - 1) < 1e-6 else 1)
PY
# shellcheck disable=SC2086
"$Z" $PLAN --precision fp8 >"$T/fp8.txt" 2>/dev/null
if grep -q '^Precision: fp8 (recipe delayed, Transformer Engine)' "$T/fp8.txt" &&
   grep -q '^bf16 parameters and FP8 copies' "$T/fp8.txt"; then ok "text: the precision fact and the memory row"
else ko "text: $(grep -E 'Precision|parameters' "$T/fp8.txt")"; fi
# shellcheck disable=SC2086
"$Z" $PLAN --top 1 >"$T/b.txt" 2>/dev/null
if ! grep -q 'fp8\|FP8' "$T/b.txt"; then ok "bf16 text says nothing of FP8"; else ko "bf16 text mentions FP8"; fi

bad "fp8 on dgx-a100 exits 2 naming the presets with FP8" "has no FP8 tensor cores (use bf16, or a cluster whose GPU has them: dgx-h100" \
  --model llama-3-8b --gpus 8 --cluster dgx-a100 --precision fp8
bad "fp8 on dgx2 exits 2" "V100-SXM3-32GB of --cluster dgx2 has no FP8 tensor cores" --model 1.5B --gpus 16 --precision fp8
bad "bad recipe exits 2" "--fp8-recipe: 'nvfp4' is not an FP8 recipe (use delayed, current" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --precision fp8 --fp8-recipe nvfp4
bad "mxfp8 on H100 exits 2 naming the Blackwell presets" \
  "--fp8-recipe mxfp8: the H100-SXM5-80GB of --cluster dgx-h100 has no tensor cores that apply block scales (MXFP8 needs Blackwell: dgx-b200, gb200-nvl72; on this GPU use --fp8-recipe blockwise" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --precision fp8 --fp8-recipe mxfp8

# the block-scaled recipes: blockwise on H100, mxfp8 on B200; their GEMMs at the tensorwise rate, their
# casts and copies a little larger by the scales
# shellcheck disable=SC2086
"$Z" $PLAN --precision fp8 --fp8-recipe blockwise --json >"$T/blockwise.json" 2>"$T/err" || ko "blockwise: $(cat "$T/err")"
B200="${PLAN/dgx-h100/dgx-b200}"
for r in delayed mxfp8; do
  # shellcheck disable=SC2086
  "$Z" $B200 --precision fp8 --fp8-recipe $r --json >"$T/b200-$r.json" 2>"$T/err" || ko "b200 $r: $(cat "$T/err")"
done
python3 - "$T" <<'PY' && ok "blockwise (H100) and mxfp8 (B200): a little slower and larger than delayed, faster than bf16" || ko "block-scaled recipes"
import json, sys
t = sys.argv[1]
p = lambda k: json.load(open(f"{t}/{k}.json"))["plans"][0]
b, d, bw = p("bf16"), p("delayed"), p("blockwise")
bd, mx = p("b200-delayed"), p("b200-mxfp8")
for name, x, ref in (("blockwise", bw, d), ("mxfp8", mx, bd)):
    print(f"  {name}: step {x['step_time_s']:.4f} s vs delayed {ref['step_time_s']:.4f} s, "
          f"memory {x['memory_gb']['total']:.3f} GB vs {ref['memory_gb']['total']:.3f} GB")
ok = (bw["fp8_recipe"] == "blockwise" and mx["fp8_recipe"] == "mxfp8"
      and d["step_time_s"] < bw["step_time_s"] < 1.02 * d["step_time_s"] < b["step_time_s"]
      and bd["step_time_s"] < mx["step_time_s"] < 1.02 * bd["step_time_s"]
      and bw["memory_gb"]["total"] > d["memory_gb"]["total"] and mx["memory_gb"]["total"] > bd["memory_gb"]["total"])
sys.exit(0 if ok else 1)
PY
bad "--fp8-recipe without --precision fp8" "give --precision fp8 too" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --fp8-recipe current
bad "--fp8-all-gather with a TE recipe" "FSDP2's FP8 all-gather is torchao's" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --precision fp8 --fp8-all-gather
bad "--fp8-all-gather with rowwise" "tensorwise scales only" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --precision fp8 --fp8-recipe torchao-rowwise --fp8-all-gather

# Megatron-LM: the recipe written and read back to the same step
# shellcheck disable=SC2086
"$Z" ${PLAN/--mp 1/--mp 2 --sp} --precision fp8 --fp8-recipe current --grad-accum-dtype fp32 \
  --emit-megatron-args "$T/m.args" --json \
  >"$T/mc.json" 2>/dev/null
if grep -q -- '--bf16 .*--fp8-format hybrid --fp8-recipe tensorwise' "$T/m.args"; then ok "--emit-megatron-args writes the FP8 recipe"
else ko "megatron args: $(cat "$T/m.args")"; fi
"$Z" --megatron-args "$T/m.args" --gpus 8 --cluster dgx-h100 --json >"$T/mr.json" 2>/dev/null
python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['plans'][0]; b=json.load(open(sys.argv[2]))['plans'][0]; sys.exit(0 if a['fp8_recipe']=='current' and abs(a['step_time_s']-b['step_time_s'])<1e-9 else 1)" \
  "$T/mr.json" "$T/mc.json" && ok "the Megatron-LM arguments read back: recipe current, the same step" || ko "megatron read back"
sed 's/--fp8-recipe tensorwise/--fp8-recipe nvfp4/' "$T/m.args" >"$T/nv.args"
bad "Megatron --fp8-recipe nvfp4 exits 2" "--fp8-recipe nvfp4: not a Megatron-core recipe zplan models (use delayed, tensorwise, blockwise or mxfp8)" \
  --megatron-args "$T/nv.args" --gpus 8 --cluster dgx-h100
sed 's/--fp8-recipe tensorwise/--fp8-recipe mxfp8/' "$T/m.args" >"$T/mx.args"
bad "Megatron --fp8-recipe mxfp8 on H100 exits 2" "has no tensor cores that apply block scales" \
  --megatron-args "$T/mx.args" --gpus 8 --cluster dgx-h100
# mxfp8 on B200: written as Megatron-core states it (E4M3 throughout) and read back to the same step
# shellcheck disable=SC2086
"$Z" ${B200/--mp 1/--mp 2 --sp} --precision fp8 --fp8-recipe mxfp8 --grad-accum-dtype fp32 \
  --emit-megatron-args "$T/mx8.args" --json >"$T/mx8.json" 2>/dev/null
if grep -q -- '--fp8-format e4m3 --fp8-recipe mxfp8' "$T/mx8.args"; then ok "--emit-megatron-args writes mxfp8 in e4m3"
else ko "mxfp8 args: $(cat "$T/mx8.args")"; fi
"$Z" --megatron-args "$T/mx8.args" --gpus 8 --cluster dgx-b200 --json >"$T/mx8r.json" 2>"$T/err"
python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['plans'][0]; b=json.load(open(sys.argv[2]))['plans'][0]; sys.exit(0 if a['fp8_recipe']=='mxfp8' and abs(a['step_time_s']-b['step_time_s'])<1e-9 else 1)" \
  "$T/mx8r.json" "$T/mx8.json" && ok "mxfp8 Megatron-LM arguments read back on B200: the same step" || ko "mxfp8 read back: $(cat "$T/err")"
sed 's/--fp8-format hybrid/--fp8-format hybrid --fp8-param-gather/' "$T/m.args" >"$T/pg.args"
bad "Megatron --fp8-param-gather exits 2" "FP8 parameters" --megatron-args "$T/pg.args" --gpus 8 --cluster dgx-h100
bad "torchao recipe to Megatron-LM exits 2" "is torchao's, which Megatron-core does not run" \
  --model llama-3-8b --gpus 8 --cluster dgx-h100 --precision fp8 --fp8-recipe torchao-tensorwise --emit-megatron-args "$T/x.args"

# torchtitan: [float8] written and read back
"$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --stage 3 --mp 1 --micro-batch 1 --global-batch 16 --exact \
  --precision fp8 --fp8-recipe torchao-tensorwise --fp8-all-gather --emit-torchtitan "$T/tt.toml" --json >"$T/tt.json" 2>/dev/null
if grep -q 'converters = \["float8"\]' "$T/tt.toml" && grep -q 'recipe_name = "tensorwise"' "$T/tt.toml" &&
   grep -q 'enable_fsdp_float8_all_gather = true' "$T/tt.toml"; then ok "--emit-torchtitan writes [float8]"
else ko "torchtitan: $(cat "$T/tt.toml")"; fi
"$Z" --torchtitan "$T/tt.toml" --gpus 8 --cluster dgx-h100 --json >"$T/ttr.json" 2>"$T/err"
python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['plans'][0]; sys.exit(0 if a['fp8_recipe']=='torchao-tensorwise' else 1)" \
  "$T/ttr.json" && ok "the torchtitan TOML reads back with its float8 recipe" || ko "torchtitan read back: $(cat "$T/err")"

echo "== MoE token dispatchers (--moe-dispatcher; vocab/zp_dispatch.c)"
bad "FP8 dispatch without FP8 training" "add --precision fp8" --model deepseek-v2-lite --gpus 32 --cluster dgx-h100 --moe-dispatcher deepep-fp8
bad "a dispatcher for a dense model" "no routed experts to dispatch" --model llama-3-8b --gpus 16 --cluster dgx-h100 --moe-dispatcher deepep
bad "an unknown dispatcher" "use alltoall, allgather, deepep, deepep-fp8" --model deepseek-v2-lite --gpus 32 --moe-dispatcher nvshmem
bad "DeepEP under --framework deepspeed" "does not run DeepEP's token dispatch" --model mixtral-8x7b --gpus 16 --cluster dgx-h100 --framework deepspeed --moe-dispatcher deepep
bad "DeepSeek's FP8 dispatch to Megatron-LM" "is not an option Megatron-core has" --model mixtral-8x7b --gpus 16 --cluster dgx-h100 \
  --ep 8 --mp 1 --stage 1 --micro-batch 1 --global-batch 64 --precision fp8 --moe-dispatcher deepep-fp8 --emit-megatron-args "$T/fp8d.args"
# EP 16 over two H100 nodes: DeepEP sends a token once per node and GPU, the step is shorter; FP8 dispatch shorter still
DS="--model deepseek-v2-lite --gpus 32 --cluster dgx-h100 --ep 16 --mp 1 --stage 1 --micro-batch 2 --global-batch 64 --recompute none --pp 1"
for d in alltoall deepep deepep-fp8; do
  x=""; [ "$d" = deepep-fp8 ] && x="--precision fp8"
  "$Z" $DS $x --moe-dispatcher $d --json >"$T/d_$d.json" 2>"$T/err" || ko "$d: $(cat "$T/err")"
done
python3 - "$T" <<'PY' && ok "deepep below alltoall, its JSON names it" || ko "dispatcher steps"
import json, sys
p = {d: json.load(open(f"{sys.argv[1]}/d_{d}.json"))["plans"][0] for d in ("alltoall", "deepep")}
a, b = p["alltoall"], p["deepep"]
ok = b["step_time_s"] < 0.9 * a["step_time_s"] and b["moe_dispatcher"] == "deepep" and "moe_dispatcher" not in a
print(a["step_time_s"], b["step_time_s"], b.get("moe_dispatcher"))
sys.exit(0 if ok else 1)
PY
"$Z" --model mixtral-8x7b --gpus 16 --cluster dgx-h100 --ep 8 --mp 1 --stage 1 --micro-batch 1 --global-batch 64 \
  --moe-dispatcher deepep --emit-megatron-args "$T/dp.args" >/dev/null 2>&1
if grep -q -- "--moe-token-dispatcher-type flex --moe-enable-deepep" "$T/dp.args"; then ok "--emit-megatron-args states DeepEP"
else ko "Megatron-LM arguments: $(cat "$T/dp.args")"; fi

finish
