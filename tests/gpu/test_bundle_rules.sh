#!/usr/bin/env bash
# The GPU bundle's rules (scripts/gpu-bundle.d/bundle-rules) on a small fixture bundle compiled here, since
# building the real bundle takes minutes (bench/gpu-bundle.sh does that, and scripts/gpu-bundle itself runs
# these rules on it): a program and library found through $ORIGIN RPATHs pass; glibc, the C++ runtime and
# CUDA's names are allowed; a library resolved outside the bundle, a library not found, a bundle over the
# size limit fail with a message naming what is wrong; compressed files (NAME.xz) are checked expanded and
# expanded in place by unpack, which --clean undoes.
# Usage: test_bundle_rules.sh SOURCE_ROOT [CC]   (CC may hold words: "ccache cc")
set -uo pipefail
S="$1"
CC="${2:-cc}"
R="$S/scripts/gpu-bundle.d/bundle-rules"
U="$S/scripts/gpu-bundle.d/unpack"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
# shellcheck source=tests/gpu/check_lib.sh
. "$(dirname "$0")/check_lib.sh"
rules() { "$R" "$@" >"$T/out.txt" 2>&1; rc=$?; }

command -v "${CC%% *}" >/dev/null || { echo "SKIP: no C compiler ($CC)"; exit 77; }
B="$T/bundle"
mkdir -p "$B/bin" "$B/lib" "$T/src" "$T/elsewhere"
cat >"$T/src/fx.c" <<'EOF'
#include <math.h>
double fx(double x) { return sqrt(x) + 1.0; }
EOF
cat >"$T/src/main.c" <<'EOF'
#include <stdio.h>
double fx(double);
int main(void) { printf("%g\n", fx(4.0)); return 0; }
EOF
$CC -shared -fPIC -o "$B/lib/libfx.so.1" -Wl,-soname,libfx.so.1 -Wl,-rpath,'$ORIGIN' "$T/src/fx.c" -lm &&
  $CC -o "$B/bin/prog" "$T/src/main.c" -L"$B/lib" -l:libfx.so.1 -Wl,-rpath,'$ORIGIN/../lib' ||
  { echo "FAIL: cannot build the fixture"; exit 1; }
check "fixture runs" '[ "$("$B/bin/prog")" = 3 ]'

rules "$B"
check "a bundle resolving through \$ORIGIN passes" '[ $rc = 0 ] && grep -q "ELF files resolve inside the bundle" "$T/out.txt"'
check "it reports the size" 'grep -q "size: 0.0 MiB (limit 60 MiB)" "$T/out.txt"'

# the C++ runtime is allowed
printf 'int main(void) { return 0; }\n' >"$T/src/cxx.c"
if $CC -o "$B/bin/cxx" "$T/src/cxx.c" -Wl,--no-as-needed -lstdc++ -lgcc_s 2>/dev/null; then
  rules --libs-only "$B"
  check "libstdc++ and libgcc_s are allowed" '[ $rc = 0 ]'
  rm -f "$B/bin/cxx"
fi

# a library of the system that is not allowed (libz, or one found by the compiler)
printf 'int main(void) { return 0; }\n' >"$T/src/sys.c"
if $CC -o "$B/bin/sys" "$T/src/sys.c" -Wl,--no-as-needed -lz 2>/dev/null; then
  rules --libs-only "$B"
  check "a system library outside the allowed list fails" '[ $rc = 1 ]'
  check "and is named with where it resolved and who needs it" \
    'grep -q "libz.so.1 => /.*: outside the bundle and not allowed (needed by bin/sys)" "$T/out.txt"'
  rm -f "$B/bin/sys"
else
  echo "note: no libz to link against: the outside-library case is not tried"
fi

