#!/usr/bin/env bash
# Ensure an etcd server is in the tool cache ($CACHE/bin/etcd). Uses an etcd already on PATH if it is
# new enough, otherwise installs Debian's etcd-server package (needs root and apt-get).
#
#   scripts/tools/etcd.sh               link (warm) or install (cold); prints nothing on stdout
#   scripts/tools/etcd.sh --print-path  also print the etcd path on stdout
set -euo pipefail

# 3.4.22: the oldest etcd Kubernetes 1.33 recommends (3.4.22+ or 3.5.6+); Debian bookworm ships 3.4.23.
ETCD_MIN_VERSION=3.4.22

CACHE="${GPU_PLATFORM_CACHE:-$HOME/.cache/gpu-platform}"
BIN_DIR="$CACHE/bin"

log() { echo "toolchain: $*" >&2; }
die() { log "error: $*"; exit 1; }

print_path=0
case "${1:-}" in
  "") ;;
  --print-path) print_path=1 ;;
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac

finish() {
  [ "$print_path" = 1 ] && echo "$BIN_DIR/etcd"
  exit 0
}

# "etcd Version: 3.4.23" -> 3.4.23
etcd_version() { "$1" --version 2>/dev/null | awk '/^etcd Version:/ {print $3; exit}'; }
new_enough() { [ "$(printf '%s\n%s\n' "$ETCD_MIN_VERSION" "$1" | sort -V | head -n1)" = "$ETCD_MIN_VERSION" ]; }

# Warm: the cache link points at a working binary.
if [ -L "$BIN_DIR/etcd" ] && [ -x "$BIN_DIR/etcd" ]; then
  finish
fi

find_etcd() {  # prints the path of a new-enough etcd: the one on PATH, else Debian's (outside our cache)
  local p v
  for p in "$(command -v etcd 2>/dev/null)" /usr/bin/etcd; do
    if [ -z "$p" ] || [ ! -x "$p" ] || [ "$(dirname "$p")" = "$BIN_DIR" ]; then continue; fi
    v="$(etcd_version "$p")"
    if [ -n "$v" ] && new_enough "$v"; then
      echo "$p"
      return 0
    fi
    log "ignoring $p: version '${v:-unknown}' < $ETCD_MIN_VERSION"
  done
  return 1
}

if ! path="$(find_etcd)"; then
  command -v apt-get >/dev/null || die "no etcd >= $ETCD_MIN_VERSION on PATH and no apt-get; install etcd (>= $ETCD_MIN_VERSION) and retry"
  [ "$(id -u)" = 0 ] || die "no etcd >= $ETCD_MIN_VERSION on PATH; run as root or: sudo apt-get install etcd-server"
  log "installing etcd (Debian package etcd-server) ..."
  start=$SECONDS
  mkdir -p "$CACHE/tmp"
  aptlog="$(mktemp "$CACHE/tmp/etcd-apt.XXXXXX")"
  trap 'rm -f "$aptlog"' EXIT
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server; } >"$aptlog" 2>&1; then
    tail -n 20 "$aptlog" >&2
    die "apt-get install etcd-server failed"
  fi
  path="$(find_etcd)" || die "etcd-server installed but no etcd >= $ETCD_MIN_VERSION on PATH"
  log "etcd $(etcd_version "$path") installed in $((SECONDS - start))s"
fi

mkdir -p "$BIN_DIR"
ln -sfn "$path" "$BIN_DIR/etcd"
finish
