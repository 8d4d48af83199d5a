#!/usr/bin/env bash
# Ensure the Kubernetes provider plugin (pulumi-resource-kubernetes) is in the tool cache, built
# from github.com/pulumi/pulumi-kubernetes/provider/v4 through toolchain/pulumi-resource-kubernetes.
#
# The upstream command embeds schema-embed.json and terraform-mapping-embed.json, which are
# generated in the pulumi-kubernetes repo and are not in the module zip. The zip does ship
# their sources (cmd/pulumi-resource-kubernetes/schema.json, terraform-mapping.json) and the
# generator (generate.go, `go run` with VERSION set); we run that generator in the scratch
# build directory next to the wrapper's main.go, then build. Warm runs only relink.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# 4.25.0: the release the project's Python SDK pin (pulumi-kubernetes==4.25.0) requests; the proxy serves provider/v4 only as its release commit.
KUBERNETES_PROVIDER_VERSION=4.25.0
PROVIDER_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
VERSION_VAR=$PROVIDER_MODULE/pkg/version.Version

# The provider has no --version flag. A binary on PATH built without -trimpath records its
# -ldflags (and so the version) in its build info; ours are built with -trimpath, which drops
# them, so a fresh build is checked by tc_verify instead.
tc_probe() { go version -m "$1" | sed -n "s|.*-X $VERSION_VAR=\([^ \"]*\).*|\1|p" | head -n 1; }
tc_verify() {
  grep -q "\"version\":\"$KUBERNETES_PROVIDER_VERSION\"" schema-embed.json \
    || { tc_log "schema-embed.json does not carry version $KUBERNETES_PROVIDER_VERSION"; return 1; }
  grep -aq "$KUBERNETES_PROVIDER_VERSION" "$1/pulumi-resource-kubernetes" \
    || { tc_log "the binary does not contain $KUBERNETES_PROVIDER_VERSION"; return 1; }
}

tc_build() {
  local out=$1 src="$TC_REPO/toolchain/pulumi-resource-kubernetes" mod
  tc_go_env
  cp "$src/go.mod" "$src/go.sum" "$src/main.go" "$src/tools.go" .
  mod="$(tc_module_dir "$PROVIDER_MODULE")"
  cp "$mod/cmd/pulumi-resource-kubernetes/schema.json" "$mod/cmd/pulumi-resource-kubernetes/terraform-mapping.json" .
  chmod u+w schema.json terraform-mapping.json
  tc_log "generating schema-embed.json and terraform-mapping-embed.json (version $KUBERNETES_PROVIDER_VERSION) ..."
  VERSION=$KUBERNETES_PROVIDER_VERSION tc_run_logged generate.log \
    go run "$mod/cmd/pulumi-resource-kubernetes/generate.go"
  if [ ! -s schema-embed.json ] || [ ! -s terraform-mapping-embed.json ]; then
    tc_die "schema generation produced no output"
  fi
  rm -f schema.json terraform-mapping.json
  tc_run_logged build.log go build -trimpath \
    -ldflags "-s -w -X $VERSION_VAR=$KUBERNETES_PROVIDER_VERSION" \
    -o "$out/pulumi-resource-kubernetes" .
}

tc_ensure pulumi-resource-kubernetes "$KUBERNETES_PROVIDER_VERSION" pulumi-resource-kubernetes
