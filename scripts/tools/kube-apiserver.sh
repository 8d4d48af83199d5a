#!/usr/bin/env bash
# Ensure kube-apiserver, kube-controller-manager and kube-scheduler are in the tool cache, built from
# the k8s.io/kubernetes Go module through the wrapper module in toolchain/kube-apiserver (one build:
# the three commands share most of their packages).
#
#   scripts/tools/kube-apiserver.sh                  build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/kube-apiserver.sh --update-module  regenerate toolchain/kube-apiserver/go.mod and go.sum
#                                                    for KUBE_VERSION (after changing it)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.33: kubectl 1.32 on the machines is inside the +-1 minor skew only against 1.33, the stacks target EKS 1.33, and Kueue 0.19 supports it.
KUBE_VERSION=v1.33.13
# Staging modules (k8s.io/api, apiserver, client-go, ...) are published as v0.<minor>.<patch>.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
# Release date of KUBE_VERSION (module .info Time); stamped as buildDate so builds are reproducible.
BUILD_DATE=2026-06-11T16:59:07Z
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler)
MODULE_DIR="$TC_REPO/toolchain/kube-apiserver"

# "Kubernetes v1.33.13" -> v1.33.13
tc_probe() { "$1" --version 2>/dev/null | awk '{print $2; exit}'; }
tc_verify() {
  local b got
  for b in "${BINARIES[@]}"; do
    got="$(tc_probe "$1/$b")"
    [ "$got" = "$KUBE_VERSION" ] || { tc_log "built $b reports '$got', expected $KUBE_VERSION"; return 1; }
  done
}

tc_build() {
  local out=$1 major minor ldflags pkg b pkgs=()
  tc_go_env
  grep -Eq "^(require )?[[:space:]]*k8s.io/kubernetes $KUBE_VERSION( |\$)" "$MODULE_DIR/go.mod" \
    || tc_die "toolchain/kube-apiserver/go.mod does not require k8s.io/kubernetes $KUBE_VERSION; run $0 --update-module"
  cp "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" .
  major="${KUBE_VERSION#v}"; major="${major%%.*}"
  minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  # Clients (kubectl, the Pulumi Kubernetes provider) read the server version from these.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$KUBE_VERSION"
    # gitCommit: the release commit is not in the module zip; empty beats the "$Format:%H$" placeholder
    ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$BUILD_DATE"
  done
  for b in "${BINARIES[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  tc_log "building ${BINARIES[*]} (k8s.io/kubernetes module; 10-20 min cold on 2 cores) ..."
  tc_run_logged build.log go build -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}"
}

update_module() {
  command -v go >/dev/null || tc_die "go is not on PATH"
  local tmp upstream b
  tc_scratch kube-apiserver-module
  tmp=$TC_SCRATCH
  tc_log "regenerating toolchain/kube-apiserver/go.mod for k8s.io/kubernetes $KUBE_VERSION ..."
  upstream="$(cd "$tmp" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [ -f "$upstream" ] || tc_die "could not download the go.mod of k8s.io/kubernetes@$KUBE_VERSION"
  {
    sed -n '1,/^module /p' "$MODULE_DIR/go.mod"
    echo
    echo "go $(awk '$1=="go"{print $2; exit}' "$upstream")"
    echo
    awk '$1=="godebug"' "$upstream"
    echo
    echo 'tool ('
    for b in "${BINARIES[@]}"; do echo "	k8s.io/kubernetes/cmd/$b"; done
    echo ')'
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
  "") tc_ensure kube-apiserver "$KUBE_VERSION" "${BINARIES[@]}" ;;
  --update-module) update_module ;;
  -h|--help) tc_help ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac
