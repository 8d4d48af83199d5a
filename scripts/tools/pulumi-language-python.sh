#!/usr/bin/env bash
# Ensure the Python language host (pulumi-language-python, with pulumi-language-python-exec
# beside it) is in the tool cache. The upstream host module has no tags and the module proxy
# serves no version of it, so toolchain/pulumi-language-python is a small host of our own
# built on github.com/pulumi/pulumi/sdk/v3 (see its main.go); the exec script is copied at
# build time from the sdk/v3 module of the same release. Warm runs only relink.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v3.260.0: same Pulumi release as the CLI and the Python SDK pin (pulumi==3.260.0).
PULUMI_LANGUAGE_PYTHON_VERSION=v3.260.0

tc_probe() { "$1" -version; }

tc_build() {
  local out=$1 src="$TC_REPO/toolchain/pulumi-language-python" sdk
  tc_go_env
  grep -q "github.com/pulumi/pulumi/sdk/v3 $PULUMI_LANGUAGE_PYTHON_VERSION\$" "$src/go.mod" \
    || tc_die "toolchain/pulumi-language-python/go.mod does not require sdk/v3 $PULUMI_LANGUAGE_PYTHON_VERSION"
  cp "$src/go.mod" "$src/go.sum" "$src/main.go" .
  tc_run_logged build.log go build -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_LANGUAGE_PYTHON_VERSION" \
    -o "$out/pulumi-language-python" .
  sdk="$(tc_module_dir github.com/pulumi/pulumi/sdk/v3)"
  install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" "$out/pulumi-language-python-exec"
}

tc_ensure pulumi-language-python "$PULUMI_LANGUAGE_PYTHON_VERSION" pulumi-language-python pulumi-language-python-exec
