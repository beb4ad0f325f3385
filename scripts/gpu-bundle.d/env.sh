# env.sh — sourced by the GPU bundle's gpu-check and run (scripts/gpu-bundle): finds CUDA's libraries on
# this machine and sets the environment under which the bundled programs run relocated.
#
# zp_find_cuda_libs SONAME...   looks for each library, in this order, and keeps the first place found:
#     $ZP_GPU_CHECK_CUDA_LIBDIRS (colon-separated; when set, the only place looked in), $LD_LIBRARY_PATH,
#     the toolkit ($ZP_GPU_CHECK_CUDA_HOME, default /usr/local/cuda: lib64, targets/x86_64-linux/lib, lib),
#     the nvidia wheels of the
#     first Python that has them (site-packages/nvidia/*/lib: cuda_runtime, cublas, nccl, cu13, ...; the
#     Pythons tried: $ZP_GPU_CHECK_PYTHON when set, else python3 on PATH, /opt/torch/.venv/bin/python3,
#     /usr/bin/python3, /usr/local/bin/python3), then the loader's cache (ldconfig -p).
#   Sets ZP_CUDA_LIBDIRS (colon-separated directories), ZP_CUDA_FOUND ("soname=path" lines),
#   ZP_CUDA_MISSING (sonames not found), ZP_CUDA_SEARCHED (where it looked), ZP_CUDA_WHEELS_PYTHON.
# zp_bundle_env BUNDLE CUDA_LIBDIRS
#   Exports PATH, LD_LIBRARY_PATH (the bundle's lib/ first, then CUDA's), Open MPI's installation
#   directories (OPAL_PREFIX, OPAL_PKGLIBDIR, OPAL_PKGDATADIR, OPAL_SYSCONFDIR, ...) and PMIx's
#   (PMIX_PREFIX, PMIX_PKGLIBDIR, ...) so that mpirun, orted and MPI_Init find their plugins, help texts
#   and parameter files inside the bundle; as root, Open MPI's permission to run as root.

zp__add_unique() { # zp__add_unique LISTVAR DIR: appends DIR to the colon list unless there
  local cur="${!1}"
  case ":$cur:" in *":$2:"*) ;; *) printf -v "$1" '%s' "${cur:+$cur:}$2" ;; esac
}

zp__wheel_dirs() { # sets ZP__WHEEL_DIRS (lines) to the nvidia wheel lib dirs of the first Python that has
  # them, and ZP_CUDA_WHEELS_PYTHON to that Python
  ZP__WHEEL_DIRS=""
  local pys=() py sp d found
  if [ -n "${ZP_GPU_CHECK_PYTHON:-}" ]; then
    pys=("$ZP_GPU_CHECK_PYTHON")
  else
    py="$(command -v python3 2>/dev/null || true)"
    [ -z "$py" ] || pys+=("$py")
    pys+=(/opt/torch/.venv/bin/python3 /usr/bin/python3 /usr/local/bin/python3)
  fi
  for py in "${pys[@]}"; do
    [ -x "$py" ] || continue
    found=""
    while IFS= read -r sp; do
      [ -d "$sp/nvidia" ] || continue
      for d in "$sp"/nvidia/*/lib; do
        [ -d "$d" ] && found="$found$d"$'\n'
      done
    done < <("$py" -c 'import site, sys
dirs = []
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
dirs += [p for p in sys.path if p]
print("\n".join(dict.fromkeys(dirs)))' 2>/dev/null || true)
    if [ -n "$found" ]; then
      ZP_CUDA_WHEELS_PYTHON="$py"
      ZP__WHEEL_DIRS="$found"
      return 0
    fi
  done
  return 0
}

zp_find_cuda_libs() {
  ZP_CUDA_LIBDIRS=""
  ZP_CUDA_FOUND=""
  ZP_CUDA_MISSING=""
  ZP_CUDA_WHEELS_PYTHON=""
  local dirs=() d so hit cache
  if [ -n "${ZP_GPU_CHECK_CUDA_LIBDIRS+set}" ]; then
    IFS=: read -r -a dirs <<<"$ZP_GPU_CHECK_CUDA_LIBDIRS"
    ZP_CUDA_SEARCHED="ZP_GPU_CHECK_CUDA_LIBDIRS=$ZP_GPU_CHECK_CUDA_LIBDIRS"
    cache=""
  else
    [ -z "${LD_LIBRARY_PATH:-}" ] || IFS=: read -r -a dirs <<<"$LD_LIBRARY_PATH"
    local home="${ZP_GPU_CHECK_CUDA_HOME:-/usr/local/cuda}"
    dirs+=("$home/lib64" "$home/targets/x86_64-linux/lib" "$home/lib")
    zp__wheel_dirs
    while IFS= read -r d; do [ -z "$d" ] || dirs+=("$d"); done <<<"$ZP__WHEEL_DIRS"
    ZP_CUDA_SEARCHED="LD_LIBRARY_PATH, $home/{lib64,targets/x86_64-linux/lib,lib}, Python's site-packages/nvidia/*/lib${ZP_CUDA_WHEELS_PYTHON:+ (of $ZP_CUDA_WHEELS_PYTHON)}, ldconfig -p"
    cache="$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)"
  fi
  for so in "$@"; do
    hit=""
    for d in "${dirs[@]}"; do
      [ -n "$d" ] && [ -e "$d/$so" ] && { hit="$d/$so"; break; }
    done
    if [ -z "$hit" ] && [ -n "$cache" ]; then
      hit="$(printf '%s\n' "$cache" | awk -v so="$so" '$1 == so && /x86-64/ {print $NF; exit}')"
    fi
    if [ -n "$hit" ]; then
      zp__add_unique ZP_CUDA_LIBDIRS "$(dirname -- "$hit")"
      ZP_CUDA_FOUND="$ZP_CUDA_FOUND$so=$hit"$'\n'
    else
      ZP_CUDA_MISSING="${ZP_CUDA_MISSING:+$ZP_CUDA_MISSING }$so"
    fi
  done
}

zp_bundle_env() {
  local b="$1" cudadirs="${2:-}"
  export PATH="$b/bin:$PATH"
  export LD_LIBRARY_PATH="$b/lib${cudadirs:+:$cudadirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OPAL_PREFIX="$b" OPAL_EXEC_PREFIX="$b" OPAL_BINDIR="$b/bin" OPAL_SBINDIR="$b/bin" OPAL_LIBDIR="$b/lib" \
    OPAL_LIBEXECDIR="$b/libexec" OPAL_DATAROOTDIR="$b/share" OPAL_DATADIR="$b/share" \
    OPAL_PKGDATADIR="$b/share/openmpi" OPAL_PKGLIBDIR="$b/lib/openmpi" OPAL_SYSCONFDIR="$b/etc" \
    OPAL_INCLUDEDIR="$b/include" OPAL_PKGINCLUDEDIR="$b/include"
  export PMIX_PREFIX="$b" PMIX_EXEC_PREFIX="$b" PMIX_BINDIR="$b/bin" PMIX_LIBDIR="$b/lib" \
    PMIX_PKGLIBDIR="$b/lib/pmix" PMIX_DATAROOTDIR="$b/share" PMIX_DATADIR="$b/share" \
    PMIX_PKGDATADIR="$b/share/pmix" PMIX_SYSCONFDIR="$b/etc"
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}
