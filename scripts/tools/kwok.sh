#!/usr/bin/env bash
# Ensure KWOK ($CACHE/bin/kwok) is in the tool cache, built from the sigs.k8s.io/kwok Go module. The
# live local cluster runs it as the "kubelet" of its simulated GPU nodes: it keeps them Ready, moves
# pods bound to them to Running and, after the duration a pod carries, to Succeeded (stages in
# localcluster/stages.yaml).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v0.8.0: the newest release the module proxy serves (v0.7.0 is the other); its Stage API has the delay-from-annotation lifecycle the simulator needs.
KWOK_VERSION=v0.8.0
MODULE=sigs.k8s.io/kwok

tc_probe() { go version -m "$1" 2>/dev/null | awk -v m="$MODULE" '$1=="mod" && $2==m {print $3; exit}'; }

tc_build() {
  local out=$1
  tc_go_env
  export GOFLAGS="${GOFLAGS/-mod=readonly/}"   # go install pkg@version uses the module's own go.sum
  GOBIN="$out" tc_run_logged build.log go install -trimpath \
    -ldflags "-s -w -X $MODULE/pkg/consts.Version=${KWOK_VERSION#v}" "$MODULE/cmd/kwok@$KWOK_VERSION"
}

tc_ensure kwok "$KWOK_VERSION" kwok
