# tests/cli/lib.sh — what every CLI test script shares, sourced after `set -u`: a scratch folder $T removed
# on exit, the pass/fail counters with ok and ko, and the closing line that meson's log shows.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
# has WHAT PATTERN: the last command's output ($T/out, $T/err) has it
has() { if grep -q -- "$2" "$T/out" "$T/err"; then ok; else ko "$1: no '$2' in: $(cat "$T/err" "$T/out" | tail -8)"; fi; }

# bad NAME PATTERN ARGS...: exit 2, the message (stderr's last line) matches PATTERN, nothing on stdout
bad() {
  local what="$1" pat="$2"; shift 2
  "$Z" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" -eq 2 ] && tail -1 "$T/err" | grep -Eq -- "$pat" && [ ! -s "$T/out" ]; then
    ok; printf '  bad %-34s -> exit 2: %s\n' "$what" "$(tail -1 "$T/err" | cut -c1-130)"
  else
    ko "$what: rc=$rc, want /$pat/: $(cat "$T/err") $(head -c 200 "$T/out")"
  fi
}

# The summary line and the script's status: 0 only when nothing failed.
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
