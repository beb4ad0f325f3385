#!/usr/bin/env bash
# Atomic outputs through the CLI (issue 7): a zplan killed while it writes a report, a trace or a profile
# leaves the previous file byte-identical and no temporary file behind.
#  1. deterministic: the writer runs under `ulimit -f` (a file-size limit), so the kernel kills it with
#     SIGXFSZ in the middle of writing its output;
#  2. racy: `zplan report table1 --format html -o out.html` is SIGKILLed after delays spread over its run
#     time; every time out.html must be either the previous file or the complete new one.
# Usage: test_atomic_cli.sh ZPLAN
set -u
Z="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0 tried=0
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }

# only_file DIR NAME: DIR holds exactly NAME
only_file() {
  local n
  n=$(ls -A "$1")
  [ "$n" = "$2" ]
}

# killed_mid_write "description" NAME LIMIT_KB args... : runs zplan args (which write DIR/NAME) under
# ulimit -f LIMIT_KB over a previous NAME; it must die or fail, and leave the previous NAME alone.
killed_mid_write() {
  local what="$1" name="$2" limit="$3"; shift 3
  tried=$((tried + 1))
  local d="$T/w$tried"
  mkdir -p "$d"
  printf 'the previous %s, which must survive\n' "$name" >"$d/$name"
  cp "$d/$name" "$T/before"
  # (the outer subshell keeps bash's "File size limit exceeded" notice out of the test log)
  ( (cd "$d" && ulimit -f "$limit" && exec "$Z" "$@") >/dev/null 2>"$T/err" ) 2>/dev/null
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    ko "$what: the writer was not stopped (limit ${limit} KiB too large?)"
  elif ! cmp -s "$d/$name" "$T/before"; then
    ko "$what: exit $rc and the previous $name changed: $(head -c 100 "$d/$name")"
  elif ! only_file "$d" "$name"; then
    ko "$what: exit $rc and files left behind: $(ls -A "$d" | tr '\n' ' ')"
  else
    pass=$((pass + 1))
    local how="exit $rc"
    [ "$rc" -gt 128 ] && how="killed by $(kill -l $((rc - 128)))"
    printf '  bad input %-46s -> %s mid-write; previous %s intact, no temporary\n' "$what" "$how" "$name"
  fi
}

echo "== writers killed mid-write by the file-size limit (SIGXFSZ)"
killed_mid_write "report table1 --format html -o, 1 KiB limit" out.html 1 report table1 --format html -o out.html
killed_mid_write "report table2 --format json -o, 1 KiB limit" t2.json 1 report table2 --format json -o t2.json
killed_mid_write "what-if --report FILE.html, 4 KiB limit" r.html 4 --model 1.5B --gpus 64 --analytic --report r.html
killed_mid_write "what-if --trace FILE, 8 KiB limit" trace.json 8 --model 1.5B --gpus 32 --stage 3 --mp 2 --micro-batch 2 --trace trace.json
killed_mid_write "calibrate --quick -o FILE, 1 KiB limit" profile.json 1 calibrate --quick --reps 1 --warmup 0 --max-bytes 64Ki -o profile.json
# DeepSpeed configs are smaller than a KiB: the limit is 0, which stops the first byte
killed_mid_write "what-if --emit-ds-config FILE, 0 KiB limit" ds.json 0 --model 1.5B --gpus 64 --analytic --emit-ds-config ds.json
killed_mid_write "what-if --emit-megatron-args FILE, 0 KiB limit" m.args 0 --model llama-3-8b --gpus 64 --analytic --emit-megatron-args m.args
killed_mid_write "what-if --emit-torchtitan FILE, 0 KiB limit" t.toml 0 --model llama-3-8b --gpus 64 --analytic --emit-torchtitan t.toml

echo "== report killed at 16 moments of its run (SIGKILL): old file or complete new file, never a part"
d="$T/race"
mkdir -p "$d"
"$Z" report table1 --format html -o "$T/new.html" || ko "reference report"
start=$(date +%s%N)
"$Z" report table1 --format html -o "$T/new2.html"
run_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$run_ms" -lt 20 ] && run_ms=20
old=0 new=0 bad=0
for i in $(seq 0 15); do
  tried=$((tried + 1))
  printf 'previous report %d\n' "$i" >"$d/out.html"
  cp "$d/out.html" "$T/before"
  delay_ms=$(( i * run_ms * 2 / 15 ))
  "$Z" report table1 --format html -o "$d/out.html" >/dev/null 2>&1 &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if cmp -s "$d/out.html" "$T/before"; then
    old=$((old + 1))
  elif cmp -s "$d/out.html" "$T/new.html"; then
    new=$((new + 1))
  else
    bad=$((bad + 1)); ko "killed after ${delay_ms} ms: out.html is neither the previous nor the new report"
  fi
  only_file "$d" out.html || { bad=$((bad + 1)); ko "killed after ${delay_ms} ms: left $(ls -A "$d" | tr '\n' ' ')"; }
done
[ "$bad" -eq 0 ] && pass=$((pass + 1))
printf '  bad input %-46s -> %d times the previous file, %d times the complete new one, %d partial\n' \
  "SIGKILL at 0..$((run_ms * 2)) ms of a ${run_ms} ms run" "$old" "$new" "$bad"

echo "bad inputs tried: $tried"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
