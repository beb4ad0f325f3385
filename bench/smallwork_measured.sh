#!/usr/bin/env bash
# bench/smallwork_measured.sh [ZPLAN] [STEPS.jsonl] [CLUSTER] — issue #29's small-work regime held to steps
# measured on a GPU (bench/gpu_step.py: one rank of a Megatron-shaped TP 1-8 run of GPT-2 350M / 760M / 1.3B at
# sequence 1,024, micro-batch 1-8, eager bf16, FlashAttention or unfused attention; default the H200's of
# 2026-11-28, gpus/measured/h200-sxm5-141gb-2026-11-28-steps.jsonl) against zplan's step for the same plan on
# CLUSTER (default dgx-h200): --gpus TP --mp TP, ZeRO 0, no recompute, no accumulation. Nothing in zplan was
# fitted to these steps: this is a held-out check.
#
# What a row compares: the measured rank ran every kernel, host call and NCCL call of its step, with a
# one-rank communicator (no link to cross, no other rank to wait for); at TP 1 that is the whole step, at TP > 1
# a lower bound of it (the wire and the ranks' skew would add). Columns: the measured median and fastest step,
# the host's issue time of the step and the GPU's busy time (kernels' sum, torch.profiler), zplan's step and
# its error against the median and against the fastest. The summary gives the median error by TP over the
# configurations of each attention kind.
set -euo pipefail
Z="${1:-build/src/zplan}"
F="${2:-gpus/measured/h200-sxm5-141gb-2026-11-28-steps.jsonl}"
C="${3:-dgx-h200}"
[ -x "$Z" ] || { echo "smallwork_measured: $Z is not an executable zplan (build it: scripts/build)" >&2; exit 2; }
[ -r "$F" ] || { echo "smallwork_measured: cannot read $F (bench/gpu_step.py's output)" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$Z" "$F" "$C" "$T" <<'EOF'
import json, statistics, subprocess, sys
zplan, path, cluster, tmp = sys.argv[1:5]
shapes = {"350M": (24, 1024, 16), "760M": (24, 1536, 16), "1.3B": (24, 2048, 32)}  # bench/gpu_step.py's MODELS
rows = [r for r in map(json.loads, open(path)) if "step_ms" in r]
about = next((r["about"] for r in map(json.loads, open(path)) if "about" in r), {})
print(f"# measured: {about.get('device', '?')} {about.get('measured_at', '')} (torch {about.get('torch', '?')}); "
      f"predicted: {zplan} on {cluster}")
print("%-5s %-7s %2s %2s %8s %8s %8s %8s %8s %7s %7s" % ("model", "attn", "tp", "mb", "meas_ms", "min_ms",
      "issue_ms", "busy_ms", "zplan_ms", "err", "err_min"))
errs = {}
for r in rows:
    L, h, a = shapes[r["model"]]
    cfg = f"{tmp}/{r['model']}.json"
    with open(cfg, "w") as f:
        json.dump({"model_type": "gpt2", "n_layer": L, "n_embd": h, "n_head": a, "n_positions": r["seq"],
                   "vocab_size": 50257}, f)
    cmd = [zplan, "--model", cfg, "--cluster", cluster, "--gpus", str(r["tp"]), "--mp", str(r["tp"]),
           "--stage", "0", "--micro-batch", str(r["mb"]), "--grad-accum", "1", "--no-checkpoint", "--exact",
           "--top", "1", "--format", "json", "--flash-attention" if r["attn"] == "flash" else "--no-flash-attention"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{r['model']} tp{r['tp']} mb{r['mb']}: zplan exit {out.returncode}: {out.stderr.strip()}")
        continue
    pred = json.loads(out.stdout)["plans"][0]["step_time_s"] * 1e3
    e, emin = pred / r["step_ms"] - 1, pred / r["step_ms_min"] - 1
    errs.setdefault((r["attn"], r["tp"]), []).append((e, emin))
    print("%-5s %-7s %2d %2d %8.1f %8.1f %8.1f %8.1f %8.1f %+6.0f%% %+6.0f%%" % (r["model"], r["attn"], r["tp"],
          r["mb"], r["step_ms"], r["step_ms_min"], r["issue_ms"], r.get("gpu_busy_ms", float("nan")), pred,
          100 * e, 100 * emin))
print("\n%-7s %2s %4s %14s %14s" % ("attn", "tp", "runs", "median err", "median err_min"))
for (at, tp), v in sorted(errs.items()):
    print("%-7s %2d %4d %+13.0f%% %+13.0f%%" % (at, tp, len(v), 100 * statistics.median(x for x, _ in v),
          100 * statistics.median(y for _, y in v)))
EOF
