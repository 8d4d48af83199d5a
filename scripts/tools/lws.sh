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

tc_controller_main "${1:-}" -- lws "$VERSION" "$MODULE" cmd lws-controller "-X sigs.k8s.io/lws/pkg/version.GitVersion=v0.7.0" charts/lws
