// Command pulumi-resource-kubernetes serves the Pulumi Kubernetes provider.
//
// It mirrors provider/cmd/pulumi-resource-kubernetes in the pulumi-kubernetes module, whose
// package cannot be built from the module cache: it embeds schema-embed.json and
// terraform-mapping-embed.json, which that repository generates at build time from the
// schema.json and terraform-mapping.json shipped beside it. scripts/tools/
// pulumi-resource-kubernetes.sh runs the module's own generate.go next to this file
// (with VERSION set) before `go build`, so both files exist only in the build directory.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
