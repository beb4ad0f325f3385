#!/usr/bin/env bash
# GPUs as data (issue #28 item 6): `zplan gpus` and `zplan gpus NAME`, --gpu with a preset name and with a
# spec file (the same answer as the preset it copies), bad spec files exit 2 naming the key and the line.
# Usage: test_gpu.sh ZPLAN SOURCE_ROOT
set -u
Z=$(realpath "$1")
ROOT="$2"
. "$(dirname "$0")/lib.sh"
good() { ok; echo "ok   $*"; }
# expect_fail "what" "message part" zplan-args...: exit 2 and the message on stderr
expect_fail() {
  local what="$1" want="$2"; shift 2
  "$Z" "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" "$T/err"; then good "$what"; else ko "$what: rc=$rc, stderr: $(cat "$T/err")"; fi
}
strip() { sed -E 's/"[a-z_]*wall_s": [0-9.e+-]+//g; s/dgx-h100 with H200-SXM5-141GB|dgx-h200|dgx-h100 with TEST-H200/CLUSTER/g; s/H200-SXM5-141GB|TEST-H200/GPU/g' "$1"; }

# the listing and a preset's file
"$Z" gpus >"$T/gpus" 2>&1 || ko "zplan gpus: $(cat "$T/gpus")"
for g in V100-SXM3-32GB A100-SXM4-80GB H100-SXM5-80GB H200-SXM5-141GB; do
  grep -q "^$g " "$T/gpus" && good "zplan gpus lists $g" || ko "zplan gpus lacks $g"
done
"$Z" gpus --format json >"$T/gpus.json" && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['rows'] if x['name']=='H100-SXM5-80GB'][0]; sys.exit(0 if r['fp8_tflops']==1979 and r['nvlink_domain']==8 else 1)" "$T/gpus.json" \
  && good "zplan gpus --format json: H100 fp8 1979, NVLink domain 8" || ko "zplan gpus --format json: $(head -c 300 "$T/gpus.json")"
"$Z" gpus h100-sxm5-80gb >"$T/h100.gpu" && grep -q '^fp8  *= 1979 TFLOP/s *# source: ' "$T/h100.gpu" \
  && good "zplan gpus NAME prints the spec file with its sources" || ko "zplan gpus h100-sxm5-80gb"
expect_fail "zplan gpus with an unknown name" "unknown GPU 'h1000'" gpus h1000
# the H100 SXM5 96 GB of torchtitan's benchmarks (Meta's Grand Teton): its HBM2e bandwidth and 500 W limit are
# the benchmarks' figures, the compute figures marked assumed (no datasheet of the SKU)
"$Z" gpus h100-sxm5-96gb >"$T/h96.gpu" 2>&1
if grep -q '^hbm_bw  *= 2.4 TB/s *# source: torchtitan benchmarks' "$T/h96.gpu" &&
   grep -q '^tdp  *= 500 W *# source: torchtitan benchmarks' "$T/h96.gpu" &&
   grep -q '^bf16  *= 989 TFLOP/s *# source: assumed ' "$T/h96.gpu"; then
  good "zplan gpus h100-sxm5-96gb: 2.4 TB/s and 500 W from torchtitan's benchmarks, the peaks marked assumed"
else ko "zplan gpus h100-sxm5-96gb: $(head -c 400 "$T/h96.gpu")"; fi

# --gpu NAME: dgx-h100 with the H200 is dgx-h200 (the same node and fabric), names aside
"$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --gpu h200-sxm5-141gb --top 3 --format json >"$T/a.json" 2>&1 || ko "--gpu h200-sxm5-141gb: $(head -c 300 "$T/a.json")"
"$Z" --model llama-3-8b --gpus 16 --cluster dgx-h200 --top 3 --format json >"$T/b.json" 2>&1
if cmp -s <(strip "$T/a.json") <(strip "$T/b.json"); then good "--cluster dgx-h100 --gpu h200-sxm5-141gb = --cluster dgx-h200"; else ko "--gpu h200 differs from dgx-h200: $(diff <(strip "$T/a.json") <(strip "$T/b.json") | head -5)"; fi
grep -q '"name": "dgx-h100 with H200-SXM5-141GB"' "$T/a.json" && good "--gpu names the cluster 'dgx-h100 with H200-SXM5-141GB'" || ko "--gpu: cluster name"

