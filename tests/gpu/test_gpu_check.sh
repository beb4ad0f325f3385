#!/usr/bin/env bash
# gpu-check without a GPU (README, "The GPU check"): on a bundle skeleton (scripts/gpu-bundle --skeleton: the
# scripts, no programs), its skipped path (exit 0, a summary that says skipped, OUTDIR replaced whole and
# atomically), its bad inputs (a fake nvidia-smi reporting an old driver or a small GPU, missing CUDA
# libraries, a bad OUTDIR, a runtime that cannot use the GPU: exit 2, nothing written, no temporary left),
# where it finds CUDA's libraries (Python wheels), and a whole run on a fake bundle whose programs print
# canned results (the steps, the summary's figures and targets, the exit codes, the three output files).
# Usage: test_gpu_check.sh SOURCE_ROOT
set -uo pipefail
S="$1"
T="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
# shellcheck source=tests/gpu/check_lib.sh
. "$(dirname "$0")/check_lib.sh"
leftovers() { find "$T/w" -maxdepth 1 -name '.*' ! -name . | grep -c . ; }

"$S/scripts/gpu-bundle" --skeleton "$T/b" >/dev/null || { echo "FAIL: gpu-bundle --skeleton"; exit 1; }
mkdir -p "$T/w" "$T/nodev" "$T/empty" "$T/cudalibs"
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do : >"$T/cudalibs/$so"; done
fake_smi() { # fake_smi EXIT_CODE OUTPUT: an nvidia-smi
  printf '#!/bin/sh\nprintf "%%s\\n" "%s"\nexit %s\n' "$2" "$1" >"$T/smi"
  chmod +x "$T/smi"
}
gc() { # gc BUNDLE ARGS...: gpu-check in $T/w, output in $T/out.txt, status in $rc
  (cd "$T/w" && "$@") >"$T/out.txt" 2>&1
  rc=$?
}
H100="NVIDIA H100 80GB HBM3, 580.159.04, 81559"

# ---- skipped: no GPU ----
mkdir -p "$T/w/out" && echo old >"$T/w/out/old-file"
gc env ZP_GPU_CHECK_NVIDIA_SMI=/nonexistent ZP_GPU_CHECK_DEV_DIR="$T/nodev" "$T/b/gpu-check" out
check "no GPU: exit 0" '[ $rc = 0 ]'
check "no GPU: says skipped" 'grep -q "skipped: no GPU" "$T/out.txt"'
check "no GPU: summary.json says skipped" 'grep -q "\"status\": \"skipped\"" "$T/w/out/summary.json"'
check "no GPU: summary.md says skipped" 'grep -q "^# zplan GPU check: skipped" "$T/w/out/summary.md"'
check "no GPU: OUTDIR replaced whole (old file gone, two files)" '[ ! -e "$T/w/out/old-file" ] && [ "$(ls "$T/w/out" | wc -l)" = 2 ]'
check "no GPU: no temporary directory left beside OUTDIR" '[ "$(leftovers)" = 0 ]'
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/w/out/summary.json" 2>/dev/null &&
  ok "no GPU: summary.json is JSON" || no "no GPU: summary.json is JSON"

fake_smi 9 "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
gc env ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" "$T/b/gpu-check" out2
check "nvidia-smi failing: skipped, exit 0, its message kept" \
  '[ $rc = 0 ] && grep -q "couldn.t communicate" "$T/w/out2/summary.md"'
fake_smi 0 "No devices were found"
gc env ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" "$T/b/gpu-check" out3
check "nvidia-smi listing no device: skipped" '[ $rc = 0 ] && grep -q "lists no device" "$T/w/out3/summary.json"'

# ---- bad input: exit 2, OUTDIR untouched, nothing left ----
mkdir -p "$T/w/keep" && echo old >"$T/w/keep/old-file"
bad_case() { # bad_case NAME PATTERN ENV...
  local name="$1" pat="$2"
  shift 2
  gc env "$@" "$T/b/gpu-check" keep
  check "$name: exit 2" '[ $rc = 2 ]'
  check "$name: message" 'grep -q -- "$pat" "$T/out.txt"'
  check "$name: OUTDIR untouched, no temporary left" \
    '[ "$(ls "$T/w/keep")" = old-file ] && [ "$(leftovers)" = 0 ]'
}
fake_smi 0 "NVIDIA H100 80GB HBM3, 470.82.01, 81559"
bad_case "old driver" "driver 470.82.01 is older than 580.65.06" ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" \
  ZP_GPU_CHECK_CUDA_LIBDIRS="$T/cudalibs"
