#!/usr/bin/env bash
# bench/deepseek_v3.sh [ZPLAN] — DeepSeek-V3 stated as its report (DeepSeek-AI 2024, arXiv 2412.19437) describes
# its pre-training: 2,048 H800s (8 a node, 400 Gb/s InfiniBand a GPU: --cluster hgx-h800), PP 16, EP 64 over 8
# nodes, ZeRO-1, FP8 with 1x128 / 128x128 block scales (--fp8-recipe blockwise), 15,360 sequences of 4,096
# (the batch it reaches, section 4.2), simulated with each of the mechanisms its section 3.2 describes added
# one at a time: Megatron-core's all-to-all (a copy per token and expert, blocking), DeepEP's node-deduplicated
# dispatch with NVLink forwarding (--moe-dispatcher deepep), its FP8 dispatch (deepep-fp8), and the all-to-alls
# beside the other micro-batch's compute (--overlap-moe-expert-parallel-comm, standing in for DualPipe).
# Micro-batch 1 with the recompute the report states (section 3.3.2 and 3.3.3): every RMSNorm and MLA's
# up-projections recomputed in backward, and the SwiGLU's output, its input cached in FP8: Megatron-core's
# --recompute-modules layernorm,mla_up_proj,moe_act and --activation-func-fp8-input-store (a plain e4m3 cast;
# DeepSeek's cache has a scale per 128 elements besides, 3% more); AdamW's moments in BF16 (section 3.3.3:
# --adam-moments bf16, Megatron-core's precision-aware optimizer). The last row is the overlapped one's with
# full recompute instead of the modules, the recompute this bench ran before zplan modelled them. The report's
# "180K H800 GPU hours per trillion tokens" is 1,543 tokens/s per GPU: a check, not a fit (no figure in zplan
# was set from it).
# The stages balanced by their work, as DualPipe needs them (--pp-layout 4*15,1): the last stage holds the LM
# head and the multi-token prediction module (a block, its projection and the head again), about three blocks'
# FLOPs a token (head 2hV = 1.85 GFLOP forward and backward, a block about 1.5 GFLOP forward, three passes and
# a little recompute, four under full recompute), so it takes one block and the others four; Megatron-core's
# default split (3 on the edges) leaves the last stage about 1.75 times the others' work.
set -euo pipefail
Z="${1:-build/src/zplan}"
[ -x "$Z" ] || { echo "bench/deepseek_v3.sh: $Z not found: run scripts/build first" >&2; exit 2; }
python3 - "$Z" <<'PY'
import json, subprocess, sys
z = sys.argv[1]
base = ["--model", "deepseek-v3", "--gpus", "2048", "--cluster", "hgx-h800", "--global-batch", "15360",
        "--pp", "16", "--ep", "64", "--mp", "1", "--stage", "1", "--precision", "fp8", "--fp8-recipe", "blockwise",
        "--micro-batch", "1", "--pp-layout", "4*15,1", "--exact", "--json"]
stated = ["--recompute-modules", "layernorm,mla_up_proj,moe_act", "--activation-func-fp8-input-store",
          "--adam-moments", "bf16"]
rows = [("alltoall", ["--moe-dispatcher", "alltoall"]), ("deepep", ["--moe-dispatcher", "deepep"]),
        ("deepep-fp8", ["--moe-dispatcher", "deepep-fp8"]),
        ("deepep-fp8 + overlap", ["--moe-dispatcher", "deepep-fp8", "--overlap-moe-expert-parallel-comm"])]
rows = [(n, e + stated) for n, e in rows] + [
    ("same, full recompute", ["--moe-dispatcher", "deepep-fp8", "--overlap-moe-expert-parallel-comm",
                              "--recompute", "full"] + stated[2:])]
published = 1e12 / (180e3 * 3600)
print("%-22s %8s %12s %8s %7s %7s  %s" % ("dispatch", "step s", "tok/s/GPU", "error", "MFU", "GPU GB",
      "stage 0 (3 dense blocks, 1 MoE): compute / waiting on the MoE stages, s"))
for name, extra in rows:
    out = subprocess.run([z] + base + extra, capture_output=True, text=True)
    if out.returncode != 0:
        print("%-22s failed: %s" % (name, out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode))
        continue
    p = json.loads(out.stdout)["plans"][0]
    tb = p["time_breakdown_s"]
    tok = p["tokens_per_s_per_gpu"]
    print("%-22s %8.2f %12.0f %+7.1f%% %6.1f%% %7.1f  %.2f / %.2f" % (name, p["step_time_s"], tok,
          100 * (tok / published - 1), 100 * p["mfu"], p["memory_gb"]["total"], tb["compute"] + tb["mp_comm"],
          tb["pp_comm"]))
print("published: %.0f tokens/s per GPU (180K H800 GPU hours per trillion tokens)" % published)
PY