# --gpu FILE: the preset's text with another name is the same answer
"$Z" gpus h200-sxm5-141gb | sed 's/^name .*/name = TEST-H200  # source: a copy of the H200 preset/' >"$T/my.gpu"
cp "$T/my.gpu" "$T/my-gpu.txt"
( cd "$T" && "$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --gpu my-gpu.txt --top 3 --format json ) >"$T/d.json" 2>&1
cmp -s <(strip "$T/d.json") <(strip "$T/b.json") && good "--gpu FILE without a slash or .gpu (a file here)" || ko "--gpu my-gpu.txt: $(head -c 300 "$T/d.json")"
"$Z" --model llama-3-8b --gpus 16 --cluster dgx-h100 --gpu "$T/my.gpu" --top 3 --format json >"$T/c.json" 2>&1 || ko "--gpu FILE: $(head -c 300 "$T/c.json")"
if cmp -s <(strip "$T/c.json") <(strip "$T/b.json"); then good "--gpu FILE (the H200's figures) = dgx-h200"; else ko "--gpu FILE differs: $(diff <(strip "$T/c.json") <(strip "$T/b.json") | head -5)"; fi

# bad files: exit 2 naming the key and the line
sed 's/^hbm_bw .*/hbm_bw = 4.8 TB\/s/' "$T/my.gpu" >"$T/unsourced.gpu"
expect_fail "--gpu FILE: an unsourced figure" "unsourced.gpu:10: hbm_bw has no source" --model 8B --gpus 8 --cluster dgx-h100 --gpu "$T/unsourced.gpu"
grep -v '^sms ' "$T/my.gpu" >"$T/missing.gpu"
expect_fail "--gpu FILE: a missing figure" "missing.gpu: sms is missing" --model 8B --gpus 8 --cluster dgx-h100 --gpu "$T/missing.gpu"
sed 's/^tdp .*/tdp = -700 W  # source: x/' "$T/my.gpu" >"$T/negative.gpu"
expect_fail "--gpu FILE: a negative figure" "negative.gpu:13: tdp: -700 W is negative" --model 8B --gpus 8 --cluster dgx-h100 --gpu "$T/negative.gpu"
{ cat "$T/my.gpu"; echo "tflops = 989  # source: x"; } >"$T/unknown.gpu"
expect_fail "--gpu FILE: an unknown key" "unknown key 'tflops'" --model 8B --gpus 8 --cluster dgx-h100 --gpu "$T/unknown.gpu"
expect_fail "--gpu with a file that is not there" "cannot read $T/none.gpu" --model 8B --gpus 8 --cluster dgx-h100 --gpu "$T/none.gpu"
expect_fail "--gpu with an unknown preset" "unknown GPU 'b300'" --model 8B --gpus 8 --cluster dgx-h100 --gpu b300

# MI300X (issue #28 item 6): a full xGMI mesh, the GPU file's intra_topology = mesh and link_bw
grep -q "^MI300X " "$T/gpus" && good "zplan gpus lists MI300X" || ko "zplan gpus lacks MI300X"
"$Z" gpus mi300x >"$T/mi300x.gpu" && grep -q '^intra_topology *= mesh *# source: ' "$T/mi300x.gpu" \
  && grep -q '^link_bw *= 64 GB/s *# source: ' "$T/mi300x.gpu" \
  && good "zplan gpus mi300x prints the mesh with its sources" || ko "zplan gpus mi300x: $(head -c 300 "$T/mi300x.gpu")"
# a TP-2 group's collectives ride one xGMI link of the seven, TP-8's all seven: the step's MP communication
# against the same GPU on a switch (the file without the two keys)
grep -v '^intra_topology\|^link_bw' "$T/mi300x.gpu" >"$T/mi300x-switch.gpu"
mp_comm() {
  "$Z" --model llama-3-8b --gpus 16 --cluster mi300x-node --global-batch 64 --stage 1 --pp 1 --micro-batch 1 \
    --format json "$@" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['plans'][0]['time_breakdown_s']['mp_comm'])"
}
a=$(mp_comm --mp 2); b=$(mp_comm --mp 2 --gpu "$T/mi300x-switch.gpu")
python3 -c "import sys; r=float(sys.argv[1])/float(sys.argv[2]); sys.exit(0 if 5 < r < 7.5 else 1)" "$a" "$b" \
  && good "mi300x-node: TP 2's communication ${a} s on the mesh, ${b} s on a switch (one link of seven)" \
  || ko "mi300x-node TP 2: mesh ${a} s, switch ${b} s"