fake_smi 0 "Tesla T4, 580.159.04, 15360"
bad_case "small GPU" "has 15360 MiB of memory; the check needs at least 16384 MiB" ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" \
  ZP_GPU_CHECK_CUDA_LIBDIRS="$T/cudalibs"
fake_smi 0 "$H100"
bad_case "missing CUDA libraries" "missing CUDA libraries: libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2" \
  ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" ZP_GPU_CHECK_CUDA_LIBDIRS="$T/empty"
rm "$T/cudalibs/libnccl.so.2"
bad_case "one CUDA library missing" "missing CUDA libraries: libnccl.so.2 (looked in" \
  ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" ZP_GPU_CHECK_CUDA_LIBDIRS="$T/cudalibs"
: >"$T/cudalibs/libnccl.so.2"
bad_case "a skeleton has no programs" "skeleton bundle" ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" \
  ZP_GPU_CHECK_CUDA_LIBDIRS="$T/cudalibs"
gc "$T/b/gpu-check" "$T/nowhere/out"
check "OUTDIR in a missing directory: exit 2" '[ $rc = 2 ] && grep -q "does not exist" "$T/out.txt"'
: >"$T/w/afile"
gc "$T/b/gpu-check" afile
check "OUTDIR is a file: exit 2" '[ $rc = 2 ] && grep -q "not a directory" "$T/out.txt"'
gc "$T/b/gpu-check" --bogus
check "unknown option: exit 2" '[ $rc = 2 ]'

# ---- CUDA libraries from Python's nvidia wheels ----
mkdir -p "$T/site/nvidia/cu13/lib" "$T/site/nvidia/nccl/lib"
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do : >"$T/site/nvidia/cu13/lib/$so"; done
: >"$T/site/nvidia/nccl/lib/libnccl.so.2"
printf '#!/bin/sh\necho "%s"\n' "$T/site" >"$T/python3"
chmod +x "$T/python3"
gc env LD_LIBRARY_PATH= ZP_GPU_CHECK_CUDA_HOME="$T/nocuda" ZP_GPU_CHECK_PYTHON="$T/python3" "$T/b/gpu-check" --cuda-libs
check "wheels: every library found in site-packages/nvidia/*/lib" \
  '[ $rc = 0 ] && [ "$(grep -c "=$T/site/nvidia/" "$T/out.txt")" = 4 ] && grep -q "libnccl.so.2=$T/site/nvidia/nccl/lib/" "$T/out.txt"'
gc env LD_LIBRARY_PATH="$T/cudalibs" ZP_GPU_CHECK_CUDA_HOME="$T/nocuda" ZP_GPU_CHECK_PYTHON="$T/python3" "$T/b/gpu-check" --cuda-libs
check "LD_LIBRARY_PATH comes before the wheels" '[ $rc = 0 ] && [ "$(grep -c "=$T/cudalibs/" "$T/out.txt")" = 4 ]'

# ---- a whole run on a fake bundle: programs that print canned results ----
cp -a "$T/b" "$T/f"
sed -i 's/^ZP_BUNDLE_KIND=.*/ZP_BUNDLE_KIND=full/' "$T/f/share/zplan-bundle/manifest.env"
cat >"$T/f/bin/zp_gpu_bench" <<'EOF'
#!/bin/sh
if [ "$1" = --probe ]; then
  [ -z "${FAKE_PROBE_FAIL:-}" ] || { echo "zp_gpu_bench: no CUDA device: CUDA driver version is insufficient for CUDA runtime version" >&2; exit 2; }
  echo "NVIDIA H100 80GB HBM3 (CUDA driver API 13000, runtime 13000)"; exit 0
