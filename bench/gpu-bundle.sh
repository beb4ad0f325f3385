#!/usr/bin/env bash
# bench/gpu-bundle.sh [DIR] — the GPU bundle end to end on this machine (no GPU needed; README, "The GPU check"):
# builds it (scripts/gpu-bundle DIR, default gpu-bundle; 1-2 minutes on 2 cores, too slow for the test suite,
# whose tests/gpu check the rules on a fixture), checks its rules, then runs a copy of it moved elsewhere
# with the system's Open MPI, PMIx, SimGrid, GSL, OpenBLAS, jansson, Criterion, hwloc and libevent hidden
# (a private mount namespace: as root with unshare; otherwise only moved): the what-if (SimGrid), Open MPI's
# paths, mpirun -np 2 zplan exec on the cpu backend, a singleton calibration, the CUDA tests (skipped
# without a GPU), the device probe, and gpu-check's skipped path. Prints the bundle's size and libraries.
# Exit 0 when all of it works.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-gpu-bundle}"
scripts/gpu-bundle "$dir"
"$dir/libexec/bundle-rules" "$dir"

T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cp -a "$dir" "$T/moved-bundle"
cat >"$T/relocated.sh" <<'EOF'
#!/usr/bin/env bash
# runs inside the namespace (or not): the moved bundle, the system's copies out of reach
set -euo pipefail
b="$1"
T="$2"
if [ "${HIDE:-0}" = 1 ]; then
  e="$(mktemp -d)"
  for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/share/openmpi /etc/openmpi /usr/lib/x86_64-linux-gnu/pmix2 \
    /usr/lib/x86_64-linux-gnu/openblas-pthread; do
    [ ! -d "$d" ] || mount --bind "$e" "$d"
  done
  for f in /usr/bin/orted /usr/bin/orterun /usr/bin/ompi_info; do [ ! -e "$f" ] || mount --bind /dev/null "$f"; done
  for l in libsimgrid.so.3.32 libmpi.so.40 libopen-pal.so.40 libopen-rte.so.40 libgsl.so.27 libjansson.so.4 \
    libhwloc.so.15 libevent_core-2.1.so.7 libns3-core.so.37 libcriterion.so.3 libgfortran.so.5 libpmix.so.2; do
    f="$(readlink -f "/usr/lib/x86_64-linux-gnu/$l" 2>/dev/null || true)"
    [ -z "$f" ] || [ ! -e "$f" ] || mount --bind /dev/null "$f"
  done
  echo "system copies hidden: $(ls /usr/lib/x86_64-linux-gnu/openmpi | wc -l) files left in its Open MPI directory"
fi
r="$b/run"
step() { echo "--- $*"; }
step "what-if (SimGrid)"
"$r" zplan --model 100B --gpus 400 --top 1 | grep '^Recommended'
step "Open MPI's directories"
"$r" ompi_info --parsable --path all | grep -E 'pkglibdir|pkgdatadir|sysconfdir' | sort -u
step "mpirun -np 2 zplan exec (cpu backend, stage 3)"
"$r" mpirun --oversubscribe --bind-to none -np 2 zplan exec --model tiny --stage 3 --steps 2 | grep -E '^ +2 |^measured'
step "a help text of Open MPI (relocated help files)"
help="$("$r" mpirun -np 1 /nonexistent 2>&1 || true)"
case "$help" in *"could not access"*) echo "help text found" ;; *) echo "no help text: $help"; exit 1 ;; esac
step "singleton calibration (MPI_Init without mpirun)"
"$r" zplan calibrate --quick --reps 1 --warmup 0 --max-bytes 64K --hidden 64 --tokens 64 -o "$T/cal.json" | head -1
step "CUDA tests (skipped without a GPU)"
"$r" test_kernels_cuda --jobs=1 --ascii 2>&1 | grep Synthesis
rc=0
"$r" test_kernels_cuda_coll || rc=$?
echo "test_kernels_cuda_coll exit $rc (77: skipped)"
step "device probe"
rc=0
"$r" zp_gpu_bench --probe || rc=$?
echo "zp_gpu_bench --probe exit $rc (2 without a GPU)"
step "gpu-check"
rc=0
(cd "$T" && "$b/gpu-check" check-out) || rc=$?
echo "gpu-check exit $rc"
EOF
chmod +x "$T/relocated.sh"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  HIDE=1 unshare -m "$T/relocated.sh" "$T/moved-bundle" "$T"
else
  echo "note: not root or no unshare: the system's libraries stay visible (the bundle's RPATH still comes first)"
  "$T/relocated.sh" "$T/moved-bundle" "$T"
fi
echo "--- the bundle"
. "$dir/share/zplan-bundle/manifest.env"
awk -v s="$(du -sb "$dir" | cut -f1)" -v u="$ZP_BUNDLE_UNPACKED_BYTES" \
  'BEGIN { printf "%.1f MiB carried, %.1f MiB expanded\n", s / 1048576, u / 1048576 }'
echo "CUDA libraries it needs from the GPU machine: $ZP_BUNDLE_EXTERNAL_LIBS"
echo "libraries it carries: $(cd "$dir/lib" && ls | sed 's/\.xz$//' | grep '\.so' | tr '\n' ' ')"
echo "Open MPI plugins: $(ls "$dir/lib/openmpi" | wc -l), PMIx plugins: $(ls "$dir/lib/pmix" | wc -l)"
