#!/usr/bin/env bash
# The Python module as a user gets it: `pip install .` (meson-python, pyproject.toml) into a virtual
# environment under the build folder, then pytest on tests/python (the module over the same library as the
# binary: its answers are the binary's JSON, errors carry zplan's messages).
# Usage: test_python.sh SOURCE_ROOT BUILD_ROOT ZPLAN_BINARY
# The environment (pytest, and pandas where it installs) is made once and kept in BUILD_ROOT/pyvenv; the
# module is built and installed afresh on every run. Skipped (77) when no virtual environment can be made
# or pytest cannot be installed (no package index); a failing `pip install .` fails.
set -u
S=$(cd "$1" && pwd) B=$(cd "$2" && pwd) Z=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
V="$B/pyvenv"
PY=${ZPLAN_PYTHON:-python3}
unset ZPLAN_LIBRARY PYTHONPATH
if [ ! -x "$V/bin/python" ] || ! "$V/bin/python" -c 'import pytest' 2>/dev/null; then
  rm -rf "$V"
  "$PY" -m venv "$V" >"$B/pyvenv.log" 2>&1 || { echo "SKIP: $PY -m venv failed (python3-venv missing?): $(tail -2 "$B/pyvenv.log")"; rm -rf "$V"; exit 77; }
  "$V/bin/pip" install -q --disable-pip-version-check pytest >>"$B/pyvenv.log" 2>&1 ||
    { echo "SKIP: pip could not install pytest (no package index?): $(tail -2 "$B/pyvenv.log")"; rm -rf "$V"; exit 77; }
  # pandas is optional (zplan.plans() is tested where it installs)
  "$V/bin/pip" install -q --disable-pip-version-check pandas >>"$B/pyvenv.log" 2>&1 || echo "note: pandas did not install: zplan.plans() untested"
fi
t0=$(date +%s)
"$V/bin/pip" install -q --disable-pip-version-check "$S" >"$B/pyinstall.log" 2>&1 ||
  { echo "FAIL: pip install $S:"; tail -30 "$B/pyinstall.log"; exit 1; }
echo "pip install . took $(( $(date +%s) - t0 )) s"
cd "$B" && ZPLAN_BIN="$Z" ZPLAN_SOURCE="$S" "$V/bin/python" -m pytest -q -p no:cacheprovider "$S/tests/python"