fi
while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
cat >"$out" <<'J'
{"device": {"name": "NVIDIA H100 80GB HBM3", "cc_major": 9, "cc_minor": 0, "sms": 132, "driver_api": 13000,
  "runtime_api": 13000, "nccl": "NCCL 2.28.3"},
 "copy": {"bytes": 1073741824, "memcpy_gbs": 2900.0, "kernel_gbs": 3000.0, "reference_gbs": 3000.0},
 "adam": {"bytes_per_param": 30, "points": [{"params": 268435456, "gbs": 2700.0}], "gbs": 2700.0,
  "gbs_with_check": 2400.0, "copy_gbs": 3000.0, "fraction_of_copy": 0.9},
 "gemm": {"tokens": 8192,
  "fp16": {"shapes": [{"name": "qkv", "fraction": 0.97}, {"name": "proj", "fraction": 0.93}], "fraction": 0.95, "best_backend_tflops": 700.0},
  "bf16": {"shapes": [{"name": "qkv", "fraction": 0.88}], "fraction": 0.85, "best_backend_tflops": 690.0},
  "fp32": {"shapes": [], "fraction": 1.0, "best_backend_tflops": 350.0}},
 "host_device": {"h2d_pinned_gbs": 50.0, "d2h_pinned_gbs": 52.0, "h2d_pageable_gbs": 20.0},
 "nccl": {"allreduce": [{"bytes": 1073741824, "time_s": 0.001, "algbw_gbs": 1000.0}], "ranks": 1}}
J
EOF
cat >"$T/f/bin/test_kernels_cuda" <<'EOF'
#!/bin/sh
for a in "$@"; do case "$a" in --json=*) out="${a#--json=}" ;; esac; done
n="${FAKE_TEST_FAILS:-0}"
cat >"$out" <<J
{"id": "Criterion v2.4.1", "passed": $((16 - n)), "failed": $n, "errored": 0, "skipped": 0,
 "test_suites": [{"name": "cuda", "tests": [{"name": "gemm_fp16", "status": "$([ "$n" = 0 ] && echo PASSED || echo FAILED)",
   "messages": ["C[0,0] = 1, reference 2"]}]}]}
J
echo "[====] Synthesis: Tested: 16 | Passing: $((16 - n)) | Failing: $n | Crashing: 0"
[ "$n" = 0 ]
EOF
printf '#!/bin/sh\necho "NCCL collectives on 1 rank: 120 passed, 0 failed"\n' >"$T/f/bin/test_kernels_cuda_coll"
cat >"$T/f/bin/zplan" <<'EOF'
#!/bin/sh
cmd="$1"
shift
while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
case "$cmd" in
  calibrate) echo '{"backend": "cuda", "compute": {"peak_flops_fp16": 6.5e14}}' >"$out" ;;
  clusters) echo '{"rows": [{"name": "dgx-h100", "peak_tflops": 989.0, "pcie_gbs": 64.0}]}' >"$out" ;;
  exec) cat >"$out" <<'J'
{"config": {"model": "small"}, "steps": [{"step": 1, "loss": 8.3, "time_s": 0.02}, {"step": 2, "loss": 8.1, "time_s": 0.01}],
 "tokens_per_s": 100000.0, "memory_peak_gb": {"total": 0.100},
 "validation": {"predicted_step_s": 0.0105, "measured_step_s": 0.0100, "step_error": 0.05,
  "predicted_memory_gb": {"total": 0.101}, "memory_error": {"total": 0.01}}}
J
  ;;
esac
EOF
printf '#!/bin/sh\necho "zplan exec: rank 1: ncclCommInitRank failed: invalid usage (Duplicate GPU detected)" >&2\nexit 1\n' \
  >"$T/f/bin/mpirun"
