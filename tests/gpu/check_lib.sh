# check_lib.sh — the GPU tests' counters (source it): ok / no print a line and count it; check DESC EXPR
# evaluates EXPR and counts the outcome; finish prints the count and exits with the verdict.
pass=0
fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
no() { echo "FAIL: $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else no "$1"; fi; }
