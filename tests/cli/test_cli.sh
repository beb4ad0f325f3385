#!/usr/bin/env bash
# CLI behaviour: bad input exits 2 with a one-line message; golden reports; atomic -o; help.
# Usage: test_cli.sh ZPLAN GOLDEN_DIR
set -u
Z="$1"
G="$2"
. "$(dirname "$0")/lib.sh"
bad_tried=0

# expect_bad "description" args... : exit 2, a one-line message on stderr starting "zplan:", nothing on stdout
expect_bad() {
  local what="$1"; shift
  bad_tried=$((bad_tried + 1))
  "$Z" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$T/err")
  if [ "$rc" -eq 2 ] && [ "$lines" -ge 1 ] && grep -Eq '^zplan( [a-z]+)?: ' "$T/err" && [ ! -s "$T/out" ]; then
    ok
    printf '  bad input %-42s -> exit 2: %s\n' "$what" "$(head -1 "$T/err" | cut -c1-110)"
  else
    ko "$what: rc=$rc stderr=$(cat "$T/err") stdout=$(head -c 200 "$T/out")"
  fi
}

echo "== bad inputs"
expect_bad "unknown model"            --model nosuchmodel --gpus 64
expect_bad "negative size -5B"        --model -5B --gpus 64
expect_bad "overflowing size 1e400B"  --model 1e400B --gpus 64
expect_bad "not a size abc"           --model abc --gpus 64
expect_bad "empty model"              --model "" --gpus 64
expect_bad "unknown suffix 5Q"        --model 5Q --gpus 64
expect_bad "absurd model 1e30"        --model 1e30 --gpus 64
expect_bad "zero parameters 0B"       --model 0B --gpus 64
expect_bad "gpus 0"                   --model 1.5B --gpus 0
expect_bad "gpus negative"            --model 1.5B --gpus -4
expect_bad "gpus fractional"          --model 1.5B --gpus 2.5
expect_bad "gpus absurd 1e30"         --model 1.5B --gpus 1e30
expect_bad "gpus not a number"        --model 1.5B --gpus many
expect_bad "mp does not divide gpus"  --model 1.5B --gpus 64 --mp 3
expect_bad "mp exceeds gpus"          --model 1.5B --gpus 64 --mp 128
expect_bad "mp does not divide heads" --model 1.5B --gpus 64 --mp 32
expect_bad "stage 4"                  --model 1.5B --gpus 64 --stage 4
expect_bad "stage -1"                 --model 1.5B --gpus 64 --stage -1
expect_bad "stage x"                  --model 1.5B --gpus 64 --stage x
expect_bad "micro-batch 0"            --model 1.5B --gpus 64 --micro-batch 0
expect_bad "global batch not x dp"    --model 1.5B --gpus 64 --mp 1 --global-batch 100
expect_bad "unknown option"           --model 1.5B --gpus 64 --frobnicate
expect_bad "option without value"     --model 1.5B --gpus
expect_bad "missing --gpus"           --model 1.5B
expect_bad "unknown flash kernel"     --model 1.5B --gpus 64 --flash-kernel fa9
expect_bad "fa1 with heads of 160"    --model 1T --gpus 3072 --flash-kernel fa1
expect_bad "megatron args of ALiBi"   --model bloom-176b --gpus 64 --emit-megatron-args "$T/bloom.args"
expect_bad "unknown framework"        --model 1.5B --gpus 64 --framework megatron-1999
expect_bad "SP in Megatron-LM 2021"   --model 1.5B --gpus 64 --framework megatron-2021 --sp
expect_bad "interleaved at PP 2 2021" --model 1.5B --gpus 64 --global-batch 512 --pp 2 --framework megatron-2021 --schedule interleaved
expect_bad "interleaved in DeepSpeed" --model 1.5B --gpus 64 --global-batch 512 --pp 4 --framework deepspeed --virtual-stages 2
expect_bad "overlap in Megatron 2021" --model 1.5B --gpus 64 --framework megatron-2021 --overlap-comm
# ZeRO-2/3 beside pipelines: DeepSpeed's pipeline engine refuses them (its assertion quoted), torchtitan's FSDP2
# runs them (--framework any: gathered once a step by default, keep-params); hybrid sharding's group divides DP
expect_bad "ZeRO-3 + PP in DeepSpeed" --model 1.5B --gpus 64 --global-batch 512 --pp 2 --stage 3 --framework deepspeed
grep -q '"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"' "$T/err" && ok || ko "deepspeed's quote: $(cat "$T/err")"
if "$Z" --model 1.5B --gpus 64 --global-batch 512 --pp 2 --mp 1 --stage 3 --analytic --top 1 --format csv >"$T/z3pp.csv" \
        2>"$T/err" && grep -q '^1,3 Pos+g+p,1,2,32,.*keep-params' "$T/z3pp.csv"; then ok
else ko "--framework any, stage 3 with --pp 2: $(cat "$T/err") $(head -3 "$T/z3pp.csv")"; fi
expect_bad "shard group not | DP"      --model 1.5B --gpus 64 --global-batch 512 --pp 2 --mp 1 --stage 3 --shard-group 5
grep -q 'does not divide the data-parallel degree 32.*give a divisor of 32' "$T/err" && ok || ko "shard group: $(cat "$T/err")"
expect_bad "shard group at stage 1"    --model 1.5B --gpus 64 --stage 1 --shard-group 8
expect_bad "reshard policy bogus"      --model 1.5B --gpus 64 --stage 3 --reshard-after-forward sometimes
expect_bad "reshard policy in DeepSpeed" --model 1.5B --gpus 64 --stage 3 --framework deepspeed --reshard-after-forward never
# --shard-group auto: full sharding and the node's shard group (8 of the 64 DP ranks on dgx-a100) both offered
if "$Z" --model 1.5B --gpus 64 --cluster dgx-a100 --mp 1 --pp 1 --stage 3 --micro-batch 4 --shard-group auto --analytic \
        --top 4 --format csv >"$T/auto.csv" 2>"$T/err" && grep -q ',CB MD sel-ckpt HSDP8,' "$T/auto.csv" &&
   grep -q ',CB MD sel-ckpt,' "$T/auto.csv"; then ok
else ko "--shard-group auto: $(cat "$T/err") $(head -5 "$T/auto.csv")"; fi
expect_bad "v2 args of a Llama"        --model llama-2-7b --gpus 64 --framework megatron-2021 --emit-megatron-args "$T/v2.args"
# Megatron-LM v2's own argument names for --framework megatron-2021
if "$Z" --model 1.5B --gpus 64 --cluster dgx-a100 --framework megatron-2021 --recompute full --analytic \
        --emit-megatron-args "$T/v2.args" >/dev/null 2>"$T/err" && grep -q -- '--checkpoint-activations' "$T/v2.args" &&
   ! grep -q -- '--recompute-granularity\|--overlap-grad-reduce\|--no-gradient-accumulation-fusion' "$T/v2.args"; then ok
