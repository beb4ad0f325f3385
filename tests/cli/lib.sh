# tests/cli/lib.sh — what every CLI test script shares, sourced after `set -u`: a scratch folder $T removed
# on exit, the pass/fail counters with ok and ko, and the closing line that meson's log shows.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
# The summary line and the script's status: 0 only when nothing failed.
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
