#!/usr/bin/env bash
# Ensure the kubelet of the local cluster's real node ($CACHE/bin/kubelet, localcluster/realnode) is in the
# tool cache, built from the k8s.io/kubernetes Go module at the API server's version (KUBE_VERSION and
# BUILD_DATE are read from scripts/tools/kube-apiserver.sh, their one spelling) the way that script builds the
# API server: a wrapper module (toolchain/kubelet) that replaces every staging module by its published version,
# the same module and build caches, so the packages the two share compile once.
#
#   scripts/tools/kubelet.sh                  build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/kubelet.sh --print-path     also print the kubelet's path on stdout
#   scripts/tools/kubelet.sh --update-module  regenerate toolchain/kubelet/go.mod and go.sum for KUBE_VERSION
#                                             (after kube-apiserver.sh's KUBE_VERSION changed)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

APISERVER_SCRIPT="$(dirname "${BASH_SOURCE[0]}")/kube-apiserver.sh"
setting() {  # setting NAME: the value kube-apiserver.sh assigns to NAME
  local v
  v="$(sed -n "s/^$1=\([^[:space:]#]*\).*/\1/p" "$APISERVER_SCRIPT" | head -n1)"
  [ -n "$v" ] || tc_die "scripts/tools/kube-apiserver.sh sets no $1"
  echo "$v"
}
KUBE_VERSION="$(setting KUBE_VERSION)"
BUILD_DATE="$(setting BUILD_DATE)"
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
MODULE_DIR="$TC_REPO/toolchain/kubelet"

# "Kubernetes v1.33.13" -> v1.33.13
tc_probe() { "$1" --version 2>/dev/null | awk '{print $2; exit}'; }

tc_build() {
  local out=$1 major minor ldflags pkg
  tc_go_env
  grep -Eq "^(require )?[[:space:]]*k8s.io/kubernetes $KUBE_VERSION( |\$)" "$MODULE_DIR/go.mod" \
    || tc_die "toolchain/kubelet/go.mod does not require k8s.io/kubernetes $KUBE_VERSION; run $0 --update-module"
  cp "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" .
  major="${KUBE_VERSION#v}"; major="${major%%.*}"
  minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  # The node's status reports this version (nodeInfo.kubeletVersion), as kube-apiserver.sh stamps its own.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$KUBE_VERSION"
    ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$BUILD_DATE"
  done
  tc_log "building kubelet (k8s.io/kubernetes module; shares the Go build cache with kube-apiserver) ..."
  tc_run_logged build.log go build -trimpath -ldflags "$ldflags" -o "$out/" k8s.io/kubernetes/cmd/kubelet
}

update_module() {
  command -v go >/dev/null || tc_die "go is not on PATH"
  local tmp upstream
  tc_scratch kubelet-module
  tmp=$TC_SCRATCH
  tc_log "regenerating toolchain/kubelet/go.mod for k8s.io/kubernetes $KUBE_VERSION ..."
  upstream="$(cd "$tmp" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [ -f "$upstream" ] || tc_die "could not download the go.mod of k8s.io/kubernetes@$KUBE_VERSION"
  {
    sed -n '1,/^module /p' "$MODULE_DIR/go.mod"
    echo
    echo "go $(awk '$1=="go"{print $2; exit}' "$upstream")"
    echo
    awk '$1=="godebug"' "$upstream"
    echo
    echo 'tool k8s.io/kubernetes/cmd/kubelet'
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo 'replace ('
    # every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x <staging version>"
    awk -v v="$STAGING_VERSION" '$2=="=>" && $3 ~ /^\.\/staging\// {print "\t" $1 " => " $1 " " v}' "$upstream"
    echo ')'
  } > "$tmp/go.mod"
  (cd "$tmp" && GOWORK=off GOFLAGS= go mod tidy)
  cp "$tmp/go.mod" "$tmp/go.sum" "$MODULE_DIR/"
  tc_log "updated $MODULE_DIR/go.mod and go.sum; review and commit them"
}

case "${1:-}" in
  "") tc_ensure kubelet "$KUBE_VERSION" kubelet ;;
  --print-path) tc_ensure kubelet "$KUBE_VERSION" kubelet; echo "$TC_BIN/kubelet" ;;
  --update-module) update_module ;;
  -h|--help) tc_help ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
