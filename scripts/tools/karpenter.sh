#!/usr/bin/env bash
# Ensure Karpenter's Helm charts of the release the stacks pin are in the tool cache
# ($CACHE/src/karpenter-<version>/charts/{karpenter,karpenter-crd}), from the
# github.com/aws/karpenter-provider-aws Go module. Tests render the controller chart with the stacks' values.
# Nothing is built: the charts are files of the module.
#
#   scripts/tools/karpenter.sh          fetch (cold) or reuse (warm); prints nothing on stdout
#   scripts/tools/karpenter.sh --chart  also print the controller chart's directory on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.15.2: the release the stacks deploy (spec addons.karpenter.version default, both charts' version).
KARPENTER_VERSION=v1.15.2
MODULE=github.com/aws/karpenter-provider-aws
# The module's go.mod asks for Go 1.26.11; where the machine's Go is older, the go command fetches this
# approved toolchain from the module proxy, for this download only.
KARPENTER_GOTOOLCHAIN=go1.27.3
SRC_DIR="$TC_CACHE/src/karpenter-$KARPENTER_VERSION"

GOTOOLCHAIN="$KARPENTER_GOTOOLCHAIN" tc_module_charts "$MODULE" "$KARPENTER_VERSION" "$SRC_DIR" karpenter karpenter-crd
case "${1:-}" in
  "") ;;
  --chart) echo "$SRC_DIR/charts/karpenter" ;;
  *) tc_die "unknown argument: $1" ;;
esac
