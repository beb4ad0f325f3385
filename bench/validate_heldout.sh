#!/usr/bin/env bash
# bench/validate_heldout.sh [BUILD_DIR] — does `zplan exec --validate` predict shapes the calibration never saw?
# Calibrates this machine once (mpirun -np 2, the calibration `zplan report validation` runs), then runs
# `zplan exec --validate` on 2 ranks, ZeRO stages 0-3, MP 1 and 2, over two sets of shapes:
#   fitted:   the sweep the calibration is aimed at (the zoo's mini and small at micro-batch 2: the executor's
#             GEMM shapes and layer kernels the calibration times);
#   held-out: shapes it never timed (other hidden sizes, sequences, vocabularies, layers, micro-batches),
#             bench/validate_heldout.csv;
# and prints both sets' step-time and memory errors side by side with the targets (step within 15%, memory
# within 3%). Each run trains >= 5 steps and >= 2 s of measured steps (the median step); one OpenMP/BLAS
# thread per rank. About 6 minutes on 2 cores.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench_lib.sh"
bench_exec_env "${1:-build}"
Z="$zplan"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mpi() { timeout 900 mpirun $root --oversubscribe --bind-to none -np 2 "$@"; }
echo "== calibrating (mpirun -np 2 zplan calibrate --max-bytes 64Mi --hidden 256,512,1024 --tokens 512)"
if ! mpi "$Z" calibrate --max-bytes 64Mi --hidden 256,512,1024 --tokens 512 -o "$T/profile.json" >/dev/null; then
  echo "calibration failed"; exit 1
fi
python3 - "$Z" "$here/validate_heldout.csv" "$T" "$root" <<'PY'
import csv, json, os, statistics, subprocess, sys
z, cases, tmp, root = sys.argv[1:5]
def run(model, stage, mp, mb):
    out = os.path.join(tmp, "run.json")
    argv = ["timeout", "900", "mpirun"] + ([root] if root else []) + ["--oversubscribe", "--bind-to", "none", "-np", "2",
            z, "exec", "--model", model, "--stage", str(stage), "--mp", str(mp), "--micro-batch", str(mb),
            "--steps", "5", "--min-seconds", "2", "--validate", "--profile", os.path.join(tmp, "profile.json"),
            "--format", "json", "-o", out]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1:] if p.stderr else ""
    v = json.load(open(out))["validation"]
    mem = max(abs(e) for e in v["memory_error"].values() if e is not None)
    return (v["step_error"], mem, v["measured_step_s"], v["predicted_step_s"], v.get("phases_s", {})), ""
sets = {"fitted": [], "held-out": []}
cases = list(csv.DictReader(open(cases)))
for c in cases:
    if c["model"].endswith(".json"):  # a GPT-2 config.json written from the row
        path = os.path.join(tmp, c["model"])
        json.dump({"model_type": "gpt2", "n_layer": int(c["layers"]), "n_embd": int(c["hidden"]),
                   "n_head": int(c["heads"]), "n_positions": int(c["seq"]), "vocab_size": int(c["vocab"])},
                  open(path, "w"))
        c["model"] = path
# the two sets interleaved, so that a spell of load on this shared machine falls on both alike
for mp in (1, 2):
    for stage in range(4):
        for c in cases:
            r, err = run(c["model"], stage, mp, int(c["micro"]))
            label = "%s mb%s MP%d stage %d" % (c["name"], c["micro"], mp, stage)
            if r is None:
                print("FAIL %-40s %s" % (label, err))
                continue
            se, me, meas, pred, ph = r
            print("%-9s %-40s measured %.4f s predicted %.4f s  step %+6.1f%%  memory %5.2f%%" %
                  (c["set"], label, meas, pred, 100 * se, 100 * me), flush=True)
            sets[c["set"]].append((label, se, me, ph))
print()
print("%-10s %5s %14s %14s %12s %16s %16s" % ("set", "runs", "median |step|", "worst |step|", "within 15%",
                                                "largest |memory|", "memory <= 3%"))
for name, rows in sets.items():
    if not rows:
        continue
    s = [abs(r[1]) for r in rows]
    m = [r[2] for r in rows]
    print("%-10s %5d %13.1f%% %13.1f%% %7d of %2d %15.2f%% %10d of %2d" %
          (name, len(rows), 100 * statistics.median(s), 100 * max(s), sum(x <= 0.15 for x in s), len(s),
           100 * max(m), sum(x <= 0.03 for x in m), len(m)))
print("targets: every step within 15%, every memory category within 3% (fp32, cpu backend, 2 ranks)")
PY
