#!/usr/bin/env bash
# Ensure the LeaderWorkerSet controller manager ($CACHE/bin/lws-controller) is in the tool cache, built from
# the sigs.k8s.io/lws Go module (cmd/). The live local cluster runs it as a host process.
#
#   scripts/tools/lws.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/lws.sh --src         also print the directory holding charts/lws of the module
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v0.7.0: the release the stacks deploy (spec addons.leaderWorkerSet.version default).
VERSION=v0.7.0
MODULE=sigs.k8s.io/lws

tc_verify() { tc_go_built "$1/lws-controller"; }
tc_build() {
  tc_log "building lws $VERSION (controller-runtime and client-go; shares the Go build cache with the other controllers) ..."
  tc_go_build "$1" "$MODULE@$VERSION" cmd lws-controller "-X sigs.k8s.io/lws/pkg/version.GitVersion=v0.7.0"
}

SRC_DIR="$TC_CACHE/src/lws-$VERSION"
case "${1:-}" in
  ""|--src) ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
tc_ensure lws "$VERSION" lws-controller
# What the live cluster installs beside the process, from the same module: charts/lws.
tc_module_files "$MODULE" "$VERSION" "$SRC_DIR" charts/lws
[ "${1:-}" != --src ] || echo "$SRC_DIR"
