#!/usr/bin/env bash
# Ensure SeaweedFS's `weed` ($CACHE/bin/weed) is in the tool cache, built from the github.com/seaweedfs/seaweedfs Go
# module. The acceptance test runs it on the local cluster as the data path's S3-compatible object store (`weed
# server -s3` with per-team identities: localcluster/objectstore.py), so the workload reads its dataset sample and
# writes its checkpoints over the S3 API, with a real AccessDenied for a key of another team.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The module proxy serves SeaweedFS only as a pseudo-version (its release tags are not semver-compatible module
# versions); this one is the newest it lists.
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
MODULE=github.com/seaweedfs/seaweedfs

# Built as its own main module, the binary's build info says "(devel)", not the pseudo-version: the check is that
# it runs and names itself.
tc_verify() { "$1/weed" version 2>&1 | grep -q "^version "; }

tc_build() {
  local out=$1 src
  # `go install pkg@version` refuses a module whose go.mod has replace directives (SeaweedFS's has one: see its
  # go.mod), so the module is built as its own main module, in the module cache's read-only copy, with its own
  # go.mod and go.sum as they are (-mod=readonly).
  src="$(GOFLAGS=-mod=mod tc_module_dir "$MODULE@$SEAWEEDFS_VERSION")"
  tc_go_env
  (cd "$src" && tc_run_logged "$OLDPWD/build.log" go build -trimpath -ldflags "-s -w" -o "$out/weed" ./weed)
}

tc_main "$@" -- seaweedfs "$SEAWEEDFS_VERSION" weed
