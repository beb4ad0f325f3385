#!/usr/bin/env bash
# bench/kernels.sh [BUILD_DIR] [--quick] — kernel benchmarks of issue 4, measured side by side in
# one run and printed as ratios:
#   - fused Adam (cpu) vs the STREAM copy/triad bandwidth of this run (target >= 80%),
#   - fused Adam vs PyTorch's CPU torch.optim.Adam on the same sizes (target >= 5x),
#   - GEMM through the backend vs OpenBLAS directly (target within 5%),
#   - collectives, nccl-tests style (algbw, busbw), next to memory bandwidth, under mpirun -np 2.
# PyTorch is Debian's python3-torch run with /usr/bin/python3; installed with apt-get when missing.
set -uo pipefail
build="${1:-build}"
quick=""
[ "${2:-}" = "--quick" ] && quick="--quick"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
bk="$build/bench/bench_kernels"
bc="$build/bench/bench_coll"
if [ ! -x "$bk" ]; then
  echo "kernels.sh: $bk not built (meson setup $build && ninja -C $build)" >&2
  exit 2
fi

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$bk" $quick | tee "$out"

# ---- PyTorch CPU Adam on the same sizes ----
py=/usr/bin/python3
echo
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "PyTorch: python3-torch missing; installing it with apt-get"
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  if ! { DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-torch >/dev/null 2>&1 ||
         { $sudo apt-get update -qq >/dev/null 2>&1 &&
           DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-torch >/dev/null 2>&1; }; }; then
    echo "PyTorch: could not install python3-torch; skipping the PyTorch comparison"
  fi
fi
if "$py" -c 'import torch' 2>/dev/null; then
  sizes="$(awk '/^adam /{print $2}' "$out" | tr '\n' ' ')"
  echo "fused Adam vs PyTorch $("$py" -c 'import torch; print(torch.__version__)') torch.optim.Adam (CPU, fp32, $("$py" -c 'import torch; print(torch.get_num_threads())') threads; zplan also writes the fp16 copy)"
  printf "%12s %16s %16s %10s\n" params "zplan params/s" "torch params/s" speedup
  for n in $sizes; do
    torch_rate="$("$py" - "$n" "${quick:+5}" <<'PY'
import sys, time, statistics, torch
n = int(sys.argv[1]); reps = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else 11
p = torch.nn.Parameter(torch.full((n,), 0.5))
p.grad = torch.full((n,), 1e-3)
opt = torch.optim.Adam([p], lr=1e-3)
opt.step()
ts = []
for _ in range(reps):
    t = time.perf_counter(); opt.step(); ts.append(time.perf_counter() - t)
print(n / statistics.median(ts))
PY
)"
    zp_rate="$(awk -v n="$n" '$1=="adam" && $2==n {print $3}' "$out")"
    awk -v n="$n" -v z="$zp_rate" -v t="$torch_rate" 'BEGIN{printf "%12d %16.4g %16.4g %9.1fx\n", n, z, t, z/t}'
  done
fi

# ---- collectives ----
echo
if [ -x "$bc" ]; then
  root_flag=""
  [ "$(id -u)" -eq 0 ] && root_flag="--allow-run-as-root"
  maxb=$((256 * 1024 * 1024))
  [ -n "$quick" ] && maxb=$((16 * 1024 * 1024))
  OMP_NUM_THREADS=1 mpirun $root_flag --oversubscribe -np 2 "$bc" "$maxb"
else
  echo "collectives: built without MPI, skipped"
fi
