#!/bin/sh
# `zplan report validation` end to end on a small sweep (tiny model, 1 and 2 ranks, stages 0 and 3):
# it calibrates per rank count, runs `zplan exec --validate` under mpirun for every cell and tabulates.
# Checked: one row per cell; every memory error within the 5% target (the model and the tracking
# allocator agree); every step error finite; the same final loss for both stages at each rank count
# (ZeRO changes memory, never math: the loss after step k, though --min-seconds runs each cell on
# for as many steps as its speed allows); the JSON carries the rows and the median; bad options exit 2.
# Step-time accuracy is not asserted here (shared CI machines): bench/validate.sh measures it.
set -u
zplan="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

if ! "$zplan" report validation --models tiny --ranks 1,2 --stages 0,3 --steps 2 --min-seconds 0.2 --quick --format csv \
        -o "$tmp/v.csv" 2> "$tmp/v.err"; then
    echo "FAIL: report validation exited $?"; cat "$tmp/v.err"; exit 1
fi
cat "$tmp/v.csv"
rows=$(tail -n +2 "$tmp/v.csv" | wc -l)
[ "$rows" -eq 4 ] || { echo "FAIL: $rows rows, want 4"; fail=1; }
# columns: model,ranks,stage,measured,predicted,step_error,params..buffers errors (7-11),tokens/s,loss at step k
if tail -n +2 "$tmp/v.csv" | awk -F, '{
        for (i = 7; i <= 11; i++) if ($i > 0.05 || $i < -0.05) bad = 1
        if ($6 != $6 + 0 || $6 > 10 || $6 < -10 || $4 <= 0 || $5 <= 0) bad = 1
        if (loss[$2] != "" && (loss[$2] - $13 > 1e-5 * $13 || $13 - loss[$2] > 1e-5 * $13)) bad = 1
        loss[$2] = $13
    } END {exit bad}'; then
    echo "ok   memory errors within 5%, step errors finite, the same loss across stages"
else
    echo "FAIL: a row breaks the checks above"; fail=1
fi

# the JSON run on a profile given (--profile: no calibration of its own; the run above calibrated per rank count)
"$zplan" calibrate --quick -o "$tmp/p.json" > /dev/null 2>&1 || { echo "FAIL: calibrate --quick"; fail=1; }
"$zplan" report validation --models tiny --ranks 1 --stages 0 --steps 2 --min-seconds 0 --profile "$tmp/p.json" \
    --format json -o "$tmp/v.json" 2> "$tmp/j.err" || { echo "FAIL: json run"; cat "$tmp/j.err"; fail=1; }
grep -q 'median |step-time error|' "$tmp/v.json" && grep -q '"predicted_step_s"' "$tmp/v.json" &&
    echo "ok   json rows and summary" ||
    { echo "FAIL: the JSON lacks its rows or the median"; head -c 600 "$tmp/v.json"; fail=1; }

# one run's --validate report: predicted and measured per part and per phase, errors in the JSON
"$zplan" exec --model tiny --steps 3 --checkpoint-activations --validate --profile "$tmp/p.json" --format json \
    > "$tmp/e.json" 2> "$tmp/e.err" || { echo "FAIL: exec --validate"; cat "$tmp/e.err"; fail=1; }
for key in '"by_phase_s"' '"forward"' '"recompute"' '"backward"' '"phases_s"' '"step_error"' '"memory_error"' \
           '"predicted"' '"measured"'; do
    grep -q "$key" "$tmp/e.json" || { echo "FAIL: exec --validate JSON without $key"; fail=1; }
done
# by op kind: each kind's measured time is its ops' wall times, the same that make the phases, so the kinds
# add up to the phases; the predicted kinds are the simulated compute stream's (its tail after the last op
# is the optimizer phase's alone), so they add up to at most the predicted step
python3 - "$tmp/e.json" <<'PY' && echo "ok   exec --validate JSON by_kind_s: the kinds add up to the phases" || fail=1
import json, sys
v = json.load(open(sys.argv[1]))["validation"]
k, ph = v["by_kind_s"], v["by_phase_s"]
me = sum(e["measured"] for e in k.values()); pm = sum(e["measured"] for e in ph.values())
pd = sum(e["predicted"] for e in k.values())
ok = len(k) >= 10 and abs(me - pm) <= 1e-6 + 1e-6 * pm and 0.5 * v["predicted_step_s"] < pd <= v["predicted_step_s"] * (1 + 1e-9)
ok = ok and all(e["ops"] >= 1 for e in k.values() if e["measured"] > 0)
if not ok:
    print("FAIL: by_kind_s: %d kinds, measured %g vs phases %g, predicted %g vs step %g" % (len(k), me, pm, pd, v["predicted_step_s"]))
sys.exit(0 if ok else 1)
PY
"$zplan" exec --model tiny --steps 3 --validate --profile "$tmp/p.json" > "$tmp/e.txt" 2>&1
grep -q "time per phase" "$tmp/e.txt" && grep -Eq "^  backward +[0-9.]+ +[0-9.]+ +[-+][0-9.]+%" "$tmp/e.txt" &&
    echo "ok   exec --validate: per part and per phase, predicted against measured" ||
    { echo "FAIL: exec --validate text lacks the phase table"; cat "$tmp/e.txt"; fail=1; }
