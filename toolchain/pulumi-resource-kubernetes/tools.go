//go:build tools

// Package main (tools build only) keeps the schema generator's imports in go.sum: the
// build script runs the provider module's generate.go (a `go run` program) in this module.
package main

import _ "github.com/pulumi/pulumi/pkg/v3/codegen/schema"
