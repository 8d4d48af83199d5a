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

tc_controller_main "${1:-}" -- trainer "$VERSION" "$MODULE" cmd/trainer-controller-manager trainer-controller-manager "" charts/kubeflow-trainer