grep -q "^time per op kind (rank 0; the 10 largest of [0-9]*), s:" "$tmp/e.txt" &&
    grep -Eq "^  [a-z_0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +([-+][0-9.]+%|-)$" "$tmp/e.txt" &&
    echo "ok   exec --validate: the op kinds that took the most time, predicted against measured" ||
    { echo "FAIL: exec --validate text lacks the op-kind table"; cat "$tmp/e.txt"; fail=1; }

# issue #18 case 6: a profile's provenance is checked against its use. A cpu profile for a GPU cluster's
# what-if is refused (it used to print 0.0 TFLOPs); a 1-rank profile for a 2-rank run is warned about (the
# prediction's compute was off by +107%).
"$zplan" --model 1.5B --gpus 16 --profile "$tmp/p.json" > "$tmp/w.out" 2> "$tmp/w.err"
rc=$?
[ $rc -eq 2 ] && grep -q 'calibrated on the cpu backend' "$tmp/w.err" && [ ! -s "$tmp/w.out" ] &&
    echo "ok   exit 2: a cpu profile for V100s: $(head -c 120 "$tmp/w.err")" ||
    { echo "FAIL: a cpu profile for a GPU cluster: exit $rc: $(cat "$tmp/w.err")"; fail=1; }
root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
OMPI_MCA_mpi_yield_when_idle=1 timeout 120 mpirun $root --oversubscribe --bind-to none -np 2 "$zplan" exec --model tiny \
    --steps 2 --validate --profile "$tmp/p.json" > /dev/null 2> "$tmp/r.err"
grep -q 'calibrated with 1 rank and this run has 2' "$tmp/r.err" &&
    echo "ok   warning: a 1-rank profile for a 2-rank run" ||
    { echo "FAIL: no warning for a 1-rank profile on 2 ranks: $(cat "$tmp/r.err")"; fail=1; }

# the experts' gradients at EP 1: the executor all-reduces them over the DP group (its own bucket), and the
# simulation prices that all-reduce (its expert-data-parallel group was one rank at EP 1 until 2026-11-27: 0 s
# predicted against 0.37 ms measured on tiny-moe)
OMPI_MCA_mpi_yield_when_idle=1 timeout 120 mpirun $root --oversubscribe --bind-to none -np 2 "$zplan" exec \
    --model tiny-moe --steps 2 --validate --profile "$tmp/p.json" --format json -o "$tmp/moe.json" > /dev/null 2>&1
python3 - "$tmp/moe.json" <<'PY' && echo "ok   tiny-moe at EP 1, 2 ranks: the experts' gradient all-reduce priced" || fail=1
import json, sys
k = json.load(open(sys.argv[1]))["validation"]["by_kind_s"].get("expert_grad_allreduce", {})
ok = k.get("ops", 0) >= 1 and k.get("predicted", 0) > 0 and k.get("measured", 0) > 0
print("" if ok else "FAIL: expert_grad_allreduce %s" % k)
sys.exit(0 if ok else 1)
PY

# the wait for the slowest rank (machine.probe.sync, sim/zp_actors.c sync_wait): with a lag of 20% of the work
# since the ranks last met, the 2-rank prediction's data-parallel collectives take 20% of the step's compute
# more (stage 0: one bucket, one meeting a step), and nothing else moves; without it, the prediction is as before
python3 - "$tmp/p.json" "$tmp/s0.json" "$tmp/s2.json" <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))
for path, sync in ((sys.argv[2], 0.0), (sys.argv[3], 0.2)):
    p["machine"]["probe"] = {"s": 0.0025, "drift": 0.1, "sync": sync}
    json.dump(p, open(path, "w"))
PY
# tiny-moe at EP 1: the expert gradients' all-reduce follows the DP one over the same two ranks, which have
# just met: the lag is waited once a step, not twice
for model in tiny tiny-moe; do
    for s in s0 s2; do
        OMPI_MCA_mpi_yield_when_idle=1 timeout 120 mpirun $root --oversubscribe --bind-to none -np 2 "$zplan" exec \
            --model $model --steps 2 --validate --profile "$tmp/$s.json" --format json -o "$tmp/e$s-$model.json" \
            > /dev/null 2>&1
    done
    python3 - "$tmp/es0-$model.json" "$tmp/es2-$model.json" <<'PY' &&
import json, sys
a, b = (json.load(open(f))["validation"]["phases_s"] for f in sys.argv[1:3])
c, d0, d2 = a["compute"]["predicted"], a["dp_comm"]["predicted"], b["dp_comm"]["predicted"]
ok = b["compute"]["predicted"] == c and abs((d2 - d0) - 0.2 * c) <= 0.02 * c
print("" if ok else "FAIL: compute %g, dp_comm %g -> %g (want +%g)" % (c, d0, d2, 0.2 * c))
sys.exit(0 if ok else 1)
PY
        echo "ok   $model: a 20% lag of the slowest rank: the DP collectives wait 20% of the compute, once" || fail=1
done

for args in "--min-seconds x" "--min-seconds -2" "--steps 1" "--micro-batch 0" "--format yaml" "--bogus"; do
    # shellcheck disable=SC2086
    "$zplan" report validation $args > /dev/null 2> "$tmp/bad.err"
    rc=$?
    if [ $rc -eq 2 ] && [ -s "$tmp/bad.err" ]; then
        echo "ok   exit 2: $args: $(head -n 1 "$tmp/bad.err")"
    else
        echo "FAIL: report validation $args: exit $rc (want 2 with a message)"; fail=1
    fi
done
exit $fail
