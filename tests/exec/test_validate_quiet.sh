#!/bin/sh
# `zplan exec --validate` on a busy machine (issue #31): with a `yes` hogging every core beside it, the run is
# reported NOT QUIET (other processes' CPU and the load named), its verdict is "not quiet", never met or
# missed, and the text says it was not judged. Without --steps and --min-seconds, --validate measures >= 5
# steps and >= 2 s, with the min <= median <= max beside the prediction. `zplan calibrate --model` times
# the executor's GEMMs of that model (small at micro-batch 4: the LM head is (512, 4096, 256), in no other
# shape list); bad --model exits 2.
# A profile whose calibration was not quiet (machine.while_calibrating) makes every run against it not quiet.
# Whether an idle run is quiet is not asserted (CI machines are shared): bench/validate_readme.sh.
set -u
zplan="$1"
tmp=$(mktemp -d)
hogs=""
cleanup() { for p in $hogs; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

"$zplan" calibrate --quick --model small --micro-batch 4 -o "$tmp/p.json" > /dev/null 2> "$tmp/c.err" ||
    { echo "FAIL: calibrate --quick --model small: $(cat "$tmp/c.err")"; exit 1; }
python3 - "$tmp/p.json" <<'PY' && echo "ok   calibrate --model small --micro-batch 4 timed its LM head GEMM (512, 4096, 256)" || fail=1
import json, sys
g = json.load(open(sys.argv[1]))["gemm"]
pts = g if isinstance(g, list) else g.get("points", [])
if not any(int(p["m"]) == 512 and int(p["n"]) == 4096 and int(p["k"]) == 256 for p in pts):
    print("FAIL: no (512, 4096, 256) among the profile's GEMMs"); sys.exit(1)
PY

for args in "--model nosuch" "--model tiny --backend cuda" "--model tiny,nosuch"; do
    # shellcheck disable=SC2086
    "$zplan" calibrate --quick $args -o "$tmp/bad.json" > /dev/null 2> "$tmp/bad.err"
    rc=$?
    [ $rc -eq 2 ] && [ -s "$tmp/bad.err" ] && [ ! -e "$tmp/bad.json" ] &&
        echo "ok   exit 2: calibrate $args: $(head -n 1 "$tmp/bad.err")" ||
        { echo "FAIL: calibrate $args: exit $rc (want 2 with a message)"; cat "$tmp/bad.err"; fail=1; }
done

# the defaults of --validate: >= 5 steps, >= 2 s, min / median / max
"$zplan" exec --model tiny --validate --profile "$tmp/p.json" --format json > "$tmp/d.json" 2> "$tmp/d.err" ||
    { echo "FAIL: exec --validate: $(cat "$tmp/d.err")"; fail=1; }
python3 - "$tmp/d.json" <<'PY' && echo "ok   --validate measured >= 5 steps over >= 2 s: min <= median <= max" || fail=1
import json, sys
j = json.load(open(sys.argv[1])); v = j["validation"]; q = j["quiet"]
ok = (j["config"]["steps"] == 5 and j["config"]["min_seconds"] == 2 and v["measured_steps"] >= 4
      and q["window_s"] >= 2 and v["measured_step_min_s"] <= v["measured_step_s"] <= v["measured_step_max_s"]
      and v["verdict"] in ("met", "missed", "not quiet") and (v["verdict"] == "not quiet") == (not q["quiet"]))
if not ok:
    print("FAIL: --validate defaults or statistics:", json.dumps(v)[:400], json.dumps(q)); sys.exit(1)
PY

# a profile calibrated on a busy machine: every run against it is not quiet, the reason naming the profile
python3 - "$tmp/p.json" "$tmp/busy.json" <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))
if "while_calibrating" not in p["machine"]:
    print("FAIL: calibrate did not record the machine while calibrating"); sys.exit(1)
p["machine"]["while_calibrating"] = {"others_cores": 1.5, "load_1min": 6.0}
json.dump(p, open(sys.argv[2], "w"))
PY
"$zplan" exec --model tiny --validate --steps 2 --min-seconds 0 --profile "$tmp/busy.json" --format json \
    > "$tmp/pb.json" 2> "$tmp/pb.err" || { echo "FAIL: exec against the busy profile: $(cat "$tmp/pb.err")"; fail=1; }
python3 - "$tmp/pb.json" <<'PY' && echo "ok   a profile calibrated on a busy machine: not quiet, the profile named" || fail=1
import json, sys
v = json.load(open(sys.argv[1]))["validation"]
if v["verdict"] != "not quiet" or "profile was calibrated on a busy machine" not in v["verdict_reason"]:
    print("FAIL: judged against a busy profile:", v["verdict"], v.get("verdict_reason")); sys.exit(1)
PY

# a busy machine: one `yes` per core, and one more
n=$(getconf _NPROCESSORS_ONLN)
for _ in $(seq $((n + 1))); do
    yes > /dev/null &
    hogs="$hogs $!"
done
sleep 1
"$zplan" exec --model tiny --validate --min-seconds 1 --profile "$tmp/p.json" --format json > "$tmp/b.json" 2> "$tmp/b.err" ||
    { echo "FAIL: exec --validate beside the hogs: $(cat "$tmp/b.err")"; fail=1; }
"$zplan" exec --model tiny --validate --min-seconds 1 --profile "$tmp/p.json" > "$tmp/b.txt" 2>&1
for p in $hogs; do kill "$p" 2>/dev/null; done
hogs=""
python3 - "$tmp/b.json" <<'PY' && echo "ok   beside $((n + 1)) hogs: not quiet, verdict 'not quiet'" || fail=1
import json, sys
j = json.load(open(sys.argv[1])); v = j["validation"]; q = j["quiet"]
if q["quiet"] or v["verdict"] != "not quiet" or q["others_cores"] <= 0.25 or "other processes used" not in q["reason"]:
    print("FAIL: a busy run judged quiet:", json.dumps(q), v["verdict"]); sys.exit(1)
PY
grep -q "machine while measuring: NOT QUIET" "$tmp/b.txt" && grep -q "verdict: not judged" "$tmp/b.txt" &&
    ! grep -Eq "verdict: (met|missed)" "$tmp/b.txt" &&
    echo "ok   the text report says NOT QUIET and not judged" ||
    { echo "FAIL: the busy run's text report"; cat "$tmp/b.txt"; fail=1; }
exit $fail
