#!/usr/bin/env bash
# The shared library exports the C ABI (trainctl_*) and the trainctl:: C++ API, and
# nothing of its internals or of the static libraries it contains.
set -euo pipefail
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | c++filt |
  grep -vE '^(TRAINCTL_[0-9]+$|trainctl_[a-z_]+|trainctl::(config|controller)::[^i]|typeinfo|vtable|_init$|_fini$)' || true)
if [ -n "$bad" ]; then
  echo "unexpected exported symbols in $lib:"
  echo "$bad"
  exit 1
fi
n=$(nm -D --defined-only "$lib" | grep -c ' T trainctl_')
echo "exported_symbols: $n C functions, nothing internal"
