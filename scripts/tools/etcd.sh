#!/usr/bin/env bash
# Ensure an etcd server is in the tool cache ($TC_BIN/etcd). Uses an etcd already on PATH if it is
# new enough, otherwise installs Debian's etcd-server package (needs root and apt-get).
#
#   scripts/tools/etcd.sh               link (warm) or install (cold); prints nothing on stdout
#   scripts/tools/etcd.sh --print-path  also print the etcd path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# 3.4.22: the oldest etcd Kubernetes 1.33 recommends (3.4.22+ or 3.5.6+); Debian bookworm ships 3.4.23.
ETCD_MIN_VERSION=3.4.22

print_path=0
case "${1:-}" in
  "") ;;
  --print-path) print_path=1 ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac

finish() {
  [ "$print_path" = 1 ] && echo "$TC_BIN/etcd"
  exit 0
}

# "etcd Version: 3.4.23" -> 3.4.23
etcd_version() { "$1" --version 2>/dev/null | awk '/^etcd Version:/ {print $3; exit}'; }
new_enough() { [ "$(printf '%s\n%s\n' "$ETCD_MIN_VERSION" "$1" | sort -V | head -n1)" = "$ETCD_MIN_VERSION" ]; }

# Warm: the cache link points at a working binary. (A minimum version, not an exact one, so this is
# not tc_ensure: any new-enough etcd will do, and Debian's package is installed rather than built.)
if [ -L "$TC_BIN/etcd" ] && [ -x "$TC_BIN/etcd" ]; then
  finish
fi

find_etcd() {  # prints the path of a new-enough etcd: the one on PATH, else Debian's (outside our cache)
  local p v
  for p in "$(command -v etcd 2>/dev/null)" /usr/bin/etcd; do
    if [ -z "$p" ] || [ ! -x "$p" ] || [ "$(dirname "$p")" = "$TC_BIN" ]; then continue; fi
    v="$(etcd_version "$p")"
    if [ -n "$v" ] && new_enough "$v"; then
      echo "$p"
      return 0
    fi
    tc_log "ignoring $p: version '${v:-unknown}' < $ETCD_MIN_VERSION"
  done
  return 1
}

if ! path="$(find_etcd)"; then
  command -v apt-get >/dev/null || tc_die "no etcd >= $ETCD_MIN_VERSION on PATH and no apt-get; install etcd (>= $ETCD_MIN_VERSION) and retry"
  [ "$(id -u)" = 0 ] || tc_die "no etcd >= $ETCD_MIN_VERSION on PATH; run as root or: sudo apt-get install etcd-server"
  tc_log "installing etcd (Debian package etcd-server) ..."
  start=$SECONDS
  tc_scratch etcd-apt
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server; } >"$TC_SCRATCH/apt.log" 2>&1; then
    tail -n 20 "$TC_SCRATCH/apt.log" >&2
    tc_die "apt-get install etcd-server failed"
  fi
  path="$(find_etcd)" || tc_die "etcd-server installed but no etcd >= $ETCD_MIN_VERSION on PATH"
  tc_log "etcd $(etcd_version "$path") installed in $((SECONDS - start))s"
fi

tc_link "$path" etcd
finish
