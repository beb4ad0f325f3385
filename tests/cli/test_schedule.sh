#!/usr/bin/env bash
# `zplan schedule`: the goldens (tests/golden/schedule.tesh: command and expected output, as SimGrid's
# tesh files), and memory as the replay of the schedule: for plans of the issue's sizes, replaying the
# alloc and free ops of `zplan schedule --format json` in order peaks at the what-if's memory_gb.total
# (within 0.5%); the interleaved schedule's sends not waited for (--overlap-p2p-comm on, all, off); bad inputs
# exit 2 with one message.
# Usage: test_schedule.sh ZPLAN SOURCE_ROOT
set -u
Z="$1"; SRC="$2"
python3 --version >/dev/null 2>&1 || { echo "SKIP: python3 absent"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
python3 "$SRC/tests/tesh.py" "$Z" "$SRC/tests/golden/schedule.tesh" || fail=1

replay='
import json, sys
d = json.load(open(sys.argv[1])); w = json.load(open(sys.argv[2]))
cur = peak = 0.0
for o in d["ops"]:
    if o["kind"] in ("alloc", "free") and o["category"] != "host":
        cur += o["bytes"] if o["kind"] == "alloc" else -o["bytes"]
        peak = max(peak, cur)
best = w["plans"][w["best"]]
total = best["memory_gb"]["total"] * 1e9
p = d["plan"]
same = all(p[k] == best[k] for k in ("stage", "mp", "dp", "micro_batch", "grad_accum", "pa", "pa_cpu", "offload"))
err = abs(peak - total) / total
print("%-62s replay %8.3f GB, what-if %8.3f GB, %.4f%%%s" % (sys.argv[3], peak / 1e9, total / 1e9, 100 * err,
      "" if same else " (DIFFERENT PLANS)"))
sys.exit(0 if same and err <= 0.005 and len(d["ops"]) == p["ops"] else 1)
'
check() { # check LABEL what-if options...
    local label="$1"; shift
    if ! "$Z" schedule "$@" --format json -o "$T/s.json" 2>"$T/err" || ! "$Z" "$@" --format json -o "$T/w.json" 2>>"$T/err"; then
        echo "FAIL $label: $(head -2 "$T/err")"; fail=1; return
    fi
    python3 -c "$replay" "$T/s.json" "$T/w.json" "$label" || { echo "FAIL $label"; fail=1; }
}
check "100B, 400 GPUs, stage 2, MP 16, B 800, Pa" --model 100B --gpus 400 --stage 2 --mp 16 --global-batch 800 --pa
check "100B, 400 GPUs, stage 3, MP 4" --model 100B --gpus 400 --stage 3 --mp 4
check "gpt2-1.5B, 16 GPUs, stage 0" --model gpt2-1.5B --gpus 16 --stage 0
check "8B, 64 GPUs, stage 1, MP 2, optimizer offload" --model 8B --gpus 64 --stage 1 --mp 2 --offload optimizer
check "20B, 32 GPUs, stage 3, parameter offload" --model 20B --gpus 32 --stage 3 --offload params
check "13B, 16 GPUs, stage 2, no MD (fragmentation)" --model 13B --gpus 16 --stage 2 --no-md --analytic

# the interleaved schedule's sends (--overlap-p2p-comm): the steady state's not waited for, the warm-up's and the
# cool-down's waited for; all of them with all, none with off. Stage 1 of 4 (rank 8: MP 2 x DP 4 ranks a stage),
# 2 chunks, 8 micro-batches a pipeline: 32 sends, 8 warm-up forwards, 8 cool-down backwards (test_pplayout.c)
P2P="--model llama-3-8b --gpus 32 --mp 2 --pp 4 --stage 1 --schedule interleaved --virtual-stages 2 --micro-batch 1
  --global-batch 32 --recompute full --exact --analytic --rank 8 --format json"
p2p() { "$Z" schedule $P2P "$@" 2>"$T/err" | python3 -c '
import json, sys
d = json.load(sys.stdin); s = [o for o in d["ops"] if o["name"] in ("pp_send_activation", "pp_send_grad")]
print(len(s), sum(1 for o in s if o.get("nowait")), d["plan"].get("overlap_p2p_comm", False))'; }
for mode in on all off; do
    got=$(p2p --overlap-p2p-comm $mode)
    case $mode in on) want="32 16 True" ;; all) want="32 32 True" ;; off) want="32 0 False" ;; esac
    if [ "$got" = "$want" ]; then echo "ok   --overlap-p2p-comm $mode: sends, not waited for, plan: $got"
    else echo "FAIL --overlap-p2p-comm $mode: $got, want $want $(head -2 "$T/err")"; fail=1; fi
