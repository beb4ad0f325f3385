#!/bin/sh
# test_exec_pp.sh ZPLAN ZP_MPIRUN — pipeline parallelism in `zplan exec` (1F1B, ranks as stages, point-to-
# point activations and gradients): the loss of every step equals the one-rank run of the same model and
# global batch (relative 1e-5) for 2, 3 and 4 stages (an uneven split among them), with MP (scatter/gather
# and the MP group's all-gather), ZeRO-1 over DP, checkpointing with and without MD, Pa; --validate
# predicts each stage's memory to the byte (the replay of that stage's schedule); bad inputs exit 2.
set -u
# the profile --validate predicts with: a small calibration (two hidden sizes, one token count, 64 KB
# collectives; seconds): what is checked is memory, exact whatever the profile, and a step predicted
small_profile="--quick --hidden 32,64 --tokens 64 --max-bytes 64K --reps 2 --warmup 1"
steps=3
. "$(dirname "$0")/exec_lib.sh"

# tiny: 2 layers, global batch 4
run ref 1 --micro-batch 4 || exit 1
run pp2 2 --pp 2 --micro-batch 1 --grad-accum 4 && same pp2 ref
run pp2_mp2_ckpt 4 --pp 2 --mp 2 --micro-batch 2 --grad-accum 2 --checkpoint && same pp2_mp2_ckpt ref
run pp2_dp2_s1 4 --pp 2 --stage 1 --micro-batch 1 --grad-accum 2 && same pp2_dp2_s1 ref
grep -q '"pipeline_stages"' "$tmp/pp2.json" && grep -q '"pp": 2' "$tmp/pp2.json" &&
    echo "ok   the JSON report has the stages" || { echo "FAIL: no pipeline_stages in the JSON"; fail=1; }

# mini: 4 layers; 4 stages, and 3 (layers 1, 2, 1)
run_mini() { name="$1"; np="$2"; shift 2; run "$name" "$np" --model mini "$@"; }
run_mini mref 1 --micro-batch 4 || exit 1
run_mini pp4 4 --pp 4 --micro-batch 1 --grad-accum 4 && same pp4 mref
run_mini pp3_ckpt_nomd 3 --pp 3 --micro-batch 2 --grad-accum 2 --checkpoint --no-md && same pp3_ckpt_nomd mref
run_mini pp2_mp2_dp2_s1_pa 8 --pp 2 --mp 2 --stage 1 --micro-batch 1 --grad-accum 2 --checkpoint --pa &&
    same pp2_mp2_dp2_s1_pa mref

# --validate: each stage's memory is the replay of its schedule (0% error), the step is predicted
if "$zplan" calibrate $small_profile -o "$tmp/p.json" > /dev/null 2>&1 &&
   timeout 120 "$mpirun_sh" 2 "$zplan" exec --model mini --steps 3 --pp 2 --micro-batch 2 --grad-accum 4 --checkpoint \
       --validate --profile "$tmp/p.json" --format json > "$tmp/v.json" 2> "$tmp/v.err"; then
    if python3 - "$tmp/v.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = d["pipeline_stages"]
assert len(st) == 2, st
for s in st:
    assert abs(s["total_error"]) < 1e-9, s
    assert s["total_gb"] > 0, s
assert st[0]["total_gb"] != st[1]["total_gb"], st  # the first and the last stage hold different tensors
v = d["validation"]
assert v["predicted_step_s"] > 0 and abs(v["step_error"]) < 10, v
assert "pp_comm" in v["phases_s"], v
print("ok   --validate: stage memory %s MB, predicted exactly; step %.3g s predicted, %.3g s measured"
      % ([round(s["total_gb"] * 1e3, 3) for s in st], v["predicted_step_s"], v["measured_step_s"]))
PY
    then :; else echo "FAIL: --validate report"; fail=1; fi
else
    echo "FAIL: exec --pp 2 --validate"; cat "$tmp/v.err"; fail=1
fi

# bad inputs: exit 2 with a message on every rank
bad 2 "do not divide the 2 ranks" --model tiny --pp 4
bad 3 "more pipeline stages than" --model tiny --pp 3
bad 2 "1F1B" --model tiny --pp 2 --schedule gpipe --grad-accum 2
bad 2 "ZeRO stage 2 with pipeline" --model tiny --pp 2 --stage 2
exit $fail
