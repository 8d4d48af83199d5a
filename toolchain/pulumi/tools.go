//go:build tools

// Package tools records the command this wrapper module builds, so `go mod tidy`
// keeps every module it needs in go.sum. Build with:
//
//	go build -trimpath github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
