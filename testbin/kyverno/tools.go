//go:build tools

// Package kyverno pins Kyverno's admission and background controllers, built by build.sh for the
// compare-kit scenario's Kyverno column.
package kyverno

import (
	_ "github.com/kyverno/kyverno/cmd/background-controller"
	_ "github.com/kyverno/kyverno/cmd/kyverno"
)