a=$(mp_comm --mp 8); b=$(mp_comm --mp 8 --gpu "$T/mi300x-switch.gpu")
[ -n "$a" ] && [ "$a" = "$b" ] && good "mi300x-node: TP 8 uses all seven links, as a switch's port (${a} s)" \
  || ko "mi300x-node TP 8: mesh ${a} s, switch ${b} s"
grep -v '^link_bw' "$T/mi300x.gpu" >"$T/nolink.gpu"
expect_fail "--gpu FILE: a mesh without link_bw" "intra_topology = mesh needs link_bw" --model 8B --gpus 8 --cluster mi300x-node --gpu "$T/nolink.gpu"
sed 's/^intra_topology .*/intra_topology = torus  # source: x/' "$T/mi300x.gpu" >"$T/torus.gpu"
expect_fail "--gpu FILE: an unknown topology" "intra_topology: 'torus' is not switch or mesh" --model 8B --gpus 8 --cluster mi300x-node --gpu "$T/torus.gpu"
grep -v '^intra_topology' "$T/mi300x.gpu" >"$T/linkonly.gpu"
expect_fail "--gpu FILE: link_bw without a mesh" "link_bw is a mesh's peer link" --model 8B --gpus 8 --cluster mi300x-node --gpu "$T/linkonly.gpu"

# the host's figures (#29): dispatch_block and coll_dispatch are optional (absent: 4.8 and 4.4 bare ops, the
# H100's measured ratios, so a file without them prices the host as its dispatch says); a bad one exits 2
"$Z" gpus h100-sxm5-80gb >"$T/h100host.gpu"
grep -Eq '^dispatch_block += 47 us +# source: measured \(gpus/measured/h100-sxm5-80gb-2026-11-27.json' "$T/h100host.gpu" &&
  grep -Eq '^coll_dispatch += 43.5 us +# source: measured' "$T/h100host.gpu" &&
  good "the H100 file carries the measured host figures with their source" || ko "H100 host figures: $(grep dispatch "$T/h100host.gpu")"
sed -E 's/^dispatch_block += 47 us/dispatch_block = -5 us/' "$T/h100host.gpu" >"$T/negblock.gpu"
expect_fail "--gpu FILE: a negative dispatch_block" "dispatch_block: -5 us is negative" --model 1.5B --gpus 8 --gpu "$T/negblock.gpu"
sed -E 's/^coll_dispatch += 43.5 us/coll_dispatch = 43.5/' "$T/h100host.gpu" >"$T/nounit.gpu"
expect_fail "--gpu FILE: coll_dispatch without a unit" "coll_dispatch: '43.5' needs a unit" --model 1.5B --gpus 8 --gpu "$T/nounit.gpu"
grep -Ev '^(dispatch_block|coll_dispatch) ' "$T/h100host.gpu" >"$T/nohost.gpu"
# a small-work plan (350M-like at TP 8, one sequence): host-bound, the GPU's wait in the JSON breakdown;
# without the measured figures the ratios give 48 and 44 us: within 3% of the measured file's step
printf '{"model_type":"gpt2","n_layer":24,"n_embd":1024,"n_head":16,"n_positions":1024,"vocab_size":50257}' >"$T/350m.json"
small=(--model "$T/350m.json" --gpus 8 --stage 1 --mp 8 --micro-batch 1 --grad-accum 1 --no-checkpoint --exact --top 1 --format json)
if "$Z" "${small[@]}" --gpu h100-sxm5-80gb >"$T/hw.json" 2>"$T/err" && "$Z" "${small[@]}" --gpu "$T/nohost.gpu" >"$T/hr.json" 2>>"$T/err" &&
   "$Z" "${small[@]}" --gpu h100-sxm5-80gb --analytic >"$T/ha.json" 2>>"$T/err"; then
  python3 - "$T/hw.json" "$T/hr.json" "$T/ha.json" <<'PY' && good "host_wait in the JSON breakdown, the ratios' step within 3%" || ko "host_wait: $(cat "$T/err")"
import json, sys
w, r, a = (json.load(open(f))["plans"][0] for f in sys.argv[1:4])
b = w["time_breakdown_s"]
assert b["host_wait"] > 0.5 * w["step_time_s"], b            # host-bound: the GPU waits most of the step
assert "host_wait" not in a["time_breakdown_s"], a["time_breakdown_s"]  # the analytic estimate has no queue
assert abs(r["step_time_s"] / w["step_time_s"] - 1) < 0.03, (r["step_time_s"], w["step_time_s"])
PY
else
  ko "small-work plan: $(cat "$T/err")"
fi

finish
