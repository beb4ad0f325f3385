#!/usr/bin/env bash
# Wall time of the simulator on this machine: one step, the whole search, and how both grow with
# GPUs and layers. Usage: bench/sim_speed.sh [path/to/zplan]
set -euo pipefail
Z="${1:-build/src/zplan}"
[ -x "$Z" ] || { echo "bench/sim_speed.sh: $Z not found: run scripts/build first" >&2; exit 2; }
# shellcheck source=bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
echo "zplan simulator speed ($(nproc) cores; best of 5 runs; the process start is included)"
printf '%-64s %9s %9s\n' "case" "wall s" "target"
t=$(best_of 5 "$Z" --model 100B --gpus 400 --stage 2 --mp 16 --micro-batch 32 --pa --exact --jobs 1)
printf '%-64s %9s %9s\n' "one simulated step: 100B, 400 GPUs, stage 2, MP 16" "$t" "<= 0.100"
t=$(best_of 3 "$Z" --model 100B --gpus 400)
printf '%-64s %9s %9s\n' "complete search: zplan --model 100B --gpus 400" "$t" "<= 2"
echo
echo "one step (100B, stage 2, MP 16, micro-batch 8, Pa) against GPUs:"
for g in 64 128 256 512 1024; do
  printf '  %5d GPUs %9s s\n' "$g" "$(best_of 3 "$Z" --model 100B --gpus "$g" --stage 2 --mp 16 --micro-batch 8 --pa --exact --jobs 1)"
done
echo "one step (stage 3, 400 GPUs, MP 16, micro-batch 8, Pa) against layers (hidden 8192):"
for l in 25 50 100 200 400; do
  f=$(mktemp --suffix=.json)
  echo "{\"n_layer\": $l, \"n_embd\": 8192, \"n_head\": 64}" >"$f"
  printf '  %5d layers %9s s\n' "$l" "$(best_of 3 "$Z" --model "$f" --gpus 400 --stage 3 --mp 16 --micro-batch 8 --pa --exact --jobs 1)"
  rm -f "$f"
done
echo "complete search against GPUs (100B):"
for g in 64 400 1024; do
  printf '  %5d GPUs %9s s\n' "$g" "$(best_of 1 "$Z" --model 100B --gpus "$g")"
done
