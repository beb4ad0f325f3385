#!/usr/bin/env bash
# Cost of the simulator against the cluster size (issue 16): one explicit plan and the complete what-if
# search of GPT-3 175B on DGX H100 at 1,024, 16,384 and 102,400 GPUs, their ratios to 1,024 beside the
# targets, and the reduced simulation's step time against the full one where both run.
# Usage: bench/scale.sh [--full-16k] [path/to/zplan]
#   --full-16k  also runs the full simulation at 16,384 GPUs (2048 nodes: about 2 minutes)
# Timings are wall seconds of the whole zplan process (start included), the best of 3 runs; run it on an
# idle machine (`uptime`) and run nothing else meanwhile.
set -euo pipefail
full16k=0
if [ "${1:-}" = "--full-16k" ]; then full16k=1; shift; fi
Z="${1:-build/src/zplan}"
[ -x "$Z" ] || { echo "bench/scale.sh: $Z not found: run scripts/build first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench/scale.sh: needs python3 (JSON)" >&2; exit 2; }
M=(--model gpt3-175B --cluster dgx-h100)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# shellcheck source=bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
plan() { # plan GPUS STAGE: the explicit plan (MP 8, micro-batch 1, two sequences per DP rank)
  echo --gpus "$1" --stage "$2" --mp 8 --micro-batch 1 --global-batch $(($1 / 4)) --exact
}
field() { # field FILE KEY: the first plan's KEY from a what-if JSON
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["plans"][0]; print(p[sys.argv[2]] if p[sys.argv[2]] is not None else "-")' "$1" "$2"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }

echo "zplan at scale: GPT-3 175B on dgx-h100 ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); best of 3; wall s)"
echo "process start alone (zplan --version): $(best_of 3 "$Z" --version) s"
declare -A P S
for g in 1024 16384 102400; do
  # shellcheck disable=SC2046
  P[$g]=$(best_of 3 "$Z" "${M[@]}" $(plan "$g" 3) --jobs 1)
  S[$g]=$(best_of 3 "$Z" "${M[@]}" --gpus "$g")
done
printf '%-34s %10s %11s %12s %8s %9s  %s\n' "" "1,024" "16,384" "102,400" "16K/1K" "100K/1K" "target"
printf '%-34s %10s %11s %12s %8s %9s  %s\n' "one plan (stage 3, MP 8, b 1)" "${P[1024]}" "${P[16384]}" "${P[102400]}" \
  "$(ratio "${P[16384]}" "${P[1024]}")" "$(ratio "${P[102400]}" "${P[1024]}")" "16K/1K <= 2; 100K < 30 s"
printf '%-34s %10s %11s %12s %8s %9s  %s\n' "complete search" "${S[1024]}" "${S[16384]}" "${S[102400]}" \
  "$(ratio "${S[16384]}" "${S[1024]}")" "$(ratio "${S[102400]}" "${S[1024]}")" "16K/1K <= 4; 16K < 10 s; 100K < 30 s"
# shellcheck disable=SC2046
"$Z" "${M[@]}" $(plan 102400 3) --format json >"$T/big.json"
echo "102,400 GPUs: method $(field "$T/big.json" method), simulation $(field "$T/big.json" sim), step $(field "$T/big.json" step_time_s) s"

echo
echo "reduced against full simulation, step time (s):"
printf '  %-40s %14s %14s %10s %12s %12s\n' "plan" "reduced" "full" "diff" "reduced wall" "full wall"
compare() { # compare LABEL zplan-args...: reduced and full step and wall time
  local label=$1; shift
  local wr wf r f
  wr=$(best_of 1 "$Z" "$@" --sim reduced --format json -o "$T/r.json")
  wf=$(best_of 1 "$Z" "$@" --sim full --format json -o "$T/f.json")
  r=$(field "$T/r.json" step_time_s); f=$(field "$T/f.json" step_time_s)
  printf '  %-40s %14.9g %14.9g %9.4f%% %12s %12s\n' "$label" "$r" "$f" \
    "$(awk -v a="$r" -v b="$f" 'BEGIN{d=(a-b)/b*100; print d<0?-d:d}')" "$wr" "$wf"
}
cases=("1024 2" "1024 3" "2048 3")
[ "$full16k" = 1 ] && cases+=("16384 3")
for c in "${cases[@]}"; do
  read -r g st <<<"$c"
  # shellcheck disable=SC2046
  compare "$g GPUs, stage $st, MP 8" "${M[@]}" $(plan "$g" "$st")
done
# a rail-optimized fat tree's mixed case: MP 96 (12-node blocks) on 32-node leaves at 4:1, where the
# reduced simulation runs one period of 96 nodes instead of 384
compare "3072 GPUs, railopt 4:1, stage 1, MP 96" --model gpt3-175B --cluster dgx-h100-railopt --gpus 3072 \
  --oversubscription 4 --stage 1 --mp 96 --micro-batch 1 --global-batch 64
