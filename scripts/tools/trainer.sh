#!/usr/bin/env bash
# Ensure the Kubeflow Trainer v2 controller manager ($CACHE/bin/trainer-controller-manager) is in the tool
# cache, built from the github.com/kubeflow/trainer/v2 Go module (cmd/trainer-controller-manager). The live
# local cluster runs it as a host process; it needs JobSet (scripts/tools/jobset.sh).
#
#   scripts/tools/trainer.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/trainer.sh --print-path  also print the binary's path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v2.0.0: the release the stacks deploy (spec addons.trainer.version default).
VERSION=v2.0.0
MODULE=github.com/kubeflow/trainer/v2

tc_verify() { tc_go_built "$1/trainer-controller-manager"; }
tc_build() {
  tc_log "building trainer $VERSION (controller-runtime and client-go; shares the Go build cache with the other controllers) ..."
  tc_go_build "$1" "$MODULE@$VERSION" cmd/trainer-controller-manager trainer-controller-manager ""
}

tc_main "$@" -- trainer "$VERSION" trainer-controller-manager
