#!/usr/bin/env bash
# Ensure the local cluster's GPU device plugin ($CACHE/bin/gpu-device-plugin) is in the tool cache, built from
# the project's own Go module localcluster/deviceplugin (the kubelet's device-plugin API, k8s.io/kubelet). Its
# version is a digest of the module's files, so an edit builds again and an unchanged tree only relinks.
#
#   scripts/tools/gpu-device-plugin.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/gpu-device-plugin.sh --print-path  also print the binary's path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODULE_DIR="$TC_REPO/localcluster/deviceplugin"
VERSION="src-$(cd "$MODULE_DIR" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)"

tc_verify() { tc_go_built "$1/gpu-device-plugin"; }
tc_build() {
  local out=$1
  tc_go_env
  (cd "$MODULE_DIR" && tc_run_logged "$OLDPWD/build.log" go build -trimpath -ldflags "-s -w" -o "$out/gpu-device-plugin" .)
}

tc_main "$@" -- gpu-device-plugin "$VERSION" gpu-device-plugin
