#!/usr/bin/env bash
# Limits (issue 7): absurd sizes give a clear error (exit 2, one "zplan: ..." line) or a correct answer
# (exit 0) — never a crash, a hang, an overflow, or NaN/inf in any output format.
# Usage: test_limits.sh ZPLAN
# Prints one line per input with its outcome, then "bad inputs tried: N".
set -u
Z="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0 tried=0
FORMATS=(text md csv json html)

ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
# heavy "description" EXPECT args...: try in text and JSON only, for inputs whose search takes seconds (1e8
# GPUs, a 2^30 sequence): the other renderers print the same figures, and every other input runs them all
heavy() { local TRY_FORMATS=(text json); try "$@"; }

# try "description" EXPECT args... ; EXPECT is 0, 2 or 02 (either). Runs every output format (unless
# the args give --format, or heavy sets TRY_FORMATS), each within 120 s; checks the exit code, that a failure says why in one
# "zplan:" line and prints nothing on stdout, and that no output shows a non-finite number.
try() {
  local what="$1" expect="$2"; shift 2
  tried=$((tried + 1))
  local fmts=("${TRY_FORMATS[@]:-${FORMATS[@]}}") a rc first_rc="" bad="" msg=""
  for a in "$@"; do [ "$a" = "--format" ] && fmts=(given); done
  for f in "${fmts[@]}"; do
    if [ "$f" = given ]; then
      timeout 120 "$Z" "$@" >"$T/out" 2>"$T/err"
    else
      timeout 120 "$Z" "$@" --format "$f" >"$T/out" 2>"$T/err"
    fi
    rc=$?
    [ -z "$first_rc" ] && first_rc=$rc
    if [ "$rc" -ne "$first_rc" ]; then bad="exit $rc in $f but $first_rc before"; break; fi
    case "$rc" in
      0|3) ;; # an answer: a plan, or that none fits and what would
      2) if ! grep -q '^zplan: ' "$T/err" || [ -s "$T/out" ]; then bad="exit 2 without a 'zplan:' message or with output"; break; fi
         msg=$(grep '^zplan: ' "$T/err" | tail -1 | cut -c8-110)
         break ;; # an input error does not depend on the format
      124) bad="no answer within 120 s ($f)"; break ;;
      *) bad="exit $rc ($f): $(tail -2 "$T/err" | tr '\n' ' ' | cut -c1-200)"; break ;;
    esac
    if grep -Eqiw 'nan|-nan|inf|-inf|infinity' "$T/out"; then
      bad="non-finite number in the $f output: $(grep -Eoiw -m1 '.{0,40}(nan|inf|infinity).{0,20}' "$T/out" | head -1)"
      break
    fi
  done
  if [ -z "$bad" ] && [ "$expect" != 02 ] && [ "$first_rc" != "$expect" ]; then
    bad="exit $first_rc, expected $expect: $(head -1 "$T/err" | cut -c1-150)"
  fi
  if [ -n "$bad" ]; then
    ko "$what: $bad"
  else
    pass=$((pass + 1))
    if [ "$first_rc" = 2 ]; then
      printf '  bad input %-44s -> exit 2: %s\n' "$what" "$msg"
    else
      printf '  bad input %-44s -> exit %s: answered, finite in %s\n' "$what" "$first_rc" "${fmts[*]}"
    fi
  fi
}

hf() { # hf NAME JSON: a config.json
  printf '%s\n' "$2" >"$T/$1.json"
  echo "$T/$1.json"
}

echo "== absurd model sizes"
try "1e30 parameters"                      2  --model 1e30 --gpus 400
try "1000T parameters (the limit)"         02 --model 1000T --gpus 1e8 --analytic
try "1e-9 parameters"                      2  --model 1e-9 --gpus 8
try "a bare number, no unit"               2  --model 1 --gpus 1 --analytic
try "1K parameters"                        0  --model 1K --gpus 1 --analytic
try "0 parameters"                         2  --model 0 --gpus 1
try "size 1e300T"                          2  --model 1e300T --gpus 8
try "config.json with n_layer 0"           2  --model "$(hf zero '{"n_layer": 0, "n_embd": 768, "n_head": 12}')" --gpus 8
try "config.json with 1e15 layers"         2  --model "$(hf layers '{"n_layer": 1000000000000000, "n_embd": 768, "n_head": 12}')" --gpus 8
try "config.json with hidden 2^31-1"       2  --model "$(hf hidden '{"n_layer": 2, "n_embd": 2147483647, "n_head": 1}')" --gpus 8
try "config.json with vocab 2^31-1"        3  --model "$(hf vocab '{"n_layer": 2, "n_embd": 768, "n_head": 12, "vocab_size": 2147483647}')" --gpus 64 --analytic
try "config.json with vocab 2^63-1"        2  --model "$(hf vocab63 '{"n_layer": 2, "n_embd": 768, "n_head": 12, "vocab_size": 9223372036854775807}')" --gpus 64
try "config.json with seq 2^31-1"          3  --model "$(hf seq '{"n_layer": 2, "n_embd": 768, "n_head": 12, "n_positions": 2147483647}')" --gpus 64 --analytic
try "config.json with 1e308 layers (real)" 2  --model "$(hf real '{"n_layer": 1e308, "n_embd": 768, "n_head": 12}')" --gpus 8
try "config.json with -1 heads"            2  --model "$(hf neg '{"n_layer": 2, "n_embd": 768, "n_head": -1}')" --gpus 8

