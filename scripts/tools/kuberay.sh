#!/usr/bin/env bash
# Ensure the KubeRay operator ($CACHE/bin/kuberay-operator) is in the tool cache, built from the
# github.com/ray-project/kuberay/ray-operator Go module (its main package is the module root). The live local
# cluster runs it as a host process.
#
#   scripts/tools/kuberay.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/kuberay.sh --print-path  also print the binary's path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.5.0: the release the stacks deploy (spec addons.kuberay.version default).
VERSION=v1.5.0
MODULE=github.com/ray-project/kuberay/ray-operator

tc_verify() { tc_go_built "$1/kuberay-operator"; }
tc_build() {
  tc_log "building kuberay $VERSION (controller-runtime and client-go; shares the Go build cache with the other controllers) ..."
  tc_go_build "$1" "$MODULE@$VERSION" . kuberay-operator ""
}

tc_main "$@" -- kuberay "$VERSION" kuberay-operator
