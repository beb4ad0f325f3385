#!/usr/bin/env bash
# bench/offload_capacity.sh [ZPLAN] — the largest GPT-2-like model (the paper's size classes) that fits one
# 32 GB V100 of a DGX-2 (1.5 TB of host memory, all of it the job's) with ZeRO-Offload (stage 2, optimizer
# on the host) and ZeRO-3 Offload (stage 3, parameters too), micro-batch 1 with checkpointing, against what
# DeepSpeed documents (13B and 40B). Bisection on the size with the what-if's memory model (--analytic).
set -euo pipefail
Z="${1:-build/src/zplan}"
[ -x "$Z" ] || { echo "bench/offload_capacity.sh: $Z not found: run scripts/build first" >&2; exit 2; }
fits() { # fits SIZE OPTIONS...: "true PARAMS GPU_GB HOST_GB" or "false ..."
  local size=$1; shift
  "$Z" --model "$size" --gpus 1 --micro-batch 1 --analytic --format csv "$@" |
    awk -F, 'NR==1{for(i=1;i<=NF;i++)h[$i]=i; next} NR==2{print $h["fits"]; exit}'
}
largest() { # largest OPTIONS...: bisect the size (billions) to 0.1B
  local lo=1 hi=2
  while [ "$(fits "${hi}B" "$@")" = true ]; do lo=$hi; hi=$((hi * 2)); done
  lo=$((lo * 10)); hi=$((hi * 10))
  while [ $((hi - lo)) -gt 1 ]; do
    local mid=$(((lo + hi) / 2))
    if [ "$(fits "$(awk -v m=$mid 'BEGIN{printf "%.1fB", m/10}')" "$@")" = true ]; then lo=$mid; else hi=$mid; fi
  done
  awk -v m=$lo 'BEGIN{printf "%.1f", m/10}'
}
printf '%-58s %12s %12s\n' "one V100-32GB (dgx2 preset), micro-batch 1" "zplan (B)" "DeepSpeed"
printf '%-58s %12s %12s\n' "ZeRO-Offload: --stage 2 --offload optimizer" "$(largest --stage 2 --offload optimizer)" "13B"
printf '%-58s %12s %12s\n' "ZeRO-3 Offload: --stage 3 --offload params, 1.5 TB host" \
  "$(largest --stage 3 --offload params --host-mem 1.5T)" "40B"
printf '%-58s %12s %12s\n' "ZeRO-Infinity: the same with --offload-device nvme" \
  "$(largest --stage 3 --offload params --host-mem 1.5T --offload-device nvme)" "-"
echo "(sizes are zplan's GPT-2-like models of about that many parameters: zplan models; the exact count is printed by"
echo " zplan --model SIZE --gpus 1 ...)"