echo "== absurd clusters"
try "1e9 GPUs"                             2  --model 100B --gpus 1e9
heavy "1e8 GPUs (the limit)"                 0  --model 100B --gpus 1e8 --analytic
heavy "1e8 GPUs of a 1T model"               0  --model 1T --gpus 1e8
try "0 GPUs"                               2  --model 100B --gpus 0
try "1 byte of GPU memory"                 2  --model 100B --gpus 400 --gpu-mem 1
try "1 MB of GPU memory, 2 GB reserved"    2  --model 100B --gpus 400 --gpu-mem 1M
try "1 MB of GPU memory (nothing fits)"    3  --model 100B --gpus 400 --gpu-mem 1M --reserve 0
try "1e300 bytes of GPU memory"            0  --model 100B --gpus 400 --gpu-mem 1e300 --analytic
try "1e301 bytes of GPU memory"            2  --model 100B --gpus 400 --gpu-mem 1e301
try "MP 1e8 on 1e8 GPUs"                   2  --model 100B --gpus 1e8 --mp 1e8

echo "== absurd batches, sequences, buckets, options"
heavy "sequence 2^30"                        3  --model 1.5B --gpus 64 --seq 1Gi --analytic
try "sequence 2^31"                        2  --model 1.5B --gpus 64 --seq 2Gi
try "micro-batch 2^20"                     3  --model 1.5B --gpus 64 --micro-batch 1Mi --analytic
try "micro-batch 1e9"                      2  --model 1.5B --gpus 64 --micro-batch 1e9
try "global batch 2^50 on MP 1"            0  --model 1.5B --gpus 64 --global-batch 1125899906842624 --mp 1 --analytic
try "global batch 2^60"                    2  --model 1.5B --gpus 64 --global-batch 1152921504606846976
try "bucket 1e15 elements"                 0  --model 1.5B --gpus 64 --bucket 1e15 --analytic
try "bucket 1e16 elements"                 2  --model 1.5B --gpus 64 --bucket 1e16
try "bucket 0"                             2  --model 1.5B --gpus 64 --bucket 0
try "--top 1e9"                            2  --model 1.5B --gpus 64 --top 1e9
try "--top 100000"                         0  --model 1.5B --gpus 64 --top 100000 --analytic
try "--jobs 1e9"                           2  --model 1.5B --gpus 64 --jobs 1e9
try "--stage 1e300"                        2  --model 1.5B --gpus 64 --stage 1e300
try "--stage 9223372036854775807"          2  --model 1.5B --gpus 64 --stage 9223372036854775807
try "--mp 9223372036854775808"             2  --model 1.5B --gpus 64 --mp 9223372036854775808

echo "== DeepSpeed configs and profiles with extreme values"
printf '{"train_batch_size": 1e15, "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "reduce_bucket_size": 1e15}}\n' >"$T/ds-huge.json"
try "DeepSpeed train_batch_size 1e15"      02 --model 1.5B --gpus 64 --ds-config "$T/ds-huge.json" --analytic
printf '{"train_batch_size": 1e300}\n' >"$T/ds-1e300.json"
try "DeepSpeed train_batch_size 1e300"     2  --model 1.5B --gpus 64 --ds-config "$T/ds-1e300.json"
printf '{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1000000000}\n' >"$T/ds-gas.json"
try "DeepSpeed 1e9 accumulation steps"     02 --model 1.5B --gpus 64 --ds-config "$T/ds-gas.json" --analytic

echo "== reports"
try "table1 of 1e15 parameters on DP 1e8"  0  report table1 --models 1e15 --dp 1e8
try "table1 of 1e16 parameters"            2  report table1 --models 1e16
try "table1 on DP 1e9"                     2  report table1 --dp 1e9
try "table2 with 1 byte per GPU"           02 report table2 --gpu-mem 1
try "table2 with 1e300 bytes per GPU"      02 report table2 --gpu-mem 1e300
try "table2 with K = 1e-300"               02 report table2 --k 1e-300
try "table2 with K = 1e300"                2  report table2 --k 1e300
heavy "scaling on 1 and 1e8 GPUs"            0  report scaling --model 100B --gpus 1,1e8 --analytic
try "memory of 1T on 1 GPU"                0  report memory --model 1T --gpus 1 --analytic

echo "bad inputs tried: $tried"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
