#!/usr/bin/env bash
# Ensure the Prometheus server ($CACHE/bin/prometheus) is in the tool cache, built from the
# github.com/prometheus/prometheus Go module (cmd/prometheus) at the release promtool is built from. The
# live local cluster runs it as a host process, scraping Kueue and the emulated DCGM series and evaluating
# the platform's own rule files. Built without the web UI's embedded assets (the API is all we use).
#
#   scripts/tools/prometheus.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/prometheus.sh --print-path  also print the binary's path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v0.316.0 is Prometheus 3.16.0, the same release as promtool (scripts/tools/promtool.sh says why).
PROMETHEUS_MODULE_VERSION=v0.316.0
PROMETHEUS_VERSION=3.16.0
BUILD_DATE=20261105-15:06:51

tc_probe() { "$1" --version 2>/dev/null | awk '/version/ {print $3; exit}'; }
tc_build() {
  local v=github.com/prometheus/common/version
  tc_log "building prometheus $PROMETHEUS_VERSION (module $PROMETHEUS_MODULE_VERSION; shares promtool's build cache) ..."
  tc_go_build "$1" "github.com/prometheus/prometheus@$PROMETHEUS_MODULE_VERSION" cmd/prometheus prometheus \
    "-X $v.Version=$PROMETHEUS_VERSION -X $v.Branch=release-${PROMETHEUS_VERSION%.*} -X $v.Revision=$PROMETHEUS_MODULE_VERSION -X $v.BuildUser=gpu-platform -X $v.BuildDate=$BUILD_DATE"
}

tc_main "$@" -- prometheus "$PROMETHEUS_VERSION" prometheus
