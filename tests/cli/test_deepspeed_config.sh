#!/usr/bin/env bash
# Every DeepSpeed config zplan emits (--emit-ds-config) loads with DeepSpeed's own config class
# (deepspeed.runtime.config.DeepSpeedConfig, which reads it with hjson and checks the batch sizes against
# the data-parallel world size) and says the same plan: ZeRO stage, offload devices, bf16/fp16, the
# gradient accumulation type, the batch sizes. Skipped, with a message, where DeepSpeed is not installed
# (it needs PyTorch): ZP_DEEPSPEED_PYTHON names a python that has it (default python3).
# Usage: test_deepspeed_config.sh ZPLAN
set -u
Z="$1"
PY="${ZP_DEEPSPEED_PYTHON:-python3}"
if ! "$PY" -c 'import deepspeed.runtime.config' >/dev/null 2>&1; then
  echo "SKIP: DeepSpeed is not installed for $PY (pip install torch deepspeed, or set ZP_DEEPSPEED_PYTHON);" \
       "the emitted configs are checked by zplan's own reader in tests/sim/test_dsconfig.c"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
# name | zplan options (an --analytic what-if; its recommended plan is emitted)
cases=(
  "bf16-a100|--model 13B --gpus 64 --cluster dgx-a100 --stage 3 --offload none"
  "fp16-v100|--model 8B --gpus 64 --stage 2 --mp 4 --pa"
  "offload-params|--model 20B --gpus 32 --cluster dgx-h100 --stage 3 --offload params --mp 1"
  "offload-optimizer|--model 13B --gpus 16 --stage 2 --offload optimizer --mp 1 --global-batch 512"
  "fp32-grads|--model 13B --gpus 64 --cluster dgx-h100 --precision bf16 --grad-accum-dtype fp32 --stage 1 --mp 2"
  "fp32|--model 1.5B --gpus 16 --precision fp32 --stage 1 --mp 1"
)
for c in "${cases[@]}"; do
  name="${c%%|*}"
  opts="${c#*|}"
  # shellcheck disable=SC2086
  if ! "$Z" $opts --analytic --format json --emit-ds-config "$T/$name.json" >"$T/$name.plan.json" 2>"$T/err"; then
    fail=$((fail + 1)); echo "FAIL: $name: zplan: $(cat "$T/err")"; continue
  fi
  if "$PY" - "$T/$name.json" "$T/$name.plan.json" >"$T/out" 2>&1 <<'PY'
import json, sys
import deepspeed.comm as dist
from deepspeed.runtime.config import DeepSpeedConfig
cfg_path, plan_path = sys.argv[1], sys.argv[2]
answer = json.load(open(plan_path))
p = answer["plans"][answer["best"]]
# DeepSpeed checks train_batch_size = micro x accumulation x world size (the data-parallel ranks)
dist.get_rank = lambda *a, **k: 0
dist.get_world_size = lambda *a, **k: p["dp"]
c = DeepSpeedConfig(cfg_path)
assert c.world_size == p["dp"], (c.world_size, p["dp"])
assert c.zero_optimization_stage == p["stage"], (c.zero_optimization_stage, p["stage"])
assert c.train_micro_batch_size_per_gpu == p["micro_batch"]
assert c.gradient_accumulation_steps == p["grad_accum"]
assert c.train_batch_size == p["global_batch"]
assert c.bfloat16_config.enabled == (p["precision"] == "bf16"), p["precision"]
assert c.float16_config.enabled == (p["precision"] == "fp16"), p["precision"]
opt = c.zero_config.offload_optimizer
par = c.zero_config.offload_param
dev = lambda o: (str(o.device.value) if hasattr(o.device, "value") else str(o.device)) if o else "none"
assert (dev(opt) == "cpu") == (p["offload"] in ("optimizer", "params")), dev(opt)
assert (dev(par) == "cpu") == (p["offload"] == "params"), dev(par)
acc = str(c.grad_accum_dtype) if c.grad_accum_dtype else None
assert (acc == "fp32") == (p["grad_bytes"] == 4 and p["precision"] != "fp32"), acc
assert c.activation_checkpointing_config.partition_activations == bool(p["pa"])
print("ok: stage %d, %s, offload %s, micro %d x %d x DP %d" % (p["stage"], p["precision"], p["offload"],
      p["micro_batch"], p["grad_accum"], p["dp"]))
PY
  then
    pass=$((pass + 1)); echo "  $name: DeepSpeedConfig $(tail -1 "$T/out")"
  else
    fail=$((fail + 1)); echo "FAIL: $name: $(tail -5 "$T/out")"; cat "$T/$name.json"
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
