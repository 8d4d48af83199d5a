#!/usr/bin/env bash
# Ensure the Pulumi CLI is in the tool cache ($GPU_PLATFORM_CACHE/bin/pulumi), built from the
# github.com/pulumi/pulumi/pkg/v3 Go module through the wrapper module in toolchain/pulumi.
# Warm runs only relink. Progress goes to stderr.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# v3.260.0: the release the project's Python SDK pin (pulumi==3.260.0) comes from; the module proxy serves pkg/v3 at it.
PULUMI_VERSION=v3.260.0

tc_probe() { "$1" version; }

tc_build() {
  local out=$1
  tc_go_env
  grep -q "github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION\$" "$TC_REPO/toolchain/pulumi/go.mod" \
    || tc_die "toolchain/pulumi/go.mod does not require pkg/v3 $PULUMI_VERSION"
  cp "$TC_REPO/toolchain/pulumi/go.mod" "$TC_REPO/toolchain/pulumi/go.sum" "$TC_REPO/toolchain/pulumi/tools.go" .
  tc_run_logged build.log go build -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
    -o "$out/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
}

tc_ensure pulumi "$PULUMI_VERSION" pulumi
