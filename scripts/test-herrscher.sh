#!/usr/bin/env bash
# Herrscher's whole Go suite, with Go's own `state` package and with clients/go/state in its
# place, compared test by test (../shared/herrscher-host/run.sh does the work; this script
# builds this checkout and finds the mirrors). Not part of CI: it needs mirrors of
# github.com/Herrscherd/herrscher and of the Herrscherd/* modules it requires (the Go module
# proxy refuses them), and ~6 minutes on 2 cores.
#
#   HERRSCHER_MIRRORS=<folder holding Herrscherd+<name>/repo bare git dirs> npm run test:herrscher
#
# Env: HERRSCHER_HOST (default ../shared/herrscher-host beside this checkout); everything
# run.sh reads passes through (HH_PKGS, HH_ONLY=dropin with HH_BASE_JSON, HH_KEEP, HERRSCHER_REV).
# The last two lines are the figures docs/testing.md records: the test time over the tests
# passing on both runs, and "N passed, M failed" over the tests that pass with Go's package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
host=${HERRSCHER_HOST:-$root/../shared/herrscher-host}
mirrors=${HERRSCHER_MIRRORS:-}
if [ ! -f "$host/run.sh" ]; then
  echo "test:herrscher: no $host/run.sh (set HERRSCHER_HOST to the herrscher-host folder)" >&2
  exit 2
fi
if [ -z "$mirrors" ] || [ ! -d "$mirrors/Herrscherd+herrscher/repo" ]; then
  echo "test:herrscher: set HERRSCHER_MIRRORS to a folder holding Herrscherd+herrscher/repo (a bare git dir of github.com/Herrscherd/herrscher) and Herrscherd+<module>/repo for each Herrscherd/* module its go.mod requires" >&2
  exit 2
fi
(cd "$root" && npm run -s build)
HERRSCHER_GIT="$mirrors/Herrscherd+herrscher/repo" HERRSCHER_DEPS_MIRRORS="$mirrors" PROJECT="$root" exec bash "$host/run.sh"
