#!/usr/bin/env bash
# Ensure actionlint (GitHub Actions workflow linter) is in the tool cache, built from the
# github.com/rhysd/actionlint Go module.
#
#   scripts/tools/actionlint.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/actionlint.sh --print-path  also print the actionlint path on stdout
set -euo pipefail

# v1.7.12: the newest actionlint release the module proxy serves; knows the current workflow syntax.
ACTIONLINT_VERSION=v1.7.12

TOOL=actionlint
PKG=github.com/rhysd/actionlint/cmd/actionlint
CACHE="${GPU_PLATFORM_CACHE:-$HOME/.cache/gpu-platform}"
BUILD_DIR="$CACHE/build/$TOOL-$ACTIONLINT_VERSION"
BIN_DIR="$CACHE/bin"

log() { echo "toolchain: $*" >&2; }
die() { log "error: $*"; exit 1; }

print_path=0
case "${1:-}" in
  "") ;;
  --print-path) print_path=1 ;;
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac

link() {  # link PATH
  mkdir -p "$BIN_DIR"
  [ "$(readlink "$BIN_DIR/$TOOL" 2>/dev/null)" = "$1" ] || ln -sfn "$1" "$BIN_DIR/$TOOL"
  [ "$print_path" = 1 ] && echo "$BIN_DIR/$TOOL"
  exit 0
}

# "v1.7.12" on the first line of --version (with or without the v)
binary_version() { "$1" --version 2>/dev/null | head -n1 | sed 's/^v*/v/'; }

# Warm: already built.
[ -x "$BUILD_DIR/$TOOL" ] && link "$BUILD_DIR/$TOOL"

# A matching actionlint already on PATH (outside our cache).
if p="$(command -v "$TOOL" 2>/dev/null)" && [ "$(dirname "$p")" != "$BIN_DIR" ] \
   && [ "$(binary_version "$p")" = "$ACTIONLINT_VERSION" ]; then
  log "using $TOOL $ACTIONLINT_VERSION from $p"
  link "$p"
fi

command -v go >/dev/null || die "go is not on PATH (needed to build $TOOL $ACTIONLINT_VERSION)"
mkdir -p "$CACHE/tmp" "$CACHE/build" "$CACHE/locks"
exec 9>"$CACHE/locks/$TOOL.lock"
flock -n 9 || { log "waiting for another build of $TOOL ..."; flock 9; }
[ -x "$BUILD_DIR/$TOOL" ] && link "$BUILD_DIR/$TOOL"

tmp="$(mktemp -d "$CACHE/tmp/$TOOL.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
log "building $TOOL $ACTIONLINT_VERSION ..."
start=$SECONDS
# go install PKG@VERSION records the module version, which actionlint --version prints.
if ! (cd "$tmp" && CGO_ENABLED=0 GOWORK=off GOBIN="$tmp/out" \
      go install -trimpath -ldflags "-s -w" \
      "$PKG@$ACTIONLINT_VERSION" >"$tmp/build.log" 2>&1); then
  tail -n 40 "$tmp/build.log" >&2
  die "building $TOOL $ACTIONLINT_VERSION failed"
fi
got="$(binary_version "$tmp/out/$TOOL")"
[ "$got" = "$ACTIONLINT_VERSION" ] || die "built $TOOL reports version '$got', expected $ACTIONLINT_VERSION"
rm -rf "$BUILD_DIR"
mv "$tmp/out" "$BUILD_DIR"
log "$TOOL $ACTIONLINT_VERSION built in $((SECONDS - start))s"
link "$BUILD_DIR/$TOOL"
