#!/usr/bin/env bash
# Ensure promtool (Prometheus rule and config checker) is in the tool cache, built from the
# github.com/prometheus/prometheus Go module.
#
#   scripts/tools/promtool.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/promtool.sh --print-path  also print the promtool path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v0.316.0 is Prometheus 3.16.0 (module v0.3MM.P = release 3.MM.P), the newest release the module proxy serves.
PROMETHEUS_MODULE_VERSION=v0.316.0
PROMETHEUS_VERSION=3.16.0
# Release date of that module version (its .info Time), stamped as the build date.
BUILD_DATE=20261105-15:06:51
PKG=github.com/prometheus/prometheus/cmd/promtool

# "promtool, version 3.16.0 (branch: ...)" -> 3.16.0
tc_probe() { "$1" --version 2>/dev/null | awk '/version/ {print $3; exit}'; }

tc_build() {
  local out=$1 v=github.com/prometheus/common/version ldflags
  tc_go_env
  export GOFLAGS="${GOFLAGS/-mod=readonly/}"   # go install pkg@version uses the module's own go.sum
  ldflags="-s -w -X $v.Version=$PROMETHEUS_VERSION -X $v.Branch=release-${PROMETHEUS_VERSION%.*}"
  ldflags+=" -X $v.Revision=$PROMETHEUS_MODULE_VERSION -X $v.BuildUser=gpu-platform -X $v.BuildDate=$BUILD_DATE"
  tc_log "building promtool $PROMETHEUS_VERSION (module $PROMETHEUS_MODULE_VERSION; several minutes cold) ..."
  # go install PKG@VERSION builds with the module's own go.mod (no wrapper needed: it has no replace directives).
  GOBIN="$out" tc_run_logged build.log go install -trimpath -ldflags "$ldflags" "$PKG@$PROMETHEUS_MODULE_VERSION"
}

tc_main "$@" -- promtool "$PROMETHEUS_VERSION" promtool
