#!/usr/bin/env bash
# Ensure promtool (Prometheus rule and config checker) is in the tool cache, built from the
# github.com/prometheus/prometheus Go module.
#
#   scripts/tools/promtool.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/promtool.sh --print-path  also print the promtool path on stdout
set -euo pipefail

# v0.316.0 is Prometheus 3.16.0 (module v0.3MM.P = release 3.MM.P), the newest release the module proxy serves.
PROMETHEUS_MODULE_VERSION=v0.316.0
PROMETHEUS_VERSION=3.16.0
# Release date of that module version (its .info Time), stamped as the build date.
BUILD_DATE=20261105-15:06:51

TOOL=promtool
PKG=github.com/prometheus/prometheus/cmd/promtool
CACHE="${GPU_PLATFORM_CACHE:-$HOME/.cache/gpu-platform}"
BUILD_DIR="$CACHE/build/$TOOL-$PROMETHEUS_VERSION"
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

# "promtool, version 3.16.0 (branch: ...)" -> 3.16.0
binary_version() { "$1" --version 2>/dev/null | awk '/version/ {print $3; exit}'; }

# Warm: already built.
[ -x "$BUILD_DIR/$TOOL" ] && link "$BUILD_DIR/$TOOL"

# A matching promtool already on PATH (outside our cache).
if p="$(command -v "$TOOL" 2>/dev/null)" && [ "$(dirname "$p")" != "$BIN_DIR" ] \
   && [ "$(binary_version "$p")" = "$PROMETHEUS_VERSION" ]; then
  log "using $TOOL $PROMETHEUS_VERSION from $p"
  link "$p"
fi

command -v go >/dev/null || die "go is not on PATH (needed to build $TOOL $PROMETHEUS_VERSION)"
mkdir -p "$CACHE/tmp" "$CACHE/build" "$CACHE/locks"
exec 9>"$CACHE/locks/$TOOL.lock"
flock -n 9 || { log "waiting for another build of $TOOL ..."; flock 9; }
[ -x "$BUILD_DIR/$TOOL" ] && link "$BUILD_DIR/$TOOL"

tmp="$(mktemp -d "$CACHE/tmp/$TOOL.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
v=github.com/prometheus/common/version
ldflags="-s -w -X $v.Version=$PROMETHEUS_VERSION -X $v.Branch=release-${PROMETHEUS_VERSION%.*}"
ldflags+=" -X $v.Revision=$PROMETHEUS_MODULE_VERSION -X $v.BuildUser=gpu-platform -X $v.BuildDate=$BUILD_DATE"

log "building $TOOL $PROMETHEUS_VERSION (module $PROMETHEUS_MODULE_VERSION; several minutes cold) ..."
start=$SECONDS
# go install PKG@VERSION builds with the module's own go.mod (no wrapper needed: it has no replace directives).
if ! (cd "$tmp" && CGO_ENABLED=0 GOWORK=off GOBIN="$tmp/out" \
      go install -trimpath -ldflags "$ldflags" "$PKG@$PROMETHEUS_MODULE_VERSION" >"$tmp/build.log" 2>&1); then
  tail -n 40 "$tmp/build.log" >&2
  die "building $TOOL $PROMETHEUS_VERSION failed"
fi
got="$(binary_version "$tmp/out/$TOOL")"
[ "$got" = "$PROMETHEUS_VERSION" ] || die "built $TOOL reports version '$got', expected $PROMETHEUS_VERSION"
rm -rf "$BUILD_DIR"
mv "$tmp/out" "$BUILD_DIR"
log "$TOOL $PROMETHEUS_VERSION built in $((SECONDS - start))s"
link "$BUILD_DIR/$TOOL"
