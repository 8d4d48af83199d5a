#!/usr/bin/env bash
# Ensure actionlint (GitHub Actions workflow linter) is in the tool cache, built from the
# github.com/rhysd/actionlint Go module.
#
#   scripts/tools/actionlint.sh               build (cold) or link (warm); prints nothing on stdout
#   scripts/tools/actionlint.sh --print-path  also print the actionlint path on stdout
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v1.7.12: the newest actionlint release the module proxy serves; knows the current workflow syntax.
ACTIONLINT_VERSION=v1.7.12
PKG=github.com/rhysd/actionlint/cmd/actionlint

# "v1.7.12" on the first line of --version (with or without the v)
tc_probe() { "$1" --version 2>/dev/null | head -n1 | sed 's/^v*/v/'; }

tc_build() {
  local out=$1
  tc_go_env
  export GOFLAGS="${GOFLAGS/-mod=readonly/}"   # go install pkg@version uses the module's own go.sum
  # go install PKG@VERSION records the module version, which actionlint --version prints.
  GOBIN="$out" tc_run_logged build.log go install -trimpath -ldflags "-s -w" "$PKG@$ACTIONLINT_VERSION"
}

tc_main "$@" -- actionlint "$ACTIONLINT_VERSION" actionlint
