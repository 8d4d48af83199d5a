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

tc_verify() { tc_go_built "$1/kuberay-operator"; }
tc_build() {
  tc_log "building kuberay $VERSION (controller-runtime and client-go; shares the Go build cache with the other controllers) ..."
  tc_go_build "$1" "$MODULE@$VERSION" . kuberay-operator ""
}

SRC_DIR="$TC_CACHE/src/kuberay-$VERSION"
case "${1:-}" in
  ""|--src) ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
tc_ensure kuberay "$VERSION" kuberay-operator
# What the live cluster installs beside the process, from the same module: config/crd/bases.
tc_module_files "$MODULE" "$VERSION" "$SRC_DIR" config/crd/bases
[ "${1:-}" != --src ] || echo "$SRC_DIR"
