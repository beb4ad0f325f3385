#!/usr/bin/env bash
# bench/compare_outputs.sh BASE_ZPLAN NEW_ZPLAN: a redesign keeps every output byte-identical. Runs a corpus of
# commands (what-if text and JSON on every preset and family, pipelines, MoE, offload, frameworks, emission,
# schedules, reports, compare, sweep) with both binaries and compares stdout, stderr and the exit code, wall
# times stripped. Prints a DIFF (and the first lines of the diff) per command that differs; exit 1 if any
# does. Build the previous commit's binary in a worktree first, e.g.
#   git worktree add /tmp/base HEAD~1 && (cd /tmp/base && scripts/build) && bench/compare_outputs.sh \
#     /tmp/base/build/src/zplan build/src/zplan
# Takes ~3 minutes on 2 idle cores. The new binary is copied first, so a rebuild meanwhile changes nothing.
set -u
[ $# -eq 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: bench/compare_outputs.sh BASE_ZPLAN NEW_ZPLAN" >&2; exit 2; }
B=$(readlink -f "$1"); T=$(mktemp -d); N=$T/zplan.new; cp "$(readlink -f "$2")" "$N"; fail=0; i=0
trap 'rm -rf "$T"' EXIT
cd "$(dirname "$0")/.."
while IFS= read -r args; do
  [ -z "$args" ] && continue; i=$((i+1))
  ( cd "$T"; eval "$B $args" > "$T/b.$i" 2>&1; echo "rc=$?" >> "$T/b.$i"; eval "$N $args" > "$T/n.$i" 2>&1; echo "rc=$?" >> "$T/n.$i" )
  # strip wall-clock fields
  sed -i -E 's/[0-9.]+ s wall|"(sim_)?wall_s": [0-9.e+-]+|in [0-9.]+ s\b//g' $T/b.$i $T/n.$i
  if ! cmp -s $T/b.$i $T/n.$i; then echo "DIFF: $args"; diff $T/b.$i $T/n.$i | head -8; fail=1; fi
done <<'CMDS'
--model 100B --gpus 400
--model 100B --gpus 400 --format json
--model 100B --gpus 400 --stage 2 --mp 16 --global-batch 800 --pa --top 1
--model 100B --gpus 400 --stage 3 --mp 1 --micro-batch 200
--model gpt2-1.5B --gpus 64 --stage 2 --mp 1 --micro-batch 16 --format json
--model llama-2-70b --gpus 64 --cluster dgx-a100 --format json
--model llama-3-8b --gpus 16 --cluster dgx-h100 --top 20
--model mixtral-8x7b --gpus 64 --cluster dgx-h100 --format json
--model deepseek-v3 --gpus 256 --cluster dgx-h100 --global-batch 1024 --top 10
--model 13B --gpus 64 --cluster dgx-a100 --pp 4 --global-batch 512 --format json
--model 13B --gpus 64 --cluster dgx-a100 --pp 4 --schedule interleaved --global-batch 512
--model 175B --gpus 1K --cluster dgx-a100 --global-batch 1536 --top 5
--model 10B --gpus 16 --offload optimizer --stage 2 --format json
--model 40B --gpus 64 --stage 3 --offload params --format json
--model 13B --gpus 64 --cluster dgx-a100 --framework megatron-2021 --top 5
--model 13B --gpus 64 --cluster dgx-a100 --framework deepspeed --top 5
--model 13B --gpus 64 --cluster dgx-a100 --analytic --top 5
--model 13B --gpus 64 --cluster dgx-a100 --emit-megatron-args /dev/stdout
--model llama-2-70b --gpus 128 --cluster dgx-h100 --pp 4 --emit-megatron-args /dev/stdout
--model 13B --gpus 64 --cluster dgx-a100 --stage 2 --emit-ds-config /dev/stdout
--model 1.5B --gpus 8 --exact --stage 1 --micro-batch 4
--model 100B --gpus 400 --mp 3
--model tiny --gpus 4 --stage 3 --mp 2
schedule --model tiny --gpus 4 --stage 3 --mp 2
schedule --model gpt2-1.5B --gpus 16 --stage 2 --format json
schedule --model tiny-llama --gpus 8 --pp 2 --global-batch 8 --format json
schedule --model tiny-moe --gpus 8 --format json
compare --model 13B --gpus 64 --cluster dgx-a100
report table1
report table2
report table1 --format json
report scaling --models 1.5B,13B --gpus 16,64
report models
report configs
report memory --model 100B --gpus 400
sweep --models 1.5B,13B --gpus 16,64
clusters
models
CMDS
echo "$i commands compared"; exit $fail
