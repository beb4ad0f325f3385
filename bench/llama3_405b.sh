#!/usr/bin/env bash
# bench/llama3_405b.sh [ZPLAN] — the Llama 3 paper's three 405B rows (Dubey et al. 2024, Table 4: H100s, TP 8,
# PP 16, 16M tokens a batch) stated as published and simulated: 8,192 GPUs, CP 1, DP 64, sequence 8,192,
# global batch 2,048 -> 430 BF16 TFLOP/s per GPU; 16,384 GPUs, DP 128 -> 400; 16,384 GPUs, CP 16 (all-gather
# K/V, as Llama 3 ran it), DP 8, sequence 131,072, global batch 128 -> 380. Every option pinned (--exact):
# ZeRO-1 beside the pipeline (the distributed optimizer; Llama 3's FSDP beside PP is issue #28 item 4),
# sequence parallelism, FlashAttention, bf16 with fp32 gradients (§3.3.4: "we use FP32 gradient accumulation
# during backward computation over multiple micro-batches and also reduce-scatter gradients in FP32 across data
# parallel workers": --grad-accum-dtype fp32), micro-batch 1, the interleaved schedule with 8 chunks a rank and
# Llama 3's layout (one layer fewer on the first and the last stage: the first and the last model chunk hold
# only the embedding and only the head, §3.3.2), its asynchronous point-to-point communication (§3.3.2: "we
# adopt asynchronous point-to-point communication in PP": every send beside the next pass, --overlap-p2p-comm
# all), each with no recompute (what §3.3.2 says 8K sequences ran
# with) and with full recompute. No recompute does not fit zplan's memory model, so it is simulated with
# --gpu-mem 200G to price the step: stage 1 holds Megatron-core's warm-up of (16 - 1 - 1)·2 + 7·16 = 140 virtual
# micro-batches and the steady state's first forward, 141 one-block chunks (Korthikanti et al. 2022 §4.2.3:
# L·(1 + (P - 1)/(P·v)) = 140.8 blocks), of 532.7 MB each (31.75·s·h/t: Megatron-core's fused SwiGLU keeps
# gate and up, fc2 the product; PyTorch eager's SiLU output too would make it 38.25·s·h/t, 641.7 MB).
# Prints zplan's model TFLOP/s per GPU (PaLM's 6N + 12LHQT, attention not halved for causal masking), the
# same with attention halved (6N + 6LHQT), the error against the paper's, the memory and the breakdown.
# Nothing here is fitted: the rows judge the model.
set -euo pipefail
Z="${1:-build/src/zplan}"
[ -x "$Z" ] || { echo "bench/llama3_405b.sh: $Z not found: run scripts/build first" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$Z" "$T" <<'PY'
import json, subprocess, sys
z, tmp = sys.argv[1], sys.argv[2]
base = ["--model", "llama-3-405b", "--cluster", "dgx-h100", "--mp", "8", "--pp", "16", "--stage", "1",
        "--micro-batch", "1", "--sp", "--flash-attention", "--precision", "bf16", "--grad-accum-dtype", "fp32",
        "--exact", "--schedule", "interleaved", "--virtual-stages", "8", "--pp-layout", "0,1*126,0",
        "--overlap-p2p-comm", "all", "--gpu-mem", "200G", "--json"]
rows = [("8K, 8192 GPUs", ["--gpus", "8192", "--cp", "1", "--seq", "8192", "--global-batch", "2048"], 430),
        ("8K, 16384 GPUs", ["--gpus", "16384", "--cp", "1", "--seq", "8192", "--global-batch", "2048"], 400),
        ("128K, CP 16", ["--gpus", "16384", "--cp", "16", "--cp-comm", "all-gather", "--seq", "131072",
                         "--global-batch", "128"], 380)]
L, H, Q = 126, 128, 128
print("%-15s %-6s %7s %8s %8s %8s %8s %6s  %s" % ("row", "recomp", "step s", "zplan TF", "halved", "paper",
      "error", "GB", "compute / TP / PP (bubble, P2P) / DP exposed, s"))
for name, args, paper in rows:
    seq = int(args[args.index("--seq") + 1])
    for rc in ("none", "full"):
        out = subprocess.run([z] + base + args + ["--recompute", rc], capture_output=True, text=True)
        if out.returncode != 0:
            print("%-15s %-6s failed: %s" % (name, rc, out.stderr.strip().splitlines()[-1])); continue
        p = json.loads(out.stdout)["plans"][0]
        tf, tok = p["model_tflops_per_gpu"], p["tokens_per_s_per_gpu"]
        halved = tf - tok * 6 * L * H * Q * seq / 1e12
        b = p["time_breakdown_s"]
        print("%-15s %-6s %7.2f %8.1f %8.1f %8d %+7.1f%% %6.1f  %.2f / %.2f / %.2f / %.2f" % (name, rc,
              p["step_time_s"], tf, halved, paper, 100 * (tf / paper - 1), p["memory_gb"]["total"], b["compute"],
              b["mp_comm"], b["pp_comm"], b["dp_comm"]))
PY