chmod +x "$T/f/bin/"*
run_fake() { gc env ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" ZP_GPU_CHECK_CUDA_LIBDIRS="$T/cudalibs" "$@" "$T/f/gpu-check" run; }
run_fake
check "fake run: exit 0" '[ $rc = 0 ]'
check "fake run: OUTDIR holds summary.md, summary.json, raw.tar.gz" \
  '[ "$(ls "$T/w/run" | tr "\n" " ")" = "raw.tar.gz summary.json summary.md " ] && [ "$(leftovers)" = 0 ]'
tar -tzf "$T/w/run/raw.tar.gz" >"$T/list.txt" 2>&1
check "fake run: raw.tar.gz holds the logs and raw results" \
  'grep -q "logs/tests_cuda.log" "$T/list.txt" && grep -q "raw/bench.json" "$T/list.txt"'
py_check() { # py_check NAME EXPR: a Python expression over s = summary.json
  if python3 -c "import json,sys; s = json.load(open(sys.argv[1])); t = {x['target']: x for x in s['targets']}; sys.exit(0 if ($2) else 1)" \
    "$T/w/run/summary.json"; then ok "$1"; else no "$1"; fi
}
py_check "fake run: status passed, device and driver" \
  's["status"] == "passed" and s["device"]["name"].startswith("NVIDIA H100") and s["device"]["driver"] == "580.159.04"'
py_check "fake run: Adam target 0.90 of the copy, met" \
  'abs(t["fused Adam / plain device copy bandwidth"]["value"] - 0.9) < 1e-9 and t["fused Adam / plain device copy bandwidth"]["met"]'
py_check "fake run: GEMM fp16 0.95 met, bf16 0.85 missed" \
  't["GEMM fp16 through the backend / plain cublasGemmEx loop"]["met"] and t["GEMM bf16 through the backend / plain cublasGemmEx loop"]["met"] is False'
py_check "fake run: exec step within 10% and memory within 3% at every stage" \
  'all(x["met"] for k, x in t.items() if k.startswith("exec --validate") and "1 rank" in k) and len([k for k in t if k.startswith("exec --validate")]) == 8'
py_check "fake run: two ranks on one GPU recorded as not run, not failed" \
  'not any(e["ok"] for e in s["exec"] if e["ranks"] == 2) and s["failed_steps"] == []'
py_check "fake run: figures measured against the dgx-h100 preset" \
  'any(f["figure"].startswith("GEMM fp16") and f["predicted"] == 989.0 for f in s["figures"])'
check "fake run: summary.md prints the targets as fractions" \
  'grep -q "| fused Adam / plain device copy bandwidth | 0.9 | >= 0.80 | yes |" "$T/w/run/summary.md"'
run_fake ZP_GPU_CHECK_STRICT=1
check "fake run, strict: a missed target exits 1, summary still written" \
  '[ $rc = 1 ] && grep -q "\"status\": \"failed\"" "$T/w/run/summary.json"'
run_fake FAKE_TEST_FAILS=1
check "fake run, a CUDA test failing: exit 1, the failure in the summary" \
  '[ $rc = 1 ] && grep -q "cuda::gemm_fp16 FAILED" "$T/w/run/summary.md"'
run_fake ZP_GPU_CHECK_BUDGET_S=20
check "fake run past its time budget: steps not run, named, exit 1" \
  '[ $rc = 1 ] && grep -q "| tests_cuda | not run | .*time budget" "$T/w/run/summary.md"'
echo keep >"$T/w/run/marker"
run_fake FAKE_PROBE_FAIL=1
check "fake run, the runtime cannot use the GPU: exit 2, OUTDIR untouched" \
  '[ $rc = 2 ] && grep -q "cannot use the GPU: .*insufficient" "$T/out.txt" && [ -e "$T/w/run/marker" ] && [ "$(leftovers)" = 0 ]'

# interrupted in the middle (a step that hangs; the whole process group told to stop): OUTDIR as it was,
# no temporary left
cp "$T/f/bin/test_kernels_cuda" "$T/f/bin/test_kernels_cuda.real"
printf '#!/bin/sh\nsleep 30\n' >"$T/f/bin/test_kernels_cuda"
(cd "$T/w" && exec setsid env ZP_GPU_CHECK_NVIDIA_SMI="$T/smi" ZP_GPU_CHECK_CUDA_LIBDIRS="$T/cudalibs" \
  "$T/f/gpu-check" run >"$T/out.txt" 2>&1) &
gpid=$!
for _ in $(seq 50); do grep -q "gpu-check: tests_cuda" "$T/out.txt" 2>/dev/null && break; sleep 0.1; done
kill -TERM -- "-$gpid" 2>/dev/null
wait "$gpid"
rc=$?
mv "$T/f/bin/test_kernels_cuda.real" "$T/f/bin/test_kernels_cuda"
check "interrupted: non-zero exit, OUTDIR as it was, no temporary left" \
  '[ $rc != 0 ] && [ -e "$T/w/run/marker" ] && [ -e "$T/w/run/summary.md" ] && [ "$(leftovers)" = 0 ]'

# from a source archive (git archive: no .git), as from a checkout: the bundle says its commit is unknown
if command -v git >/dev/null && git -C "$S" rev-parse HEAD >/dev/null 2>&1; then
  mkdir -p "$T/arch"
  git -C "$S" ls-files -z scripts | (cd "$S" && xargs -0 tar -cf -) | tar -xf - -C "$T/arch"
  out=$("$T/arch/scripts/gpu-bundle" --skeleton "$T/arch/b" 2>&1); arc=$?
  check "gpu-bundle from an archive: exit 0, commit unknown ($arc: $out)" \
    '[ $arc = 0 ] && grep -q "ZP_BUNDLE_COMMIT=unknown" "$T/arch/b/share/zplan-bundle/"*'
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
