#!/usr/bin/env bash
# Ensure the JobSet controller manager ($CACHE/bin/jobset-controller) is in the tool cache, built from the
# sigs.k8s.io/jobset Go module (its main package is the module root). The live local cluster runs it as a host
# process; Kubeflow Trainer v2 runs its TrainJobs as JobSets.
#
#   scripts/tools/jobset.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/jobset.sh --src         also print the directory holding charts/jobset of the module
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v0.10.1: the release the stacks deploy (spec addons.jobset.version default).
VERSION=v0.10.1
MODULE=sigs.k8s.io/jobset

tc_controller_main "${1:-}" -- jobset "$VERSION" "$MODULE" . jobset-controller "-X sigs.k8s.io/jobset/pkg/version.GitVersion=v0.10.1" charts/jobset
