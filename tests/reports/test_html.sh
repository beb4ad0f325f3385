#!/usr/bin/env bash
# Renders zplan's HTML reports in a real browser (headless chromium) and checks that the charts drew.
# Skipped (exit 77) with a message where chromium is absent.
# Usage: test_html.sh ZPLAN PNG_CHECK
set -u
Z="$1"
CHECK="$2"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (scripts/bootstrap installs it); the HTML was not rendered"
  exit 77
fi
py=$(command -v python3 || true)
[ -n "$py" ] || { echo "SKIP: python3 is absent"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
render() { # render HTML PNG: a 1280-wide screenshot of the whole report
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$T/profile" --window-size=1280,2000 --screenshot="$2" "file://$1" >"$T/log" 2>&1
}
"$Z" --model 100B --gpus 400 --report "$T/whatif.html" >/dev/null || { echo "FAIL: what-if --report"; exit 1; }
grep -q '<svg' "$T/whatif.html" || { echo "FAIL: no SVG in the what-if report"; fail=1; }
grep -Eq 'src=|href="http' "$T/whatif.html" && { echo "FAIL: the report loads something from outside"; fail=1; }
render "$T/whatif.html" "$T/whatif.png" || { echo "FAIL: chromium: $(tail -3 "$T/log")"; exit 1; }
# the stacked memory bars: parameters (blue), optimizer (green), activations (vermillion), buffers (purple)
"$py" "$CHECK" "$T/whatif.png" 1280 2000 '#0072B2:40' '#009E73:200' '#D55E00:2000' '#CC79A7:500' || fail=1

"$Z" report scaling --model 8B --gpus 64,128,256 --stage 2 --mp 4 --format html -o "$T/scaling.html" ||
  { echo "FAIL: report scaling"; exit 1; }
render "$T/scaling.html" "$T/scaling.png" || { echo "FAIL: chromium: $(tail -3 "$T/log")"; exit 1; }
# the line chart (blue polyline and markers)
"$py" "$CHECK" "$T/scaling.png" 1280 2000 '#0072B2:300' || fail=1
[ $fail -eq 0 ] && echo "2 passed, 0 failed" || echo "html: failed"
exit $fail
