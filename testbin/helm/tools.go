//go:build tools

// Package helm pins the Helm command built for skiff's chart tests. It is a module of its own:
// Helm needs newer Kubernetes libraries than the control plane that ../go.mod pins with its
// replace directives, and one module cannot hold both.
package helm

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
