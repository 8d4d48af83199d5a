#!/usr/bin/env bash
# Ensure Karpenter's KWOK cloud provider ($CACHE/bin/karpenter-kwok) is in the tool cache, built from the
# sigs.k8s.io/karpenter Go module (kwok/: Karpenter's core with a cloud provider that creates KWOK nodes
# instead of instances). The live local cluster runs it as a host process for the Karpenter pools, so
# those scale from zero by Karpenter's own provisioning and consolidation code.
#
# Its CRDs (NodePool, NodeClaim, NodeOverlay and the provider's KWOKNodeClass) are copied from the same module
# into $CACHE/src/karpenter-kwok-<version>/crds.
#
#   scripts/tools/karpenter-kwok.sh         build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/karpenter-kwok.sh --crds  also print the CRD directory on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.15.0: the core release under the AWS provider v1.15.2 the stacks deploy (its go.mod requires
# sigs.k8s.io/karpenter v1.15.0).
VERSION=v1.15.0
MODULE=sigs.k8s.io/karpenter
# The module's go.mod asks for Go 1.26.9; where the machine's Go is older, the go command fetches this
# approved toolchain from the module proxy, for this build only.
export GOTOOLCHAIN="${KARPENTER_GOTOOLCHAIN:-go1.27.3}"

tc_verify() { tc_go_built "$1/karpenter-kwok"; }
tc_build() {
  tc_log "building karpenter-kwok $VERSION (Karpenter's core and its KWOK provider; several minutes cold) ..."
  tc_go_build "$1" "$MODULE@$VERSION" kwok karpenter-kwok
}

# The CRDs of the release: kwok/charts/crds (Karpenter's own) and kwok/apis/crds (the provider's node class).
crds() {
  local dest="$TC_CACHE/src/karpenter-kwok-$VERSION/crds" dir
  [ -f "$dest/karpenter.kwok.sh_kwoknodeclasses.yaml" ] && return 0
  tc_scratch karpenter-kwok-crds
  dir="$(cd "$TC_SCRATCH" && GOWORK=off GOFLAGS= tc_module_dir "$MODULE@$VERSION")"
  mkdir -p "$TC_SCRATCH/out"
  cp "$dir"/kwok/charts/crds/*.yaml "$dir"/kwok/apis/crds/*.yaml "$TC_SCRATCH/out/"
  chmod -R u+w "$TC_SCRATCH/out"
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest"
  mv "$TC_SCRATCH/out" "$dest"
}

tc_ensure karpenter-kwok "$VERSION" karpenter-kwok
crds
case "${1:-}" in
  "") ;;
  --crds) echo "$TC_CACHE/src/karpenter-kwok-$VERSION/crds" ;;
  -h|--help) tc_help ;;
  *) tc_die "unknown argument: $1" ;;
esac
