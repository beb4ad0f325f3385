#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_*.c) with clang into OUTDIR:
#   tests/fuzz/build.sh OUTDIR [SRCROOT]
# The project's parsers (common/ models/ vocab/ sim/ planner/ formats/ reports/ and the CLI's option code in src/) are compiled with
# -fsanitize=fuzzer-no-link,address,undefined into one archive, each harness is linked against it.
# Nothing is rebuilt when no source changed (a hash of every source and header is kept in OUTDIR).
# Exit 77 (with a message) when clang or its libFuzzer runtime is missing (Debian: clang, libclang-rt-14-dev).
set -euo pipefail
out=${1:?usage: build.sh OUTDIR [SRCROOT]}
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
CLANG=${CLANG:-}
if [ -z "$CLANG" ]; then
  for c in clang clang-16 clang-15 clang-14; do
    if command -v "$c" >/dev/null 2>&1; then CLANG=$c; break; fi
  done
fi
if [ -z "$CLANG" ]; then
  echo "fuzz: clang not found (install clang and libclang-rt-14-dev: scripts/bootstrap does)" >&2
  exit 77
fi
mkdir -p "$out/obj"
out=$(cd "$out" && pwd)

probe="$out/probe.c"
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$probe" -o "$out/probe" >"$out/probe.log" 2>&1; then
  echo "fuzz: $CLANG cannot link with -fsanitize=fuzzer (libFuzzer runtime missing: install libclang-rt-14-dev)" >&2
  sed 's/^/  /' "$out/probe.log" | head -5 >&2
  exit 77
fi

libsrc=("$root"/common/*.c "$root"/models/*.c "$root"/vocab/*.c "$root"/sim/*.c "$root"/planner/*.c "$root"/formats/*.c "$root"/reports/*.c
        "$root"/src/zp_cli_opts.c "$root"/src/zp_cli_plan.c "$root"/src/zp_cli_common.c "$root"/src/zp_progress.c)
harnesses=("$root"/tests/fuzz/fuzz_*.c)
hash=$( (echo "$CLANG"; cat "${libsrc[@]}" "$root"/common/*.h "$root"/models/*.h "$root"/vocab/*.h "$root"/sim/*.h "$root"/planner/*.h "$root"/formats/*.h "$root"/reports/*.h \
        "$root"/src/*.h "$root"/tests/fuzz/*.c "$root"/tests/fuzz/*.h "$0" "$root"/meson.build "$root"/gpus/*.gpu) | sha256sum | cut -d' ' -f1)
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$hash" ]; then
  exit 0
fi
rm -f "$out/stamp"

version=$(sed -n "s/^ *version: *'\([^']*\)'.*/\1/p" "$root/meson.build" | head -1)
cat >"$out/zp_config.h" <<CONF
#pragma once
#define ZP_DATADIR "/usr/local/share/zplan"
#define ZP_HAVE_CUDA 0
#define ZP_HAVE_MPI 0
#define ZP_HAVE_NCCL 0
#define ZP_VERSION "${version:-0}"
CONF

# the GPU presets embedded as C strings, as vocab/meson.build's custom_target makes them
python3 "$root/vocab/zp_gpu_embed.py" "$out/zp_gpu_presets.c" "$root"/gpus/*.gpu
libsrc+=("$out/zp_gpu_presets.c")

cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
        -fsanitize=address,undefined -fno-sanitize-recover=undefined
        -I"$out" -I"$root/common" -I"$root/models" -I"$root/vocab" -I"$root/sim" -I"$root/planner" -I"$root/formats" -I"$root/reports" -I"$root/src"
        $(pkg-config --cflags jansson simgrid 2>/dev/null))
libs=($(pkg-config --libs jansson simgrid 2>/dev/null || echo -ljansson -lsimgrid) -lm)

export CLANG out
printf '%s\n' "${libsrc[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'f="{}"; o="$out/obj/$(basename "$(dirname "$f")")_$(basename "$f" .c).o";
   "$CLANG" "$@" -fsanitize=fuzzer-no-link -c "$f" -o "$o" 2>>"$out/build.log" || { echo "fuzz: cannot compile $f" >&2; cat "$out/build.log" >&2; exit 255; }' \
  sh "${cflags[@]}"
# the objects of today's sources only: obj/ may keep those of a file since removed or renamed
objs=()
for f in "${libsrc[@]}"; do objs+=("$out/obj/$(basename "$(dirname "$f")")_$(basename "$f" .c).o"); done
rm -f "$out/libzp_fuzz.a"
ar rcs "$out/libzp_fuzz.a" "${objs[@]}"
for h in "${harnesses[@]}"; do
  name=$(basename "$h" .c)
  "$CLANG" "${cflags[@]}" -fsanitize=fuzzer "$h" "$out/libzp_fuzz.a" "${libs[@]}" -o "$out/$name" 2>>"$out/build.log" ||
    { echo "fuzz: cannot build $name" >&2; cat "$out/build.log" >&2; exit 1; }
done
echo "$hash" >"$out/stamp"
