#!/usr/bin/env bash
# Ensure Helm ($CACHE/bin/helm) is in the tool cache, built from the helm.sh/helm/v3 Go module. Tests
# render the Kueue chart with the values the stacks pass and the live local cluster renders its CRDs,
# RBAC and webhook configurations from it.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v3.18.6: the Helm the Kubernetes provider 4.25.0 embeds (its go.mod), so a chart renders here as it does under `pulumi up`.
HELM_VERSION=v3.18.6
MODULE=helm.sh/helm/v3

tc_probe() { "$1" version --template '{{.Version}}' 2>/dev/null; }

tc_build() {
  local out=$1
  tc_go_env
  export GOFLAGS="${GOFLAGS/-mod=readonly/}"   # go install pkg@version uses the module's own go.sum
  GOBIN="$out" tc_run_logged build.log go install -trimpath \
    -ldflags "-s -w -X $MODULE/internal/version.version=$HELM_VERSION" "$MODULE/cmd/helm@$HELM_VERSION"
}

tc_ensure helm "$HELM_VERSION" helm
