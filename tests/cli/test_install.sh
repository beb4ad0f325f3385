#!/usr/bin/env bash
# `meson install` puts the binary, the man page and the presets in place (into a scratch DESTDIR).
# Usage: test_install.sh BUILD_DIR
set -u
B="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
meson install -C "$B" --destdir "$T" --no-rebuild --quiet >"$T/log" 2>&1 || { echo "FAIL: meson install: $(tail -5 "$T/log")"; exit 1; }
fail=0
for f in bin/zplan share/man/man1/zplan.1 share/zplan/clusters.json; do
  if [ -n "$(find "$T" -path "*/$f" -print -quit)" ]; then echo "ok: $f installed"; else echo "FAIL: $f not installed"; fail=1; fi
done
man1=$(find "$T" -name zplan.1 -print -quit)
[ -n "$man1" ] && grep -q '^\.TH ZPLAN 1' "$man1" || { echo "FAIL: man page has no .TH header"; fail=1; }
json=$(find "$T" -name clusters.json -print -quit)
[ -n "$json" ] && grep -q '"dgx2"' "$json" || { echo "FAIL: clusters.json lacks dgx2"; fail=1; }
"$(find "$T" -path '*/bin/zplan' -print -quit)" --version | grep -q '^zplan ' || { echo "FAIL: installed zplan does not run"; fail=1; }
[ $fail -eq 0 ] && echo "1 passed, 0 failed"
exit $fail
