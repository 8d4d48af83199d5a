#!/usr/bin/env bash
# Ensure the Kubeflow Trainer v2 controller manager ($CACHE/bin/trainer-controller-manager) is in the tool
# cache, built from the github.com/kubeflow/trainer/v2 Go module (cmd/trainer-controller-manager). The live
# local cluster runs it as a host process; it needs JobSet (scripts/tools/jobset.sh).
#
#   scripts/tools/trainer.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/trainer.sh --src         also print the directory holding charts/kubeflow-trainer of the module
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v2.2.1: the release the stacks deploy (spec addons.trainer.version default; gpu_platform/workload_controllers.py
# says why not 2.0.0: Kueue v0.19.2 writes spec.runtimePatches, which Trainer has from 2.2).
VERSION=v2.2.1
MODULE=github.com/kubeflow/trainer/v2

tc_verify() { tc_go_built "$1/trainer-controller-manager"; }
tc_build() {
  tc_log "building trainer $VERSION (controller-runtime and client-go; shares the Go build cache with the other controllers) ..."
  tc_go_build "$1" "$MODULE@$VERSION" cmd/trainer-controller-manager trainer-controller-manager ""
}

SRC_DIR="$TC_CACHE/src/trainer-$VERSION"
case "${1:-}" in
  ""|--src) ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
tc_ensure trainer "$VERSION" trainer-controller-manager
# What the live cluster installs beside the process, from the same module: charts/kubeflow-trainer.
tc_module_files "$MODULE" "$VERSION" "$SRC_DIR" charts/kubeflow-trainer
[ "${1:-}" != --src ] || echo "$SRC_DIR"
