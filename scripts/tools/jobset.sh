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

# v0.10.1: the release the stacks deploy (spec addons.jobset.version default) and Trainer v2.0.0's go.mod requires.
VERSION=v0.10.1
MODULE=sigs.k8s.io/jobset

tc_verify() { tc_go_built "$1/jobset-controller"; }
tc_build() {
  tc_log "building jobset $VERSION (controller-runtime and client-go; shares the Go build cache with the other controllers) ..."
  tc_go_build "$1" "$MODULE@$VERSION" . jobset-controller "-X sigs.k8s.io/jobset/pkg/version.GitVersion=v0.10.1"
}

SRC_DIR="$TC_CACHE/src/jobset-$VERSION"
case "${1:-}" in
  ""|--src) ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
tc_ensure jobset "$VERSION" jobset-controller
# What the live cluster installs beside the process, from the same module: charts/jobset.
tc_module_files "$MODULE" "$VERSION" "$SRC_DIR" charts/jobset
[ "${1:-}" != --src ] || echo "$SRC_DIR"
