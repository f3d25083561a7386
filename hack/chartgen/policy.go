package main

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The literals of the admission policies on skiff's writes that the chart's values replace:
// skiff's username, its namespace and the kit namespace label.
const (
	policyUser      = "'system:serviceaccount:" + installNamespace + ":" + baseName + "'"
	policyNamespace = "'" + installNamespace + "'"
	policyLabel     = "'skiff.dev/kit'"
)

// templatePolicy puts the release's ServiceAccount and namespace, and
// $.Values.bindingNamespaceLabel, into the CEL of a ValidatingAdmissionPolicy, wherever its
// matchConditions or variables name skiff's username, its namespace or the kit label. A policy
// that still names skiff's namespace anywhere else in its CEL is an error: its chart would hold
// the wrong user, or none.
func templatePolicy(root *yaml.Node, f *fragments) error {
	spec := get(root, "spec")
	for _, list := range []string{"matchConditions", "variables"} {
		items := get(spec, list)
		if items == nil {
			continue
		}
		for _, item := range items.Content {
			if expr := get(item, "expression"); expr != nil {
				if text, ok := policyTemplate(expr.Value); ok {
					set(item, "expression", f.text(text))
				}
			}
		}
	}
	if left := namingInstallNamespace(spec); left != "" {
		return fmt.Errorf("the policy's CEL names %s outside a matchCondition or variable chartgen templates: %q", installNamespace, left)
	}
	return nil
}

// policyTemplate is the template of one expression naming skiff's username (anywhere in it),
// namespace or the kit label (the whole expression); false for any other.
func policyTemplate(expr string) (string, bool) {
	switch {
	case strings.Contains(expr, policyUser):
		parts := strings.SplitN(expr, policyUser, 2)
		return fmt.Sprintf(`{{ printf "%%s'system:serviceaccount:%%s:%%s'%%s" %q $.Release.Namespace (include "skiff.fullname" $) %q | quote }}`, parts[0], parts[1]), true
	case expr == policyNamespace:
		return `{{ squote $.Release.Namespace | quote }}`, true
	case expr == policyLabel:
		return `{{ squote $.Values.bindingNamespaceLabel | quote }}`, true
	}
	return "", false
}

// namingInstallNamespace is the first scalar under node that still names the install
// namespace, or "".
func namingInstallNamespace(node *yaml.Node) string {
	if node.Kind == yaml.ScalarNode && strings.Contains(node.Value, installNamespace) {
		return node.Value
	}
	for _, child := range node.Content {
		if found := namingInstallNamespace(child); found != "" {
			return found
		}
	}
	return ""
}
