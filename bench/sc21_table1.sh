#!/usr/bin/env bash
# bench/sc21_table1.sh [ZPLAN] [-- EXTRA...] — Megatron-LM's SC'21 Table 1 (Narayanan et al., "Efficient
# Large-Scale Language Model Training on GPU Clusters Using Megatron-LM": GPT models of 39.1B to 1008B on DGX
# A100 nodes, A100-80GB, sequence 2048, vocabulary 51,200, TP 8, measured TFLOP/s per GPU with recompute
# counted) against zplan: `--stage 0 --mp 8 --pp P --global-batch B` given, the rest searched, plus EXTRA
# (e.g. `--recompute full --no-sp`, or `--framework megatron-2021 --recompute full`: the 2021 stack, which had neither selective recompute nor sequence
# parallelism). Prints each row's plan, TFLOP/s per GPU (zplan's: executed FLOPs, recompute included, the
# paper's convention), the error (zplan / measured - 1: positive = zplan too fast) and whether it fits.
# Nothing here is fitted: the rows judge the model (README, "Pipelines").
set -euo pipefail
Z="${1:-build/src/zplan}"
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
[ -x "$Z" ] || { echo "bench/sc21_table1.sh: $Z not found: run scripts/build first" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$Z" "$T" "$@" <<'PY'
import csv, json, os, subprocess, sys
z, tmp, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
# params, heads, hidden, layers, PP, GPUs, global batch, measured TFLOP/s per GPU (Table 1's rows with PP)
rows = [("39.1B", 64, 8192, 48, 2, 512, 1536, 138), ("76.1B", 80, 10240, 60, 4, 1024, 1792, 140),
        ("145.6B", 96, 12288, 80, 8, 1536, 2304, 148), ("310.1B", 128, 16384, 96, 16, 1920, 2160, 155),
        ("529.6B", 128, 20480, 105, 35, 2520, 2520, 163), ("1008B", 160, 25600, 128, 64, 3072, 3072, 163)]
errs = []
print("%-7s %3s %5s %5s  %-36s %5s %5s %8s %8s %8s %7s %5s" % ("model", "PP", "GPUs", "batch", "plan (options)", "micro",
      "accum", "step s", "zplan TF", "measured", "error", "fits"))
for name, heads, hidden, layers, pp, gpus, batch, meas in rows:
    cfg = os.path.join(tmp, name + ".json")
    json.dump({"model_type": "gpt2", "n_layer": layers, "n_embd": hidden, "n_head": heads, "n_positions": 2048,
               "vocab_size": 51200}, open(cfg, "w"))
    argv = [z, "--model", cfg, "--cluster", "dgx-a100", "--gpus", str(gpus), "--stage", "0", "--mp", "8", "--pp",
            str(pp), "--global-batch", str(batch)] + extra + ["--top", "1", "--format", "csv"]
    p = subprocess.run(argv, capture_output=True, text=True)
    out = list(csv.DictReader(p.stdout.splitlines())) if p.returncode in (0, 3) else []
    if not out:
        print("FAIL %s: %s" % (name, p.stderr.strip()[:300]))
        continue
    o = out[0]
    tf = float(o["tflops_per_gpu"])
    err = tf / meas - 1
    errs.append(err)
    print("%-7s %3d %5d %5d  %-36s %5s %5s %8.2f %8.1f %8d %+6.1f%% %5s" % (name, pp, gpus, batch, o["options"],
          o["micro_batch"], o["grad_accum"], float(o["step_time_s"]), tf, meas, 100 * err, o["fits"]))
if errs:
    print("within 15%%: %d of %d; errors %+.1f%% .. %+.1f%%" % (sum(abs(e) <= 0.15 for e in errs), len(errs),
          100 * min(errs), 100 * max(errs)))
PY