# a library that is nowhere
$CC -shared -fPIC -o "$T/elsewhere/libgone.so.3" -Wl,-soname,libgone.so.3 "$T/src/fx.c" -lm
$CC -o "$B/bin/needs_gone" "$T/src/main.c" -L"$T/elsewhere" -l:libgone.so.3 -Wl,-rpath,'$ORIGIN/../lib'
rules --libs-only "$B"
check "a library not found fails, named" '[ $rc = 1 ] && grep -q "libgone.so.3 => not found (needed by bin/needs_gone)" "$T/out.txt"'
rules --libs-only --extra-libdirs "$T/elsewhere" "$B"
check "found through --extra-libdirs but not allowed: still fails" \
  '[ $rc = 1 ] && grep -q "libgone.so.3 => $T/elsewhere/libgone.so.3: outside the bundle" "$T/out.txt"'
rm -f "$B/bin/needs_gone"

# CUDA's libraries: allowed where they are found (here a stand-in, libcudart.so.99, that no system has)
$CC -shared -fPIC -o "$T/elsewhere/libcudart.so.99" -Wl,-soname,libcudart.so.99 "$T/src/fx.c" -lm
$CC -o "$B/bin/cuda_user" "$T/src/main.c" -L"$T/elsewhere" -l:libcudart.so.99 -Wl,-rpath,'$ORIGIN/../lib'
rules --libs-only --extra-libdirs "$T/elsewhere" "$B"
check "a CUDA library found through --extra-libdirs is allowed" '[ $rc = 0 ]'
rules --libs-only "$B"
check "a CUDA library found nowhere fails" '[ $rc = 1 ] && grep -q "libcudart.so.99 => not found" "$T/out.txt"'
rm -f "$B/bin/cuda_user"

# size
head -c $((2 * 1048576)) /dev/zero >"$B/lib/blob"
rules --size-only --max-mib 1 "$B"
check "over the size limit fails" '[ $rc = 1 ] && grep -q "is 2.0 MiB, over the 1 MiB limit" "$T/out.txt"'
check "and lists the largest files" 'grep -q "2.0 MiB  lib/blob" "$T/out.txt"'
rules --size-only --max-mib 3 "$B"
check "under the limit passes" '[ $rc = 0 ]'
rm -f "$B/lib/blob"

# compressed files: checked expanded in a copy; unpack expands in place, --clean undoes it
if command -v xz >/dev/null; then
  xz "$B/lib/libfx.so.1"
  mkdir -p "$T/tmp"
  TMPDIR="$T/tmp" rules "$B"
  check "a bundle with compressed libraries passes, checked expanded" '[ $rc = 0 ] && [ ! -e "$B/lib/libfx.so.1" ]'
  check "the checker's expanded copy is removed" '[ -z "$(ls -A "$T/tmp")" ]'
  "$U" "$B" && check "unpack expands in place, keeping the packed file" \
    '[ -e "$B/lib/libfx.so.1" ] && [ -e "$B/lib/libfx.so.1.xz" ] && [ "$("$B/bin/prog")" = 3 ]'
  "$U" "$B" && check "unpack again: nothing to do" '[ -e "$B/lib/libfx.so.1" ]'
  "$U" --clean "$B" && check "unpack --clean removes the expanded copy" '[ ! -e "$B/lib/libfx.so.1" ] && [ -e "$B/lib/libfx.so.1.xz" ]'
  printf 'not xz' >"$B/lib/libbroken.so.xz"
  "$U" "$B" >"$T/out.txt" 2>&1
  urc=$?
  check "a damaged packed file: unpack fails naming it, leaves no partial file" \
    '[ $urc = 1 ] && grep -q "cannot expand .*libbroken.so.xz" "$T/out.txt" && [ ! -e "$B/lib/libbroken.so" ] && [ -z "$(find "$B" -name "*.unpack.*")" ]'
  rm -f "$B/lib/libbroken.so.xz"
fi

rules
check "no bundle named: exit 2" '[ $rc = 2 ]'
rules "$T/nothing"
check "a missing bundle: exit 2" '[ $rc = 2 ] && grep -q "not a directory" "$T/out.txt"'

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