else ko "megatron-2021 arguments: $(cat "$T/err") $(cat "$T/v2.args" 2>/dev/null)"; fi
expect_bad "missing --model"          --gpus 64
expect_bad "unknown format"           --model 1.5B --gpus 64 --format xml
expect_bad "unknown cluster"          --model 1.5B --gpus 64 --cluster dgx9
expect_bad "gpu-mem 1 byte"           --model 1.5B --gpus 64 --gpu-mem 1
expect_bad "offload bogus"            --model 1.5B --gpus 64 --offload disk
expect_bad "offload optimizer stg 0"  --model 1.5B --gpus 64 --stage 0 --offload optimizer
expect_bad "offload params stage 2"   --model 1.5B --gpus 64 --stage 2 --offload params
expect_bad "pa without checkpoints"   --model 1.5B --gpus 64 --pa --no-checkpoint
expect_bad "stray argument"           --model 1.5B --gpus 64 extra
expect_bad "unknown command"          frobnicate
expect_bad "missing config.json"      --model /nonexistent/config.json --gpus 8
printf '{"n_layer": 4, "n_embd": ' >"$T/trunc.json"
expect_bad "truncated config.json"    --model "$T/trunc.json" --gpus 8
printf '{"n_layer": 4, "n_embd": 64}' >"$T/nohead.json"
expect_bad "config.json without heads" --model "$T/nohead.json" --gpus 8
expect_bad "config.json a directory"  --model "$T/" --gpus 8
printf '{"n_layer": 4, "n_embd": 64, "n_head": 4}' >"$T/unreadable.json"; chmod 000 "$T/unreadable.json"
if [ "$(id -u)" -ne 0 ]; then expect_bad "unreadable config.json" --model "$T/unreadable.json" --gpus 8; fi
# A config.json zplan would size as a different model: exit 2 with ONE line that names the key.
expect_bad_key() {
  local what="$1" key="$2" file="$T/$3.json"; shift 3
  printf '%s' "$1" >"$file"
  expect_bad "$what" --model "$file" --gpus 8
  if [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "$key" "$T/err"; then ok; else ko "$what: not one line naming $key: $(cat "$T/err")"; fi
}
L='"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4'
expect_bad_key "config.json size key wrong type" num_key_value_heads kvstr "{\"model_type\": \"llama\", $L, \"num_key_value_heads\": \"2\"}"
expect_bad_key "config.json kv heads not dividing" num_key_value_heads kv3 "{\"model_type\": \"llama\", $L, \"num_key_value_heads\": 3}"
expect_bad_key "config.json top-k above experts" num_experts_per_tok topk "{\"model_type\": \"mixtral\", $L, \"num_key_value_heads\": 4, \"num_local_experts\": 4, \"num_experts_per_tok\": 5}"
expect_bad_key "config.json llama without layers" num_hidden_layers nolayers "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4}"
expect_bad_key "config.json unknown size key" num_shared_layers unk "{\"model_type\": \"llama\", $L, \"num_shared_layers\": 2}"
expect_bad_key "config.json unknown model_type" "supported" mamba "{\"model_type\": \"mamba\", $L}"
expect_bad_key "config.json ambiguous, no model_type" model_type notype "{$L, \"intermediate_size\": 256}"
# the published configs are read (the counts themselves are test_models' business)
if "$Z" --model "$G/../models/hf/mixtral-8x7b.json" --gpus 64 --analytic >"$T/mx.txt" 2>"$T/err" && grep -q '46.7B' "$T/mx.txt"; then
  ok; else ko "mixtral config.json: $(cat "$T/err")"; fi
expect_bad "report kind unknown"      report table9
expect_bad "report no kind"           report
expect_bad "table1 bad model"         report table1 --models 7.5B,xyz
expect_bad "table1 bad dp"            report table1 --dp 0,4
expect_bad "table2 bad mp"            report table2 --mp 1,-2
expect_bad "table2 gpu-mem garbage"   report table2 --gpu-mem lots
expect_bad "output into a directory"  report table1 -o "$T"
expect_bad "output in missing dir"    report table1 -o "$T/no/such/dir/file.txt"
printf '<?xml version="1.0"?>\n<platform version="4.1"><zone id="z" routing="Full"><host id="a" speed="1f"/>' >"$T/broken.xml"
expect_bad "platform: truncated XML"  --model 1.5B --gpus 16 --cluster "$T/broken.xml"
printf '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n<platform version="4.1"><zone id="z" routing="Full"><host id="a" speed="1f"/></zone></platform>\n' >"$T/names.xml"
expect_bad "platform: wrong host names" --model 1.5B --gpus 16 --cluster "$T/names.xml"
expect_bad "platform: missing file"   --model 1.5B --gpus 16 --cluster "$T/none.xml"
expect_bad "platform: not XML"        --model 1.5B --gpus 16 --cluster "$T/trunc.json.xml"
expect_bad "preset without platform"  --model 1.5B --gpus 16 --preset dgx2
echo '{"format": "zplan-profile"' >"$T/bad-profile.json"
expect_bad "profile: truncated"       --model 1.5B --gpus 16 --profile "$T/bad-profile.json"
expect_bad "profile: missing"         --model 1.5B --gpus 16 --profile "$T/nothing.json"
# a misspelled key would leave the preset's figure in place: refused, naming it
sed 's/"backend"/"device_modle": {"nccl_ctas": 24}, "backend"/' "$(dirname "$0")/../fuzz/seeds/fuzz_profile/calibrated.json" >"$T/typo-profile.json"
expect_bad "profile: unknown key"     --model 1.5B --gpus 16 --profile "$T/typo-profile.json"
if grep -q "unknown key 'device_modle'" "$T/err"; then ok; else ko "profile typo: $(cat "$T/err")"; fi
expect_bad "trace with --analytic"    --model 1.5B --gpus 16 --analytic --trace "$T/t.json"
expect_bad "jobs 0"                   --model 1.5B --gpus 16 --jobs 0
echo '{"train_batch_size": 100, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3}' >"$T/ds-bad.json"
expect_bad "ds-config batch mismatch" --model 8B --gpus 64 --mp 4 --ds-config "$T/ds-bad.json"
echo '{"zero_optimization": {"stage": 7}}' >"$T/ds-stage.json"
expect_bad "ds-config stage 7"        --model 8B --gpus 64 --ds-config "$T/ds-stage.json"
echo '{"zero_optimization": ' >"$T/ds-trunc.json"
expect_bad "ds-config truncated"      --model 8B --gpus 64 --ds-config "$T/ds-trunc.json"
expect_bad "ds-config missing"        --model 8B --gpus 64 --ds-config "$T/none.json"
expect_bad "report scaling bad gpus"  report scaling --model 8B --gpus 64,zero
expect_bad "report models with model" report models --model 8B
expect_bad "report configs 3 models"  report configs --models 8B,20B,40B
expect_bad "report memory no model"   report memory --gpus 64
expect_bad "report kind with --trace" report scaling --model 8B --trace "$T/x.json"
expect_bad "more nodes than the fabric" --model 8B --gpus 102400 --cluster dgx-h100-railopt
expect_bad "oversubscription, no leaves" --model 8B --gpus 64 --cluster dgx-h100 --oversubscription 2
expect_bad "oversubscription below 1" --model 8B --gpus 64 --cluster dgx-h100-railopt --oversubscription 0.5
expect_bad "sim mode unknown"         --model 8B --gpus 64 --sim half
expect_bad "sim full beyond its nodes" --model 8B --gpus 102400 --cluster dgx-h100 --sim full
# issue #18 case 6: a bad output path is refused before the answer is printed (it used to print, then exit 2)
expect_bad "--report into a directory" --model 1.5B --gpus 16 --analytic --report "$T"
expect_bad "--trace in a missing dir"  --model 1.5B --gpus 16 --trace "$T/no/such/step.json"
expect_bad "--emit-ds-config a dir"    --model 1.5B --gpus 16 --analytic --emit-ds-config "$T"
expect_bad "reserve above the GPU"     --model 1.5B --gpus 16 --reserve 40G
# issue #18 case 6: one check per option for every command (table2 used to print zeros "on 8e-08 GB")
expect_bad "table2 --gpu-mem 80 (bytes)" report table2 --gpu-mem 80
grep -q 'did you mean 80G' "$T/err" && ok || ko "table2 --gpu-mem 80: no hint: $(cat "$T/err")"
expect_bad "what-if --gpu-mem 80"      --model 1.5B --gpus 16 --gpu-mem 80
grep -q 'did you mean 80G' "$T/err" && ok || ko "what-if --gpu-mem 80: no hint: $(cat "$T/err")"
# exec of 13B (229 GB in fp32) used to die "out of memory allocating S->params"
if [ "$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)" -lt 200 ]; then
  expect_bad "exec of a model too large here" exec --model 13B
  grep -q 'GB are available: use a smaller model' "$T/err" && ok || ko "exec 13B: $(cat "$T/err")"
fi

echo "== nothing fits: exit 3 and what would (issue #18 case 2)"
"$Z" --model 100B --gpus 400 --stage 3 --mp 1 --micro-batch 200 >"$T/nm.txt" 2>"$T/err"
rc=$?
if [ "$rc" -eq 3 ] && grep -q 'No plan fits the options given (exit status 3)' "$T/nm.txt" &&
   grep -q -- '- micro-batch [0-9]* or less (--micro-batch' "$T/nm.txt" && grep -q -- '- --mp 16 ' "$T/nm.txt" &&
   grep -q 'sequences of [0-9]* tokens or less' "$T/nm.txt"; then ok; else ko "near miss: rc=$rc $(cat "$T/err") $(cat "$T/nm.txt")"; fi
"$Z" --model 100B --gpus 400 --stage 3 --mp 1 --micro-batch 200 --format json >"$T/nm.json" 2>"$T/err"
rc=$?
if [ "$rc" -eq 3 ] && python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["best"] is None
nm = j["near_miss"]
assert nm["max_micro_batch"] > 0 and nm["max_seq"] > 0
assert any(f["change"].startswith("--mp ") for f in nm["fixes"])
usable = j["cluster"]["gpu_mem_gb"] - j["cluster"]["reserve_gb"]
assert all(f["memory_gb"] <= usable + 1e-6 for f in nm["fixes"])
' "$T/nm.json"; then ok; else ko "near miss json: rc=$rc $(cat "$T/err") $(head -c 400 "$T/nm.json")"; fi
"$Z" --model 1T --gpus 16 --stage 2 --mp 16 --analytic >"$T/nm2.txt" 2>&1
rc=$?
[ "$rc" -eq 3 ] && grep -q -- '--gpus [0-9]*, drop the plan options' "$T/nm2.txt" && ok || ko "near miss, more GPUs: rc=$rc $(cat "$T/nm2.txt")"
"$Z" schedule --model 100B --gpus 400 --stage 3 --mp 1 --micro-batch 200 >/dev/null 2>"$T/err"
[ $? -eq 3 ] && ok || ko "schedule of nothing that fits: not exit 3: $(cat "$T/err")"

echo "== compare (issue #18 case 8)"
if "$Z" compare --model 13B --gpus 64 --cluster dgx-a100 --analytic >"$T/cmp.txt" 2>"$T/err" &&
   [ "$(grep -c '^--stage [0-3] ' "$T/cmp.txt")" -eq 4 ] && grep -q 'DeepSpeed keys' "$T/cmp.txt" &&
   grep -q 'Pos+g+p / stage 3' "$T/cmp.txt"; then ok; else ko "compare stages: $(cat "$T/err") $(cat "$T/cmp.txt")"; fi
"$Z" compare --model 13B --gpus 64 --mp 1,2 --offload none,optimizer --stage 2 --analytic --format json >"$T/cmp.json" 2>"$T/err"
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["plans"]
assert len(rows) == 4, rows
assert sorted((r["mp"], r["options"].endswith("offload:optimizer")) for r in rows) == [(1, False), (1, True), (2, False), (2, True)]
assert all(r["deepspeed"].startswith("stage=2") for r in rows)
' "$T/cmp.json"; then ok; else ko "compare lists: $(cat "$T/err") $(head -c 300 "$T/cmp.json")"; fi
"$Z" compare --model 100B --gpus 16 --stage 1,2 --offload none --analytic >/dev/null 2>"$T/err"
[ $? -eq 3 ] && ok || ko "compare where nothing fits: not exit 3"
# with --framework, the stages it runs: Megatron-LM v2 has no ZeRO, so one row
if "$Z" compare --model 13B --gpus 64 --cluster dgx-a100 --framework megatron-2021 --analytic --format csv >"$T/cmpf.csv" 2>"$T/err" &&
   [ "$(grep -c '^--stage' "$T/cmpf.csv")" -eq 1 ] && grep -q '^--stage 0,' "$T/cmpf.csv"; then ok; else
   ko "compare --framework megatron-2021: $(cat "$T/err") $(cat "$T/cmpf.csv")"; fi
expect_bad "compare: a bad item"      compare --model 13B --gpus 64 --stage 1,7
expect_bad "compare: a what-if-only option" compare --model 13B --gpus 64 --trace "$T/t.json"

echo "== --max-model (issue #18 case 4)"
if "$Z" --model 13B --gpus 8 --cluster dgx-a100 --offload none --max-model --analytic >"$T/mm.txt" 2>"$T/err" &&
   grep -q -- '--max-model: the largest of this shape that fits has [0-9]* blocks' "$T/mm.txt"; then ok; else
  ko "--max-model: $(cat "$T/err") $(head -5 "$T/mm.txt")"; fi

echo "== one GPU with offload, host memory per node (issue #18 case 4)"
# a one-GPU job has the node's whole host memory (1.5 TB on a DGX-2), not 1/16 of it: ZeRO-Offload fits 13B
if "$Z" --model 13B --gpus 1 --stage 2 --offload optimizer --micro-batch 1 --analytic --format json >"$T/one.json" 2>"$T/err" &&
   python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
b = j["plans"][j["best"]]
assert b["fits"] and b["host_memory_gb"] > 1500 / 16, b
' "$T/one.json"; then ok; else ko "13B ZeRO-Offload on one V100: $(cat "$T/err") $(head -c 300 "$T/one.json")"; fi
# --host-mem is the node's: 100G cannot hold its 203 GB of offloaded states, and the answer says so (exit 3)
"$Z" --model 13B --gpus 1 --stage 2 --offload optimizer --micro-batch 1 --analytic --host-mem 100G >"$T/hm.txt" 2>"$T/err"
rc=$?
[ "$rc" -eq 3 ] && grep -q 'host memory [0-9.]* GB > 100.0 GB' "$T/hm.txt" && ok || ko "--host-mem 100G: rc=$rc $(cat "$T/hm.txt")"
expect_bad "--host-mem too small"      --model 13B --gpus 1 --host-mem 12
expect_bad "report --host-mem"         report table1 --host-mem 1T
# the largest model of a shape that fits one GPU with ZeRO-3 Offload is far above what fits without offload
mm_blocks() { "$Z" --model 13B --gpus 1 --micro-batch 1 --max-model --analytic "$@" 2>/dev/null |
  sed -n 's/.*--max-model: the largest of this shape that fits has \([0-9]*\) blocks.*/\1/p'; }
a=$(mm_blocks --stage 3 --offload none); b=$(mm_blocks --stage 3 --offload params)
[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt $((4 * a)) ] && ok || ko "--max-model with offload on one GPU: '$a' vs '$b' blocks"

echo "== a LLaMA config names its own missing key (issue #18 case 6)"
printf '{"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}' >"$T/llama-nol.json"
expect_bad "llama config without num_hidden_layers" --model "$T/llama-nol.json" --gpus 8 --analytic
grep -q 'missing key "num_hidden_layers"' "$T/err" && ! grep -q '"n_layer"' "$T/err" && ok || ko "llama missing key: $(cat "$T/err")"

echo "== default batch: what a team would pick (issue #18 case 3)"
# report models used to propose a global batch of 23,200 for 1.5B (the largest micro-batch that fits)
if "$Z" report models --analytic --format json >"$T/rm.json" 2>"$T/err" && python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
rows = [s for s in j["sections"] if "rows" in s][0]["rows"]
r = [x for x in rows if x["model"] == "1.5B"][0]
assert r["zero_global_batch"] <= 2048, r
' "$T/rm.json"; then ok; else ko "report models default batch: $(cat "$T/err") $(head -c 400 "$T/rm.json")"; fi

echo "== huge but valid"
if "$Z" --model 1T --gpus 1M --format json >"$T/huge.json" 2>"$T/err" && ! grep -Eqi 'nan|inf' "$T/huge.json"; then ok; else ko "1T on 1M GPUs: $(cat "$T/err")"; fi

echo "== 102,400 GPUs simulated (the reduced simulation), not estimated"
if "$Z" --model gpt3-175B --cluster dgx-h100 --gpus 102400 --stage 3 --mp 8 --micro-batch 1 --global-batch 25600 \
     --format json >"$T/big.json" 2>"$T/err" && grep -q '"method": "simgrid"' "$T/big.json" &&
   grep -q '"sim": "reduced"' "$T/big.json"; then ok; else ko "102,400 GPUs: $(cat "$T/err") $(head -c 300 "$T/big.json")"; fi
if "$Z" --model 8B --cluster dgx2 --gpus 64 --stage 2 --mp 4 --micro-batch 2 --sim full --format json >"$T/full.json" \
     2>"$T/err" && grep -q '"sim": "full"' "$T/full.json"; then ok; else ko "--sim full: $(cat "$T/err")"; fi

echo "== user platform and trace"
{
  echo '<?xml version="1.0"?>'
  echo '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
  echo '<platform version="4.1"><zone id="z" routing="Full">'
  for n in 0 1; do
    for i in 0 1 2 3; do echo "<host id=\"gpu-$n-$i\" speed=\"100Tf\"/>"; done
    echo "<host id=\"cpu-$n\" speed=\"1Tf\"/>"
  done
  for n in 0 1; do echo "<link id=\"pcie-$n\" bandwidth=\"16GBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>"; done
  echo '<link id="ib" bandwidth="10GBps" latency="2us"/>'
  for n in 0 1; do echo "<route src=\"gpu-$n-0\" dst=\"cpu-$n\"><link_ctn id=\"pcie-$n\" direction=\"UP\"/></route>"; done
  for i in 0 1 2 3; do
    echo "<route src=\"gpu-0-$i\" dst=\"gpu-1-$i\"><link_ctn id=\"ib\"/></route>"
  done
  echo '</zone></platform>'
} >"$T/mine.xml"
if "$Z" --model 1.5B --gpus 8 --cluster "$T/mine.xml" --stage 2 --mp 1 --micro-batch 4 --format json >"$T/mine.json" 2>"$T/err" \
   && grep -q '"method": "simgrid"' "$T/mine.json"; then ok; else ko "user platform: $(cat "$T/err")"; fi
if "$Z" --model 1.5B --gpus 32 --stage 3 --mp 2 --micro-batch 2 --trace "$T/trace.json" >/dev/null 2>"$T/err" \
   && head -c 20 "$T/trace.json" | grep -q traceEvents; then ok; else ko "--trace: $(cat "$T/err")"; fi

echo "== DeepSpeed config round trip"
if "$Z" --model 20B --gpus 64 --mp 4 --analytic --emit-ds-config "$T/ds.json" --format csv >"$T/a.csv" 2>"$T/err" &&
   "$Z" --model 20B --gpus 64 --mp 4 --analytic --ds-config "$T/ds.json" --format csv >"$T/b.csv" 2>>"$T/err" &&
   [ "$(sed -n 2p "$T/a.csv")" = "$(sed -n 2p "$T/b.csv")" ]; then ok; else ko "emit/read back: $(cat "$T/err")"; fi
echo '{"train_batch_size": 64, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}, "frob": 1}}' >"$T/ds-n.json"
if "$Z" --model 1.5B --gpus 64 --analytic --ds-config "$T/ds-n.json" --emit-ds-config "$T/ds-n2.json" >/dev/null 2>"$T/err" &&
   ! grep -q 'not modelled' "$T/err" && grep -q 'unknown key zero_optimization.frob' "$T/err" &&
   grep -q '"device": "nvme"' "$T/ds-n2.json"; then ok; else
  ko "ds-config warnings, NVMe read and written: $(cat "$T/err")"; fi

# issue #18 case 5: a HuggingFace-style config (HJSON comments, trailing commas, "auto") on A100s is bf16,
# priced and labelled so; emitted back it stays bf16
cat >"$T/hf-ds.json" <<'EOF2'
{
  // written by the HuggingFace integration's docs, edited by hand
  "bf16": {"enabled": "auto"},
  "fp16": {"enabled": "auto",},
  "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},},
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
}
EOF2
if "$Z" --model 13B --gpus 64 --cluster dgx-a100 --analytic --ds-config "$T/hf-ds.json" --format json \
     --emit-ds-config "$T/hf-out.json" >"$T/hf.json" 2>"$T/err" && grep -q 'bf16.enabled "auto" -> true' "$T/err" &&
   grep -q '"precision": "bf16"' "$T/hf.json" && grep -q '"bf16"' "$T/hf-out.json" && ! grep -q '"fp16"' "$T/hf-out.json" &&
   "$Z" --model 13B --gpus 64 --cluster dgx-a100 --analytic --ds-config "$T/hf-out.json" 2>/dev/null | grep -q '^Precision: bf16 mixed'
then ok; else ko "HF auto config: $(cat "$T/err") $(cat "$T/hf-out.json")"; fi
# the memory table names the type the plan trains in (it said fp16 for a bf16 config)
"$Z" --model 13B --gpus 64 --cluster dgx-a100 --analytic --ds-config "$T/hf-ds.json" 2>/dev/null >"$T/hf.txt"
grep -q '^bf16 parameters ' "$T/hf.txt" && grep -q '^bf16 gradients ' "$T/hf.txt" && ! grep -q '^fp16 ' "$T/hf.txt" &&
  ok || ko "bf16 memory table: $(sed -n '/Memory per GPU/,/total/p' "$T/hf.txt")"
printf '{"bfloat16": {"enabled": true}, "zero_optimization": {"stage": 2}}' >"$T/bfloat16.json"
"$Z" --model 13B --gpus 64 --cluster dgx-a100 --analytic --ds-config "$T/bfloat16.json" 2>/dev/null | grep -q '^Precision: bf16 mixed' \
  && ok || ko "legacy bfloat16 key"

echo "== labels (issue #18 case 7)"
"$Z" --model 13B --gpus 1 --analytic --top 1 >"$T/l1.txt" 2>&1
grep -q '^zplan what-if: model 13B on 1 GPU of dgx2$' "$T/l1.txt" && grep -q "1 GPU (1 of a node's 16 V100-SXM3-32GB), 32 GiB = 34.36 GB per GPU" "$T/l1.txt" &&
  ! grep -Eq '\b1 (GPUs|nodes)\b' "$T/l1.txt" && ok || ko "one-GPU labels: $(head -4 "$T/l1.txt")"
"$Z" --model 13B --gpus 8 --cluster dgx-a100 --gpu-mem 40G --analytic --top 1 >"$T/l2.txt" 2>&1
grep -q '8 GPUs (1 node of 8 A100-SXM4-80GB), 40 GB per GPU (--gpu-mem; the A100-SXM4-80GB has 80 GiB = 85.9 GB), 38 GB usable by a plan' "$T/l2.txt" &&
  ok || ko "--gpu-mem label: $(sed -n 4p "$T/l2.txt")"
# Table 1 in fixed digits (it printed 35.625, 0.46875, 4187.5): two decimals in every GB cell
"$Z" report table1 | awk 'NR > 3 && NF == 6 { for (i = 4; i <= 6; i++) if ($i !~ /^[0-9]+\.[0-9][0-9]$/) bad = bad " " $i } END { exit bad != "" }' &&
  ok || ko "table1 digits"

# the search's progress bar ends complete (it stopped at 8/64 and vanished) with a line that says why
if command -v script >/dev/null 2>&1; then
  script -qec "'$Z' --model 100B --gpus 400 --top 1 >/dev/null" /dev/null >"$T/tty.out" 2>&1
  tr '\r' '\n' <"$T/tty.out" | grep -v '^ *$' >"$T/tty.lines"
  last_bar=$(grep '^simulating plans \[' "$T/tty.lines" | tail -1)
  n=$(echo "$last_bar" | sed -n 's|.*\] \([0-9]*\)/\([0-9]*\) .*|\1 \2|p')
  if [ -n "$n" ] && [ "${n% *}" = "${n#* }" ] && tail -1 "$T/tty.lines" | grep -q '^simulating plans: [0-9]* plans simulated, [0-9]* ruled out by their bound'; then
    ok; else ko "progress bar end: '$last_bar' / $(tail -1 "$T/tty.lines")"; fi
  "$Z" --model 100B --gpus 400 --top 1 2>"$T/pipe.err" >/dev/null
  [ ! -s "$T/pipe.err" ] && ok || ko "progress in a pipe: $(head -c 200 "$T/pipe.err")"
fi

# issue #18 case 8: report --help names every kind, validation included
"$Z" report --help >"$T/rh.txt" 2>&1
for kind in scaling models configs memory table1 table2 validation; do
  grep -q "^  $kind " "$T/rh.txt" && ok || ko "report --help omits $kind"
done

echo "== golden reports"
golden() {
  local name="$1"; shift
  if "$Z" "$@" >"$T/$name" 2>"$T/err" && diff -u "$G/$name" "$T/$name" >"$T/diff"; then ok; else ko "golden $name: $(head -40 "$T/diff") $(cat "$T/err")"; fi
}
golden table1.txt report table1
golden table1.csv report table1 --format csv
golden table1.md report table1 --format md
golden table2.txt report table2
golden table2.csv report table2 --format csv
golden models.txt models
golden clusters.csv clusters --format csv
golden whatif-100B.txt --model 100B --gpus 400 --stage 2 --mp 16 --global-batch 800 --pa --offload none

echo "== CSV headers of the contract"
"$Z" report table1 --format csv | head -1 | grep -qx 'model,params,dp,pos_gb,pos_g_gb,pos_g_p_gb' && ok || ko "table1 csv header"
"$Z" report table2 --format csv | head -1 | grep -q '^mp,gpus,baseline_b,pos_b,pos_g_b,pos_g_p_b' && ok || ko "table2 csv header"

echo "== atomic output"
echo "precious" >"$T/keep.txt"
"$Z" --model nosuch --gpus 8 -o "$T/keep.txt" 2>/dev/null
[ "$(cat "$T/keep.txt")" = "precious" ] && ok || ko "failed run damaged the output file"
"$Z" report table1 -o "$T/keep.txt" && grep -q 'Table 1' "$T/keep.txt" && ok || ko "-o did not write"
ls "$T" | grep -q 'tmp' && ko "temporary files left behind: $(ls "$T")" || ok

echo "== help and version"
"$Z" --help | grep -q -- '--global-batch' && ok || ko "--help"
"$Z" report --help | grep -q 'table2' && ok || ko "report --help"
"$Z" --version | grep -Eq '^zplan [0-9]' && ok || ko "--version"
"$Z" models --help | grep -q 'zoo' && ok || ko "models --help"
# every file written is named on stderr: -o, --report, --trace (and no trace claimed when none is written)
if "$Z" --model tiny --gpus 4 --top 1 -o "$T/w.txt" --report "$T/w.html" --trace "$T/w.json" 2>"$T/werr" >/dev/null &&
   grep -q "^zplan: wrote $T/w.txt\$" "$T/werr" && grep -q "^zplan: wrote $T/w.html\$" "$T/werr" &&
   grep -q "^zplan: wrote $T/w.json: " "$T/werr" && [ -s "$T/w.json" ]; then ok; else ko "wrote lines: $(cat "$T/werr")"; fi
"$Z" --model 100B --gpus 400 --stage 3 --mp 1 --micro-batch 200 --trace "$T/nofit.json" >/dev/null 2>"$T/werr"
if [ $? -eq 3 ] && grep -q "no plan fits: no trace written to $T/nofit.json" "$T/werr" && [ ! -e "$T/nofit.json" ]; then ok
else ko "no-fit trace: $(cat "$T/werr")"; fi
# token counts take binary K and M (8k = 8,192, as every framework's context lengths); a bare model size is refused
if cmp -s <("$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --seq 8k --analytic --top 1 2>&1) \
          <("$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --seq 8192 --analytic --top 1 2>&1); then ok
else ko "--seq 8k is not 8192"; fi
expect_bad "a model size without its unit" --model 70 --gpus 8
# keywords are case-insensitive (a team writes BF16 as its configs do), and the help prints no printf escapes
for v in BF16 Bf16 FP32; do
  lo=$(echo "$v" | tr 'A-Z' 'a-z')
  if cmp -s <("$Z" --model 1.5B --gpus 8 --precision "$v" --analytic --top 1 2>&1) \
            <("$Z" --model 1.5B --gpus 8 --precision "$lo" --analytic --top 1 2>&1); then ok; else ko "--precision $v differs from $lo"; fi
done
if "$Z" --help | grep -q '%%'; then ko "--help shows a doubled %"; else ok; fi

# --mtp-layers: the model's multi-token prediction modules (0 drops DeepSeek-V3's); --moe-shared-expert-overlap
expect_bad "--mtp-layers negative"         --model deepseek-v3 --gpus 512 --cluster dgx-h100 --mtp-layers -1
expect_bad "--mtp-layers not a number"     --model deepseek-v3 --gpus 512 --cluster dgx-h100 --mtp-layers one
expect_bad "--mtp-layers to the executor"  exec --model tiny-moe --mtp-layers 1
expect_bad "--moe-shared-expert-overlap dense" --model llama-3-8b --gpus 64 --cluster dgx-h100 --moe-shared-expert-overlap
# the MTP module costs its block's work: without it the step is shorter
mtp_plan() { "$Z" --model deepseek-v3 --gpus 512 --cluster dgx-h100 --analytic --ep 32 --pp 1 --stage 3 --exact \
  --format json "$@" 2>/dev/null |
  python3 -c 'import json,sys; p=json.load(sys.stdin)["plans"][0]; print(p["step_time_s"], p["memory_gb"]["params"])'; }
with=$(mtp_plan); without=$(mtp_plan --mtp-layers 0)
if python3 -c "import sys; a=[float(x) for x in '$with'.split()]; b=[float(x) for x in '$without'.split()]; sys.exit(0 if b[0] < a[0] else 1)" 2>/dev/null; then ok
else ko "--mtp-layers 0: step '$without' not below '$with'"; fi

# context parallelism (--cp): a dimension of the table inside DP; the batch has DP / CP replicas
expect_bad "--cp not cutting the sequence" --model llama-3-8b --gpus 64 --cluster dgx-h100 --seq 8k --cp 3
expect_bad "--cp above the DP ranks"       --model llama-3-8b --gpus 64 --cluster dgx-h100 --mp 8 --cp 16
expect_bad "--cp to the executor"          exec --model tiny --cp 2
if "$Z" --model llama-3-8b --gpus 64 --cluster dgx-h100 --seq 32k --mp 2 --cp 4 --global-batch 16 --stage 1 --flash-attention \
     --recompute none --top 1 --analytic --emit-megatron-args "$T/cp.args" >"$T/cp.out" 2>"$T/err" &&
   grep -Eq '^1 +1 Pos +2 +1 +8 +2 +1 +16 +CP4 ' "$T/cp.out" && grep -q -- '--context-parallel-size 4' "$T/cp.args"; then ok
else ko "--cp 4: plan row or Megatron-LM args: $(grep '^1 ' "$T/cp.out") $(cat "$T/err")"; fi
if "$Z" schedule --model llama-3-8b --gpus 16 --cluster dgx-h100 --seq 32k --mp 2 --cp 2 --stage 1 --micro-batch 1 --flash-attention \
     --recompute none 2>"$T/err" | grep -q 'cp_kv_ring.*allgather over cp'; then ok
else ko "zplan schedule --cp 2 has no K/V ring over the CP group: $(cat "$T/err")"; fi
expect_bad "--cp-comm not a form"          --model llama-3-8b --gpus 64 --cluster dgx-h100 --seq 32k --cp 4 --cp-comm a2a
# --cp-comm all-gather: the attention waits for the whole K and V (Llama 3's form), so no faster than the ring
cpstep() { "$Z" --model llama-3-8b --gpus 64 --cluster dgx-h100 --seq 32k --mp 2 --cp 4 --global-batch 16 --stage 1 \
  --recompute none --top 1 --format json --cp-comm "$1" "${@:2}" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["plans"][0]["step_time_s"])'; }
ring=$(cpstep ring); gather=$(cpstep all-gather --emit-megatron-args "$T/ag.args")
if python3 -c "import sys; sys.exit(0 if 0 < float('$ring') < float('$gather') else 1)" 2>/dev/null &&
   grep -q -- '--context-parallel-size 4 --cp-comm-type all_gather' "$T/ag.args"; then ok
else ko "--cp-comm: ring $ring s, all-gather $gather s, args: $(grep -o -- '--context-parallel-size.*' "$T/ag.args" | head -c 120)"; fi

# TP communication overlapped with its GEMMs (--tp-comm-overlap): opt-in; te and async faster than off at TP 8
# with SP, the Megatron-LM arguments say --tp-comm-overlap; bad forms and plans exit 2
expect_bad "--tp-comm-overlap not a form"     --model llama-3-8b --gpus 16 --cluster dgx-h100 --tp-comm-overlap ring
expect_bad "--tp-comm-overlap without --sp"   --model llama-3-8b --gpus 16 --cluster dgx-h100 --mp 8 --no-sp --tp-comm-overlap te
expect_bad "--tp-comm-overlap across nodes"   --model llama-3-70b --gpus 32 --cluster dgx-h100 --mp 16 --sp --tp-comm-overlap te
expect_bad "--tp-comm-overlap in deepspeed"   --model llama-3-8b --gpus 16 --cluster dgx-h100 --framework deepspeed --tp-comm-overlap te
tpstep() { "$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --seq 4k --mp 8 --pp 1 --sp --stage 1 --global-batch 8 \
  --recompute selective --top 1 --format json --tp-comm-overlap "$1" "${@:2}" 2>/dev/null |
  python3 -c 'import json,sys; p=json.load(sys.stdin)["plans"][0]; print(p["step_time_s"], p["time_breakdown_s"]["mp_comm"])'; }
read -r off_s off_mp <<<"$(tpstep off)"; read -r te_s te_mp <<<"$(tpstep te --emit-megatron-args "$T/tpo.args")"
read -r as_s as_mp <<<"$(tpstep async)"
if python3 -c "import sys; o,om,t,tm,a,am=map(float,sys.argv[1:]); sys.exit(0 if t<o and a<o and 0<tm<om and 0<am<om else 1)" \
     "$off_s" "$off_mp" "$te_s" "$te_mp" "$as_s" "$as_mp" 2>/dev/null &&
   grep -q -- '--sequence-parallel --tp-comm-overlap ' "$T/tpo.args"; then ok
else ko "--tp-comm-overlap: off $off_s s ($off_mp exposed), te $te_s s ($te_mp), async $as_s s ($as_mp), args: $(grep -o -- '--sequence-parallel.*' "$T/tpo.args" | head -c 100)"; fi
# auto: off and te both simulated, the faster taken; off (the default) writes no --tp-comm-overlap
if "$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --seq 4k --mp 8 --sp --stage 1 --global-batch 8 --recompute selective \
     --top 1 --tp-comm-overlap auto 2>/dev/null | grep -Eq '^1 .* SP tp-overlap:te ' &&
   "$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --seq 4k --mp 8 --sp --stage 1 --global-batch 8 --recompute selective \
     --top 1 --emit-megatron-args "$T/off.args" >/dev/null 2>&1 && ! grep -q -- '--tp-comm-overlap' "$T/off.args"; then ok
else ko "--tp-comm-overlap auto: no te plan first, or the default wrote it: $(grep -o -- '--sequence-parallel.*' "$T/off.args" | head -c 80)"; fi
if "$Z" schedule --model tiny-llama --gpus 4 --mp 4 --sp --stage 1 --micro-batch 1 --global-batch 1 --tp-comm-overlap te \
     2>"$T/err" | grep -q 'tp .*tp_reduce_scatter_chunk.*reduce_scatter over mp'; then ok
else ko "zplan schedule --tp-comm-overlap te has no reduce-scatter chunk on the tp stream: $(cat "$T/err")"; fi
# --overlap-param-gather: the stage-1 all-gather beside the next forward; written to the Megatron-LM arguments
expect_bad "--overlap-param-gather at stage 3" --model llama-3-8b --gpus 16 --cluster dgx-h100 --stage 3 --overlap-param-gather
expect_bad "--overlap-param-gather serial"     --model llama-3-8b --gpus 16 --cluster dgx-h100 --no-overlap-comm --overlap-param-gather
if "$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --seq 4k --mp 8 --pp 1 --sp --stage 1 --global-batch 8 \
     --recompute selective --top 1 --overlap-param-gather --emit-megatron-args "$T/opg.args" >/dev/null 2>"$T/err" &&
   grep -q -- '--overlap-grad-reduce --overlap-param-gather' "$T/opg.args"; then ok
else ko "--overlap-param-gather not in the Megatron-LM arguments: $(cat "$T/err") $(grep -o -- '--use-dist.*' "$T/opg.args")"; fi

# --recompute-modules (Megatron-core's selective recompute modules): each module frees what it recomputes and
# costs its recompute (DeepSeek-V2-Lite, 8 GPUs: fewer GB and a longer step with layernorm and mla_up_proj beside
# the attention core than with it alone; moe re-runs the all-to-alls); JSON names them; bad lists and modules the model
# has nothing for exit 2 naming the fix
rcstep() { "$Z" --model deepseek-v2-lite --gpus 8 --cluster dgx-h100 --seq 4k --mp 1 --pp 1 --ep 8 --stage 1 \
  --micro-batch 1 --global-batch 8 --top 1 --format json "$@" 2>/dev/null |
  python3 -c 'import json,sys; p=json.load(sys.stdin)["plans"][0]; print(p["step_time_s"], p["memory_gb"]["total"], p.get("recompute_modules", "-"))'; }
read -r core_s core_gb core_m <<<"$(rcstep --recompute selective)"
read -r ln_s ln_gb ln_m <<<"$(rcstep --recompute-modules core_attn,layernorm,mla_up_proj)"
read -r moe_s moe_gb moe_m <<<"$(rcstep --recompute-modules core_attn,moe)"
if python3 -c "import sys; c,cg,l,lg,m,mg=map(float,sys.argv[1:]); sys.exit(0 if l>c and lg<cg and m>l and mg<cg else 1)" \
     "$core_s" "$core_gb" "$ln_s" "$ln_gb" "$moe_s" "$moe_gb" 2>/dev/null && [ "$core_m" = "-" ] &&
   [ "$ln_m" = "core_attn,layernorm,mla_up_proj" ] && [ "$moe_m" = "core_attn,moe" ]; then ok
else ko "--recompute-modules: core_attn $core_s s $core_gb GB ($core_m), layernorm+mla_up_proj $ln_s s $ln_gb GB ($ln_m), moe $moe_s s $moe_gb GB ($moe_m)"; fi
expect_bad "--recompute-modules unknown"        --model llama-3-8b --gpus 8 --cluster dgx-h100 --recompute-modules core_attn,layernorms
expect_bad "--recompute-modules empty"          --model llama-3-8b --gpus 8 --cluster dgx-h100 --recompute-modules ,
expect_bad "--recompute-modules with full"      --model llama-3-8b --gpus 8 --cluster dgx-h100 --recompute-modules mlp --recompute full
expect_bad "--recompute-modules moe, dense"     --model llama-3-8b --gpus 8 --cluster dgx-h100 --recompute-modules moe
expect_bad "--recompute-modules mlp, all MoE"   --model mixtral-8x7b --gpus 8 --cluster dgx-h100 --recompute-modules mlp
expect_bad "--recompute-modules in deepspeed"   --model llama-3-8b --gpus 8 --cluster dgx-h100 --framework deepspeed --recompute-modules mlp
expect_bad "--recompute-modules auto, full"     --model llama-3-8b --gpus 8 --cluster dgx-h100 --recompute-modules auto --recompute full
expect_bad "--recompute-modules auto, deepspeed" --model llama-3-8b --gpus 8 --cluster dgx-h100 --framework deepspeed --recompute-modules auto
# --recompute-modules auto: the search finds DeepSeek-V3's own recipe (layernorm, moe_act, mla_up_proj: report
# §3.3.2) on its 2,048 H800s as bench/deepseek_v3.sh states it, at the step of the recipe stated
DSV3="--model deepseek-v3 --gpus 2048 --cluster hgx-h800 --global-batch 15360 --pp 16 --ep 64 --mp 1 --stage 1
  --precision fp8 --fp8-recipe blockwise --micro-batch 1 --pp-layout 4*15,1 --moe-dispatcher deepep-fp8
  --overlap-moe-expert-parallel-comm --activation-func-fp8-input-store --adam-moments bf16 --top 1 --format json"
dsv3() { "$Z" $DSV3 "$@" 2>/dev/null | python3 -c 'import json,sys; p=json.load(sys.stdin)["plans"][0]; print(p["step_time_s"], p.get("recompute_modules", "-"))'; }
read -r auto_s auto_m <<<"$(dsv3 --recompute-modules auto)"
read -r said_s said_m <<<"$(dsv3 --recompute-modules layernorm,mla_up_proj,moe_act)"
if [ -n "$auto_s" ] && [ "$auto_s" = "$said_s" ] && [ "$auto_m" = "$said_m" ] && [ "$auto_m" != "-" ]; then ok
  echo "  --recompute-modules auto, DeepSeek-V3 on 2,048 H800s: $auto_m, $auto_s s (the recipe stated: $said_s s)"
else ko "--recompute-modules auto: $auto_m $auto_s s; the recipe stated: $said_m $said_s s"; fi
# l3plan EXPR ARGS...: Llama 3 8B on 8 GPUs, ZeRO-1, sequence 4K, micro-batch 1, no recompute, one plan: EXPR
# (python, over its JSON plan p) printed
l3plan() {
  local expr="$1"; shift
  "$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --seq 4k --mp 1 --pp 1 --stage 1 --micro-batch 1 \
    --global-batch 8 --recompute none --top 1 --format json "$@" 2>/dev/null |
    python3 -c "import json,sys; p=json.load(sys.stdin)['plans'][0]; print($expr)"
}
# --activation-func-fp8-input-store: a SwiGLU's input in FP8, fewer GB at the same step, in JSON; refused for a
# GeLU model and outside framework any (and in a torchtitan TOML: test_launch.sh)
f8='p["step_time_s"], p["memory_gb"]["activations"], p.get("activation_func_fp8_input_store", False)'
read -r b16_s b16_gb b16_k <<<"$(l3plan "$f8")"
read -r e4_s e4_gb e4_k <<<"$(l3plan "$f8" --activation-func-fp8-input-store)"
if python3 -c "import sys; a,ag,b,bg=map(float,sys.argv[1:]); sys.exit(0 if a==b and abs(ag-bg-32*2*14336*4096/1e9)<1e-3 else 1)" \
     "$b16_s" "$b16_gb" "$e4_s" "$e4_gb" 2>/dev/null && [ "$b16_k" = False ] && [ "$e4_k" = True ]; then ok
else ko "--activation-func-fp8-input-store: $b16_s s $b16_gb GB ($b16_k), FP8 $e4_s s $e4_gb GB ($e4_k)"; fi
# --adam-moments bf16: Adam's m and v in 2 bytes, Llama 3 8B on 8 GPUs at ZeRO-1: 12 -> 8 bytes of state a
# parameter (the optimizer's GB x 2/3), its traffic 42 of 50 bytes a parameter (the optimizer phase's time x 0.84,
# its few small all-reduces besides); refused beside offload
am='p["memory_gb"]["optimizer"], p["time_breakdown_s"]["optimizer"], p.get("adam_moments", "-")'
read -r f32_gb f32_t f32_k <<<"$(l3plan "$am")"
read -r b16_gb b16_t b16_k <<<"$(l3plan "$am" --adam-moments bf16)"
if python3 -c "import sys; a,at,b,bt=map(float,sys.argv[1:]); sys.exit(0 if abs(b/a-8/12)<1e-6 and abs(bt/at-42/50)<2e-3 else 1)" \
     "$f32_gb" "$f32_t" "$b16_gb" "$b16_t" 2>/dev/null && [ "$f32_k" = "-" ] && [ "$b16_k" = bf16 ]; then ok
else ko "--adam-moments: fp32 $f32_gb GB $f32_t s ($f32_k), bf16 $b16_gb GB $b16_t s ($b16_k)"; fi
expect_bad "--adam-moments not a type"            --model llama-3-8b --gpus 8 --cluster dgx-h100 --adam-moments bf32
expect_bad "--adam-moments with offload"          --model llama-3-8b --gpus 8 --cluster dgx-h100 --stage 1 --adam-moments bf16 --offload optimizer
expect_bad "--adam-moments in deepspeed"          --model llama-3-8b --gpus 8 --cluster dgx-h100 --framework deepspeed --adam-moments bf16
expect_bad "--activation-func-fp8-input-store, GeLU" --model 1.5B --gpus 8 --cluster dgx-h100 --activation-func-fp8-input-store
expect_bad "--activation-func-fp8-input-store, DS"   --model llama-3-8b --gpus 8 --cluster dgx-h100 --framework deepspeed --activation-func-fp8-input-store
# --swiglu-fusion off: the SwiGLU as PyTorch eager runs it keeps the SiLU's output too, 2 bytes a token per unit
# of f more: 32 blocks x 4,096 tokens x 14,336 x 2 = 3.758 GB at the same step, said in JSON (swiglu_fusion
# false); the same under --framework deepspeed (Megatron-DeepSpeed's eager swiglu) and --compile off
sw() {
  "$Z" --model llama-3-8b --gpus 8 --cluster dgx-h100 --seq 4k --mp 1 --pp 1 --stage 1 --micro-batch 1 \
    --global-batch 8 --recompute none --top 1 --format json "$@" 2>/dev/null | python3 -c \
    "import json,sys; d=json.load(sys.stdin); p=d['plans'][0]; print(p['step_time_s'], p['memory_gb']['activations'], d.get('swiglu_fusion', True))"
}
read -r on_s on_gb on_k <<<"$(sw)"
read -r off_s off_gb off_k <<<"$(sw --swiglu-fusion off)"
read -r ds_s ds_gb ds_k <<<"$(sw --framework deepspeed)"
read -r ea_s ea_gb ea_k <<<"$(sw --compile off)"
if python3 -c "import sys; a,ag,b,bg,dg,eg=map(float,sys.argv[1:]); sys.exit(0 if a==b and abs(bg-ag-32*4096*14336*2/1e9)<1e-3 and dg==bg and eg==bg else 1)" \
     "$on_s" "$on_gb" "$off_s" "$off_gb" "$ds_gb" "$ea_gb" 2>/dev/null && [ "$on_k" = True ] && [ "$off_k" = False ] &&
   [ "$ds_k" = False ] && [ "$ea_k" = False ]; then ok
  echo "  --swiglu-fusion: fused $on_gb GB of activations, off $off_gb GB (deepspeed $ds_gb, --compile off $ea_gb)"
else ko "--swiglu-fusion: on $on_s s $on_gb GB ($on_k), off $off_s s $off_gb GB ($off_k), deepspeed $ds_gb ($ds_k), eager $ea_gb ($ea_k)"; fi
expect_bad "--swiglu-fusion not on/off"           --model llama-3-8b --gpus 8 --cluster dgx-h100 --swiglu-fusion maybe
expect_bad "--swiglu-fusion off, GeLU"            --model 1.5B --gpus 8 --cluster dgx-h100 --swiglu-fusion off
expect_bad "--swiglu-fusion on in deepspeed"      --model llama-3-8b --gpus 8 --cluster dgx-h100 --framework deepspeed --swiglu-fusion on
expect_bad "--swiglu-fusion on, --compile off"    --model llama-3-8b --gpus 8 --cluster dgx-h100 --compile off --swiglu-fusion on
expect_bad "fp8 input store, --swiglu-fusion off" --model llama-3-8b --gpus 8 --cluster dgx-h100 --swiglu-fusion off --activation-func-fp8-input-store

echo "bad inputs tried: $bad_tried"
finish
