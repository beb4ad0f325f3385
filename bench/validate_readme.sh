#!/usr/bin/env bash
# bench/validate_readme.sh [BUILD_DIR] [REPEATS] — the README's validation commands, run as a user types them,
# REPEATS times in a row (default 3): each time
#   mpirun -np 2 zplan calibrate --model gpt2-4x256.json,tiny-llama,tiny-moe --micro-batch 4 -o p.json
# then for each model, MP 1 and 2, ZeRO stages 0-3
#   mpirun -np 2 zplan exec --model M --stage S --mp P --micro-batch 4 --validate --profile p.json
# (with --format json -o FILE added, to read the figures; --allow-run-as-root added when root). The models:
# a GPT-2 config.json of 4 layers, hidden 256, 4 heads, sequence 128, vocabulary 4096 (written here), the
# zoo's tiny-llama and tiny-moe. No OMP_NUM_THREADS and no MCA settings: zplan sets what it needs.
# Prints one row per run (measured min/median/max, predicted, step and memory errors, quiet or not with the
# others' CPU and the load, verdict) and a summary: targets step within 15% and memory within 3% for every
# quiet run; a run that was not quiet (another process on the cores, the load above them, steps spread)
# is counted apart, neither met nor missed. About 8 minutes on 2 idle cores.
set -u
# KEEP=DIR keeps each run's JSON report there (the runs' by_kind_s, per part and per phase)
here=$(cd "$(dirname "$0")" && pwd)
Z="${1:-build}/src/zplan"
[ -x "$Z" ] && Z=$(realpath "$Z")
[ -x "$Z" ] || { echo "$(basename "$0"): no $Z (build first: scripts/build)"; exit 2; }
reps="${2:-3}"
root=""; [ "$(id -u)" = 0 ] && root="--allow-run-as-root"
T=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$T"/*.json "$KEEP"/ 2>/dev/null; rm -rf "$T"' EXIT
cat >"$T/gpt2-4x256.json" <<'JSON'
{"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 4, "n_positions": 128, "vocab_size": 4096}
JSON
t0=$(date +%s)
echo "== $(basename "$0"): $reps x (calibrate, then exec --validate over 3 models x MP 1, 2 x stages 0-3);" \
  "$(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
for rep in $(seq "$reps"); do
  echo "-- repeat $rep: mpirun -np 2 zplan calibrate --model gpt2-4x256.json,tiny-llama,tiny-moe --micro-batch 4" \
    "-o p.json (load $(cut -d' ' -f1 /proc/loadavg))"
  if ! (cd "$T" && timeout 900 mpirun $root -np 2 "$Z" calibrate --model gpt2-4x256.json,tiny-llama,tiny-moe \
        --micro-batch 4 -o p.json >calibrate.log 2>&1); then
    echo "calibration failed:"; tail -3 "$T/calibrate.log"; exit 1
  fi
  grep '^  machine .*while calibrating' "$T/calibrate.log" | sed 's/^ */   /'
  for model in gpt2-4x256.json tiny-llama tiny-moe; do
    for mp in 1 2; do
      for stage in 0 1 2 3; do
        out="$T/r$rep-$model-mp$mp-s$stage.json"
        if ! (cd "$T" && timeout 600 mpirun $root -np 2 "$Z" exec --model "$model" --stage "$stage" --mp "$mp" \
              --micro-batch 4 --validate --profile p.json --format json -o "$out" >/dev/null 2>"$out.err"); then
          echo "FAIL repeat $rep $model MP $mp stage $stage: $(tail -1 "$out.err")"
          continue
        fi
        python3 - "$out" "$rep" "$model" "$mp" "$stage" <<'PY'
import json, sys
path, rep, model, mp, stage = sys.argv[1:6]
j = json.load(open(path)); v = j["validation"]; q = j["quiet"]
mem = max(abs(e) for e in v["memory_error"].values() if e is not None)
print("%3s %-16s %2s %5s  %7.4f %7.4f %7.4f  %7.4f  %+7.1f%%  %5.2f%%  %-3s %5.2f %5.2f  %s%s" % (
    rep, model.replace(".json", ""), mp, stage, v["measured_step_min_s"], v["measured_step_s"],
    v["measured_step_max_s"], v["predicted_step_s"], 100 * v["step_error"], 100 * mem,
    "yes" if q["quiet"] else "NO", q["others_cores"], q["load_1min"], v["verdict"],
    "  (" + v["verdict_reason"] + ")" if v["verdict_reason"] else ""), flush=True)
PY
      done
    done
  done | { [ "$rep" = 1 ] && printf '%3s %-16s %2s %5s  %7s %7s %7s  %7s  %8s  %6s  %-3s %5s %5s  %s\n' rep model MP stage \
             "min s" "med s" "max s" "pred s" step memory qui other load verdict; cat; } | tee -a "$T/rows"
done
python3 - "$T/rows" "$(getconf _NPROCESSORS_ONLN)" <<'PY'
import re, sys, os
rows = [l.split() for l in open(sys.argv[1]) if re.match(r"\s*\d", l)]
cores = int(sys.argv[2])
quiet = [r for r in rows if r[13] in ("met", "missed")]  # judged: the run and its profile's calibration quiet
busy = [r for r in rows if r[13] not in ("met", "missed")]
steps = [abs(float(r[8].rstrip("%"))) for r in quiet]
mems = [float(r[9].rstrip("%")) for r in quiet]
print()
print("runs %d: judged %d (met %d, missed %d), not quiet %d (the run or its calibration; not judged)" % (
    len(rows), len(quiet), sum(r[13] == "met" for r in quiet), sum(r[13] == "missed" for r in quiet), len(busy)))
if quiet:
    s = sorted(steps)
    print("quiet runs: median |step| %.1f%%, worst %.1f%%, %d of %d within 15%%; worst |memory| %.2f%%, %d of %d within 3%%"
          % (s[len(s) // 2], s[-1], sum(x <= 15 for x in steps), len(steps), max(mems), sum(x <= 3 for x in mems),
             len(mems)))
    print("target (every quiet run: step within 15%%, memory within 3%%): %s" %
          ("met" if all(x <= 15 for x in steps) and all(x <= 3 for x in mems) else "MISSED"))
else:
    print("no quiet run: nothing judged (run again on an idle machine)")
print("load now %.2f on %d cores" % (os.getloadavg()[0], cores))
PY
# where the quiet runs' step errors come from, over every judged run: the op kinds summed, measured against
# predicted (exec --validate's by_kind_s), the largest first; then per model, signed, the steps summed and
# their op kinds by how sim/zp_ops.def prices them (.cost: gemm, bgemm the batched ones, eltwise the layer
# kernels, adam; coll the collectives), each class's share of the measured step: a bias shows there when the
# runs' noise hides it
python3 - "$T" "$here/../sim/zp_ops.def" <<'PY'
import glob, json, re, sys
cost = {}
for row in open(sys.argv[2]).read().split("\nZP_OP(")[1:]:  # a row: up to the next comment or row
    row = row.split("\n/*")[0].split("\n#")[0]
    n, c = re.search(r'\.name = "(\w+)"', row), re.search(r"\.cost = zp_cost_(\w+)", row)
    if n:
        cost[n.group(1)] = c.group(1) if c else "coll"
tot, per = {}, {}
for path in sorted(glob.glob(sys.argv[1] + "/r*.json")):
    try:
        v = json.load(open(path))["validation"]
    except (OSError, ValueError, KeyError):
        continue
    if v.get("verdict") not in ("met", "missed"):
        continue
    model = re.sub(r"^r\d+-|(\.json)?-mp\d+-s\d+\.json$", "", path.split("/")[-1])
    d = per.setdefault(model, {"step": [0.0, 0.0], "runs": 0})
    d["runs"] += 1
    d["step"][0] += v["measured_step_s"]; d["step"][1] += v["predicted_step_s"]
    for kind, e in v.get("by_kind_s", {}).items():
        for t in (tot.setdefault(kind, [0.0, 0.0]), d.setdefault(cost.get(kind, "other"), [0.0, 0.0])):
            t[0] += e["measured"]; t[1] += e["predicted"]
if tot:
    print("op kinds over the judged runs (the 8 largest), s: kind, measured, predicted, error")
    for kind, (me, pd) in sorted(tot.items(), key=lambda kv: -max(kv[1]))[:8]:
        print("  %-22s %9.4f %9.4f %+7.1f%%" % (kind, me, pd, 100 * (pd - me) / me if me > 0 else 0))
if per:
    print("per model over the judged runs: step, then each class's error (its share of the measured step)")
    for model, d in per.items():
        me = d["step"][0]
        cls = "  ".join("%s %+.0f%% (%.0f%%)" % (k, 100 * (t[1] / t[0] - 1), 100 * t[0] / me)
                        for k, t in sorted(d.items()) if k not in ("step", "runs") and t[0] > 0)
        print("  %-16s %2d runs  step %+5.1f%%  %s" % (model, d["runs"], 100 * (d["step"][1] / me - 1), cls))
PY
echo "wall $(( $(date +%s) - t0 )) s"
