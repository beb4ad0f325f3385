#!/bin/sh
# bench/validate.sh [BUILD_DIR] — issue 5's targets, measured on this machine in one run:
#  1. `zplan report validation`: ZeRO stages 0-3 x N in {1, 2, 4} ranks x two model sizes (mini, small):
#     median step-time error (SimGrid prediction on a platform calibrated here vs measured) <= 15%,
#     memory error (memory model vs tracking allocator) <= 5% per category;
#  2. the executed CPU step's tokens/s against PyTorch DDP (gloo, Debian's python3-torch) on the same
#     model, batch and ranks, side by side: target >= 1x.
# Both use one OpenMP/BLAS thread per rank (the validation report explains why).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench_lib.sh"
bench_exec_env "${1:-build}"
models="${ZP_VALIDATE_MODELS:-mini,small}"

echo "== 1. zplan report validation (models $models, N = 1 2 4, stages 0-3) =="
"$zplan" report validation --models "$models" --ranks 1,2,4 --stages 0,1,2,3 --micro-batch 2 --steps 5 --min-seconds 2
rc1=$?

echo
echo "== 2. executed step vs PyTorch DDP (gloo), same model, micro-batch 2 per rank, fp32, Adam =="
py=/usr/bin/python3
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "python3-torch is missing: trying apt-get install -y python3-torch"
    apt-get install -y python3-torch >/dev/null 2>&1 || echo "could not install python3-torch: PyTorch column skipped"
fi
have_torch=0
"$py" -c 'import torch' 2>/dev/null && have_torch=1
printf '%-7s %3s %14s %14s %8s\n' model N "zplan tok/s" "pytorch tok/s" ratio
for m in $(echo "$models" | tr ',' ' '); do
    dims=$("$zplan" models --format csv | awk -F, -v m="$m" '$1 == m {print $2, $3, $4, $5, $6}')
    set -- $dims
    L=$1; H=$2; A=$3; S=$4; V=$5
    for n in 1 2 4; do
        z=$(mpirun $root --oversubscribe --bind-to none -np "$n" "$zplan" exec --model "$m" --stage 0 \
            --micro-batch 2 --steps 6 --format json | sed -n 's/.*"tokens_per_s": *\([0-9.eE+]*\).*/\1/p')
        t="-"
        if [ $have_torch = 1 ]; then
            t=$("$py" "$here/ddp_gpt.py" "$n" "$L" "$H" "$A" "$S" "$V" 2 6 2>/dev/null |
                sed -n 's/.*"tokens_per_s": *\([0-9.eE+]*\).*/\1/p')
        fi
        r=$(awk -v a="$z" -v b="$t" 'BEGIN {if (b + 0 > 0) printf "%.2fx", a / b; else print "-"}')
        printf '%-7s %3d %14.0f %14.0f %8s\n' "$m" "$n" "$z" "${t:-0}" "$r"
    done
done
echo "(zplan: median step without the first, ZeRO stage 0 = DDP's all-reduce; PyTorch: DDP, gloo, torch.set_num_threads(1))"
exit $rc1
