#!/usr/bin/env bash
# Ensure kube-apiserver and kube-controller-manager are in the tool cache, built from the
# k8s.io/kubernetes Go module through the wrapper module in toolchain/kube-apiserver.
#
#   scripts/tools/kube-apiserver.sh                  build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/kube-apiserver.sh --print-path     also print the kube-apiserver path on stdout
#   scripts/tools/kube-apiserver.sh --update-module  regenerate toolchain/kube-apiserver/go.mod and go.sum
#                                                    for KUBE_VERSION (after changing it)
set -euo pipefail

# v1.33: kubectl 1.32 on the machines is inside the +-1 minor skew only against 1.33, the stacks target EKS 1.33, and Kueue 0.19 supports it.
KUBE_VERSION=v1.33.13
# Staging modules (k8s.io/api, apiserver, client-go, ...) are published as v0.<minor>.<patch>.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
# Release date of KUBE_VERSION (module .info Time); stamped as buildDate so builds are reproducible.
BUILD_DATE=2026-06-11T16:59:07Z

TOOL=kube-apiserver
BINARIES=(kube-apiserver kube-controller-manager)
CACHE="${GPU_PLATFORM_CACHE:-$HOME/.cache/gpu-platform}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MODULE_DIR="$REPO/toolchain/kube-apiserver"
BUILD_DIR="$CACHE/build/$TOOL-$KUBE_VERSION"
BIN_DIR="$CACHE/bin"

log() { echo "toolchain: $*" >&2; }
die() { log "error: $*"; exit 1; }

print_path=0
case "${1:-}" in
  "") ;;
  --print-path) print_path=1 ;;
  --update-module) mode=update ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac

# "Kubernetes v1.33.13" -> v1.33.13
binary_version() { "$1" --version 2>/dev/null | awk '{print $2; exit}'; }

link_all() {  # link_all DIR: point $BIN_DIR/<binary> at DIR/<binary>
  mkdir -p "$BIN_DIR"
  local b
  for b in "${BINARIES[@]}"; do
    if [ "$(readlink "$BIN_DIR/$b" 2>/dev/null)" != "$1/$b" ]; then
      ln -sfn "$1/$b" "$BIN_DIR/$b"
    fi
  done
}

finish() {
  [ "$print_path" = 1 ] && echo "$BIN_DIR/kube-apiserver"
  exit 0
}

update_module() {
  command -v go >/dev/null || die "go is not on PATH"
  local tmp
  mkdir -p "$CACHE/tmp"
  tmp="$(mktemp -d "$CACHE/tmp/$TOOL-module.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  log "regenerating toolchain/kube-apiserver/go.mod for k8s.io/kubernetes $KUBE_VERSION ..."
  local upstream
  upstream="$(cd "$tmp" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [ -f "$upstream" ] || die "could not download the go.mod of k8s.io/kubernetes@$KUBE_VERSION"
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
  (cd "$tmp" && go mod tidy)
  cp "$tmp/go.mod" "$tmp/go.sum" "$MODULE_DIR/"
  log "updated $MODULE_DIR/go.mod and go.sum; review and commit them"
  exit 0
}

[ "${mode:-}" = update ] && update_module

# Warm: already built for this version.
all_built=1
for b in "${BINARIES[@]}"; do [ -x "$BUILD_DIR/$b" ] || all_built=0; done
if [ "$all_built" = 1 ]; then
  link_all "$BUILD_DIR"
  finish
fi

# A matching binary already on PATH (outside our cache): use it.
found_dir=""
if p="$(command -v kube-apiserver 2>/dev/null)" && [ "$(dirname "$p")" != "$BIN_DIR" ]; then
  d="$(dirname "$p")"
  ok=1
  for b in "${BINARIES[@]}"; do
    [ -x "$d/$b" ] && [ "$(binary_version "$d/$b")" = "$KUBE_VERSION" ] || ok=0
  done
  [ "$ok" = 1 ] && found_dir="$d"
fi
if [ -n "$found_dir" ]; then
  log "using ${BINARIES[*]} $KUBE_VERSION from $found_dir"
  link_all "$found_dir"
  finish
fi

# Cold: build.
command -v go >/dev/null || die "go is not on PATH (needed to build kube-apiserver $KUBE_VERSION)"
grep -Eq "^(require )?[[:space:]]*k8s.io/kubernetes $KUBE_VERSION( |\$)" "$MODULE_DIR/go.mod" \
  || die "toolchain/kube-apiserver/go.mod does not require k8s.io/kubernetes $KUBE_VERSION; run $0 --update-module"

mkdir -p "$CACHE/tmp" "$CACHE/build" "$CACHE/locks"
exec 9>"$CACHE/locks/$TOOL.lock"
if ! flock -n 9; then
  log "waiting for another build of $TOOL $KUBE_VERSION ..."
  flock 9
fi
# Another process may have finished the build while we waited.
if [ -x "$BUILD_DIR/kube-apiserver" ] && [ -x "$BUILD_DIR/kube-controller-manager" ]; then
  link_all "$BUILD_DIR"
  finish
fi

tmp="$(mktemp -d "$CACHE/tmp/$TOOL.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cp "$MODULE_DIR/go.mod" "$MODULE_DIR/go.sum" "$tmp/"

major="${KUBE_VERSION#v}"; major="${major%%.*}"
minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
ldflags="-s -w"
# Clients (kubectl, the Pulumi Kubernetes provider) read the server version from these.
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$KUBE_VERSION"
  # gitCommit: the release commit is not in the module zip; empty beats the "$Format:%H$" placeholder
  ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$BUILD_DATE"
done

log "building ${BINARIES[*]} $KUBE_VERSION (k8s.io/kubernetes module; 10-20 min cold on 2 cores) ..."
start=$SECONDS
pkgs=()
for b in "${BINARIES[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
if ! (cd "$tmp" && CGO_ENABLED=0 GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=readonly" \
      go build -trimpath -ldflags "$ldflags" -o "$tmp/out/" "${pkgs[@]}" >"$tmp/build.log" 2>&1); then
  tail -n 40 "$tmp/build.log" >&2
  die "building $TOOL $KUBE_VERSION failed"
fi
got="$(binary_version "$tmp/out/kube-apiserver")"
[ "$got" = "$KUBE_VERSION" ] || die "built kube-apiserver reports version '$got', expected $KUBE_VERSION"

rm -rf "$BUILD_DIR"
mv "$tmp/out" "$BUILD_DIR"
link_all "$BUILD_DIR"
log "${BINARIES[*]} $KUBE_VERSION built in $((SECONDS - start))s"
finish