done
"$Z" schedule $(echo "$P2P" | sed 's/--format json/--format text/') 2>"$T/err" | grep -c "not waited for" >"$T/n"
[ "$(cat "$T/n")" = 16 ] && echo "ok   text: 16 sends not waited for" || { echo "FAIL text: $(cat "$T/n") not waited for"; fail=1; }

bad() { # bad PATTERN ARGS...: exit 2 and a one-line message matching PATTERN
    local pat="$1"; shift
    "$Z" "$@" >"$T/out" 2>"$T/err"; local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q -- "$pat" "$T/err" && [ ! -s "$T/out" ]; then
        echo "ok   bad input $*: $(cat "$T/err")"
    else
        echo "FAIL bad input $*: exit $rc, $(head -2 "$T/err")"; fail=1
    fi
}
bad "needs --stage\|give --stage" schedule --model tiny --gpus 2 --exact
bad "give --stage" --model tiny --gpus 2 --exact
bad "it is an option of zplan exec" schedule --model tiny --gpus 2 --steps 3
bad "is an option of zplan schedule" --model tiny --gpus 2 --rank 1
bad "ranks 0 to 1" schedule --model tiny --gpus 2 --rank 2 --analytic
bad "writes text or json" schedule --model tiny --gpus 2 --format html
bad "unknown option" schedule --model tiny --gpus 2 --frobnicate
bad "needs a value" schedule --model tiny --gpus
bad "unexpected argument" schedule --model tiny --gpus 2 extra
bad "--grad-accum" --model tiny --gpus 2 --grad-accum 0

# a schedule read back: its replay is the what-if's memory; an unknown op kind or class is refused
"$Z" schedule --model 100B --gpus 400 --stage 3 --mp 4 --analytic --format json -o "$T/s.json" &&
    "$Z" --model 100B --gpus 400 --stage 3 --mp 4 --analytic --format json -o "$T/w.json" &&
    "$Z" schedule --replay "$T/s.json" --format json -o "$T/r.json" || { echo "FAIL replay"; fail=1; }
python3 - "$T/r.json" "$T/w.json" <<'PY' || fail=1
import json, sys
r = {row["category"]: row["gb"] for row in json.load(open(sys.argv[1]))["rows"]}
w = json.load(open(sys.argv[2]))
want = w["plans"][w["best"]]["memory_gb"]["total"]
ok = abs(r["total"] - want) <= 1e-6 * want  # the what-if JSON prints 8 digits
print("%s  --replay of a written schedule: %.6f GB, the what-if's %.6f GB" % ("ok  " if ok else "FAIL", r["total"], want))
sys.exit(0 if ok else 1)
PY
sed 's/"name": "param_gather"/"name": "param_gahter"/' "$T/s.json" > "$T/bad1.json"
bad "unknown op kind 'param_gahter'" schedule --replay "$T/bad1.json"
sed '0,/"kind": "alloc"/s//"kind": "compute"/' "$T/s.json" > "$T/bad2.json"
bad "but 'alloc' ops are of kind 'alloc'" schedule --replay "$T/bad2.json"
echo '{"ops": 3}' > "$T/bad3.json"
bad "no \"ops\" array" schedule --replay "$T/bad3.json"
bad "cannot read\|No such file" schedule --replay "$T/none.json"
exit $fail
