#!/usr/bin/env bash
# Ensure the container runtime of the local cluster's real node (localcluster/realnode) is installed:
# containerd (1.6 or newer), runc and the CNI plugins the node uses (bridge, host-local, loopback, portmap).
# Uses what is on PATH (and a plugin directory realnode.py knows), otherwise installs Debian's containerd, runc
# and containernetworking-plugins packages (needs root and apt-get), as scripts/tools/etcd.sh installs etcd;
# links containerd and ctr into the tool cache (the script runs $TC_BIN/containerd).
#
#   scripts/tools/containerd.sh               link (warm) or install (cold); prints nothing on stdout
#   scripts/tools/containerd.sh --print-path  also print the containerd path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# 1.6: the CRI v1 API the kubelet 1.33 speaks, and netns_mounts_under_state_dir (realnode.py); Debian bookworm
# ships 1.6.20.
CONTAINERD_MIN_VERSION=1.6.0
# Debian's containernetworking-plugins, and upstream's default directory (realnode.py CNI_DIRS).
CNI_DIRS=(/usr/lib/cni /opt/cni/bin)
CNI_PLUGINS=(bridge host-local loopback portmap)

print_path=0
case "${1:-}" in
  "") ;;
  --print-path) print_path=1 ;;
  -h|--help) tc_help; exit 0 ;;
  *) tc_die "unknown argument: $1 (see --help)" ;;
esac

# "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3" -> 1.6.20
containerd_version() { "$1" --version 2>/dev/null | awk '{print $3; exit}' | sed 's/^v//; s/[~+-].*//'; }
new_enough() { [ "$(printf '%s\n%s\n' "$CONTAINERD_MIN_VERSION" "$1" | sort -V | head -n1)" = "$CONTAINERD_MIN_VERSION" ]; }

have_cni() {
  local d p
  for d in "${CNI_DIRS[@]}"; do
    for p in "${CNI_PLUGINS[@]}"; do [ -x "$d/$p" ] || continue 2; done
    return 0
  done
  return 1
}

installed() {  # the runtime is complete: a new-enough containerd, its runc shim, runc, ctr and the plugins
  local c v
  c="$(tc_on_path containerd)" || return 1
  v="$(containerd_version "$c")"
  [ -n "$v" ] && new_enough "$v" || { tc_log "ignoring $c: version '${v:-unknown}' < $CONTAINERD_MIN_VERSION"; return 1; }
  tc_on_path containerd-shim-runc-v2 >/dev/null && tc_on_path runc >/dev/null && tc_on_path ctr >/dev/null && have_cni
}

if ! installed; then
  command -v apt-get >/dev/null || tc_die "no containerd >= $CONTAINERD_MIN_VERSION, runc and CNI plugins (${CNI_PLUGINS[*]}) and no apt-get; install them and retry"
  [ "$(id -u)" = 0 ] || tc_die "containerd, runc or the CNI plugins are missing; run as root or: sudo apt-get install containerd runc containernetworking-plugins"
  tc_log "installing containerd, runc and the CNI plugins (Debian packages) ..."
  start=$SECONDS
  tc_scratch containerd-apt
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
           containerd runc containernetworking-plugins; } >"$TC_SCRATCH/apt.log" 2>&1; then
    tail -n 20 "$TC_SCRATCH/apt.log" >&2
    tc_die "apt-get install containerd runc containernetworking-plugins failed"
  fi
  installed || tc_die "the packages are installed but no complete runtime is on PATH"
  tc_log "containerd $(containerd_version "$(tc_on_path containerd)") installed in $((SECONDS - start))s"
fi

tc_link "$(readlink -f "$(tc_on_path containerd)")" containerd
tc_link "$(readlink -f "$(tc_on_path ctr)")" ctr
[ "$print_path" = 0 ] || echo "$TC_BIN/containerd"
