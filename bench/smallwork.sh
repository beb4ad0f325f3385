#!/usr/bin/env bash
# bench/smallwork.sh [ZPLAN] [BASE_ZPLAN] — issue #29's small-work regime: GPT-2-like 350M, 760M and 1.3B
# models at sequence 1,024 on one DGX A100 node (8 GPUs), TP 1-8 (DP the rest), micro-batch 1-8, ZeRO 1,
# no checkpointing. Prints zplan's step time and its compute / MP-communication / optimizer parts, and of
# them the GPU's wait for the host's dispatch (host, sim/zp_actors.c; '-' from a binary without it), and a
# second binary's step, with the ratio, when given. No measured figures here: this shows how the
# prediction moves with the mechanisms of the regime (host dispatch, NCCL's small-message floors).
set -euo pipefail
Z="${1:-build/src/zplan}"
B="${2:-}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# name layers hidden heads
models="350M:24:1024:16 760M:24:1536:16 1.3B:24:2048:32"
printf "%-6s %3s %3s %10s %9s %9s %9s %9s %s\n" model tp mb "step_ms" compute mp_comm optim host "${B:+base_ms ratio}"
for m in $models; do
    IFS=: read -r name l h a <<<"$m"
    cfg="$T/$name.json"
    printf '{"model_type":"gpt2","n_layer":%s,"n_embd":%s,"n_head":%s,"n_positions":1024,"vocab_size":50257}' \
        "$l" "$h" "$a" >"$cfg"
    for tp in 1 2 4 8; do
        for mb in 1 2 4 8; do
            args=(--model "$cfg" --cluster dgx-a100 --gpus 8 --stage 1 --mp "$tp" --micro-batch "$mb"
                --grad-accum 1 --no-checkpoint --exact --gpu-mem 1T --top 1 --format json)
            line=$("$Z" "${args[@]}" | python3 -c '
import json, sys
p = json.load(sys.stdin)["plans"][0]; b = p["time_breakdown_s"]
h = "%9.2f" % (1e3 * b["host_wait"]) if "host_wait" in b else "%9s" % "-"
print("%10.2f %9.2f %9.2f %9.2f %s" % (1e3 * p["step_time_s"], 1e3 * b["compute"], 1e3 * b["mp_comm"], 1e3 * b["optimizer"], h))')
            extra=""
            if [ -n "$B" ]; then
                base=$("$B" "${args[@]}" | python3 -c 'import json,sys; print(1e3 * json.load(sys.stdin)["plans"][0]["step_time_s"])')
                step=${line%% *}
                extra=$(python3 -c "print('%9.2f %5.2fx' % ($base, float('$(echo $line | cut -d" " -f1)') / $base))")
            fi
            printf "%-6s %3s %3s %s %s\n" "$name" "$tp" "$mb" "$line" "$extra"
        done
    done
done
