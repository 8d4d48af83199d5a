#!/usr/bin/env bash
# Ensure the KubeRay operator ($CACHE/bin/kuberay-operator) is in the tool cache, built from the
# github.com/ray-project/kuberay/ray-operator Go module (its main package is the module root). The live local
# cluster runs it as a host process.
#
#   scripts/tools/kuberay.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/kuberay.sh --src         also print the directory holding config/crd/bases of the module
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.5.0: the release the stacks deploy (spec addons.kuberay.version default).
VERSION=v1.5.0
MODULE=github.com/ray-project/kuberay/ray-operator

tc_controller_main "${1:-}" -- kuberay "$VERSION" "$MODULE" . kuberay-operator "" config/crd/bases
