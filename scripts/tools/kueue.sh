#!/usr/bin/env bash
# Ensure the Kueue controller manager ($CACHE/bin/kueue) and the Kueue Helm chart of the same release
# ($CACHE/src/kueue-<version>/charts/kueue) are in the tool cache, both from the sigs.k8s.io/kueue Go
# module (cmd/kueue and charts/kueue). The live local cluster runs the binary as a host process and
# renders the chart for its CRDs, RBAC and webhook configurations; tests render it with the stacks' values.
#
#   scripts/tools/kueue.sh          build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/kueue.sh --chart  also print the chart directory on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v0.19.2: the release the stacks deploy (spec addons.kueue.version default, Helm chart version).
KUEUE_VERSION=v0.19.2
MODULE=sigs.k8s.io/kueue
SRC_DIR="$TC_CACHE/src/kueue-$KUEUE_VERSION"
CHART_DIR="$SRC_DIR/charts/kueue"

# go install MODULE/cmd/kueue@VERSION records the module version in the binary's build info.
tc_probe() { go version -m "$1" 2>/dev/null | awk -v m="$MODULE" '$1=="mod" && $2==m {print $3; exit}'; }

tc_build() {
  local out=$1 v=$MODULE/pkg/version
  tc_go_env
  export GOFLAGS="${GOFLAGS/-mod=readonly/}"   # go install pkg@version uses the module's own go.sum
  tc_log "building kueue $KUEUE_VERSION (controller-runtime, client-go and every integration; ~10 min cold) ..."
  GOBIN="$out" tc_run_logged build.log go install -trimpath \
    -ldflags "-s -w -X $v.GitVersion=$KUEUE_VERSION -X $v.BuildDate=2026-08-20" "$MODULE/cmd/kueue@$KUEUE_VERSION"
}

tc_ensure kueue "$KUEUE_VERSION" kueue
tc_module_charts "$MODULE" "$KUEUE_VERSION" "$SRC_DIR" kueue
case "${1:-}" in
  "") ;;
  --chart) echo "$CHART_DIR" ;;
  *) tc_die "unknown argument: $1" ;;
esac
