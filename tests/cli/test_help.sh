#!/usr/bin/env bash
# Every command's --help is what README.md's command reference shows.
# Usage: test_help.sh ZPLAN SOURCE_ROOT
set -u
python3 --version >/dev/null 2>&1 || { echo "SKIP: python3 absent"; exit 77; }
if "$2/scripts/readme-help" "$1" --check; then echo "1 passed, 0 failed"; else exit 1; fi
