#!/usr/bin/env bash
# What the memory of one plan costs (the replay of its schedule's alloc/free ops), microseconds per plan,
# for a few model sizes. Usage: bench/replay.sh [build dir] (default build)
set -euo pipefail
B="${1:-build}"
[ -x "$B/bench/bench_replay" ] || { echo "bench/replay.sh: $B/bench/bench_replay not found: run scripts/build" >&2; exit 2; }
for m in "gpt2-1.5B 16" "100B 400" "gpt3-175B 1024" "1T 4096"; do
  # shellcheck disable=SC2086
  "$B/bench/bench_replay" $m
done
