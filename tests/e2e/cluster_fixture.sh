#!/usr/bin/env bash
# ctest fixture around the e2e tests: brings the local cluster up, and down again
# afterwards only if it was this fixture that started it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
marker=${TRAINCTL_BUILD:-.}/.cluster-started-by-ctest
case "$1" in
  up)
    if out=$("$here/../../scripts/local-cluster" up "${@:2}" 2>&1); then
      echo "$out"
      grep -q "already up" <<<"$out" || touch "$marker"
    else
      # What went wrong, for the log: a fixture that fails says why (a trixie lane's
      # cluster_up once failed in 0.06 s with no word).
      echo "$out"
      exit 1
    fi
    ;;
  down)
    if [ -f "$marker" ]; then
      "$here/../../scripts/local-cluster" down
      rm -f "$marker"
    else
      echo "cluster was up before the tests; leaving it up"
    fi
    ;;
esac
