package main

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// kindsDir is the component that grants the RBAC of the namespace kit kinds (--kinds).
const kindsDir = "components/kinds"

// kindsPatch is what that component's patch must add for the chart to stand in for it.
const kindsPatch = "--kinds="

// bindableRolesPlaceholder stands for the bind rule's resourceNames until the rules are text.
const bindableRolesPlaceholder = "CHARTGENBINDABLEROLES"

// templateKindsRules renders each rule of the kinds ClusterRole only when its kind is in
// $.Values.kinds (by its --kinds name, resource.group), so the chart grants exactly the RBAC
// of the enabled kinds; the `bind` rule on clusterroles goes with rolebindings, its
// resourceNames from $.Values.bindableRoles.
func templateKindsRules(root *yaml.Node, f *fragments) error {
	rules := get(root, "rules")
	if rules == nil || rules.Kind != yaml.SequenceNode {
		return errors.New("the kinds ClusterRole has no rules")
	}
	text := []string{"rules:"}
	for _, rule := range rules.Content {
		name, err := ruleKind(rule)
		if err != nil {
			return err
		}
		if get(rule, "resourceNames") != nil {
			set(rule, "resourceNames", scalar(bindableRolesPlaceholder))
		}
		item, err := yamlText(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{rule}})
		if err != nil {
			return err
		}
		item = strings.ReplaceAll(item, bindableRolesPlaceholder, "{{ toJson $.Values.bindableRoles }}")
		text = append(text, fmt.Sprintf("{{- if has %q $.Values.kinds }}", name))
		for _, line := range strings.Split(strings.TrimSuffix(item, "\n"), "\n") {
			text = append(text, "  "+line)
		}
		text = append(text, "{{- end }}")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "rules" {
			root.Content[i] = f.lines(strings.Join(text, "\n"))
			root.Content[i+1] = scalar("")
		}
	}
	return nil
}

// ruleKind is the --kinds name of the kind a rule is for: its resource and API group, or
// rolebindings for the `bind` rule on clusterroles.
func ruleKind(rule *yaml.Node) (string, error) {
	groups, resources := get(rule, "apiGroups"), get(rule, "resources")
	if groups == nil || resources == nil || len(groups.Content) != 1 || len(resources.Content) != 1 {
		return "", errors.New("a kinds rule must name one API group and one resource")
	}
	group, resource := groups.Content[0].Value, resources.Content[0].Value
	if resource == "clusterroles" {
		resource = "rolebindings"
	}
	if group == "" {
		return resource, nil
	}
	return resource + "." + group, nil
}

// The literals of the RoleBinding policy (components/kinds/rolebinding-policy.yaml) that the
// chart's values replace: skiff's username, its namespace and the namespace label.
const (
	policyUser      = "'system:serviceaccount:" + installNamespace + ":" + baseName + "'"
	policyNamespace = "'" + installNamespace + "'"
	policyLabel     = "'skiff.dev/kit'"
)

// templateBindingPolicy puts the release's namespace and ServiceAccount, and
// $.Values.bindingNamespaceLabel, into the CEL of the policy on skiff's RoleBinding writes.
func templateBindingPolicy(root *yaml.Node, f *fragments) error {
	spec := get(root, "spec")
	replaced := 0
	for _, list := range []string{"matchConditions", "variables"} {
		items := get(spec, list)
		if items == nil {
			return fmt.Errorf("the RoleBinding policy has no %s", list)
		}
		for _, item := range items.Content {
			expr := get(item, "expression")
			if expr == nil {
				continue
			}
			var text string
			switch {
			case strings.Contains(expr.Value, policyUser):
				parts := strings.SplitN(expr.Value, policyUser, 2)
				text = fmt.Sprintf(`{{ printf "%%s'system:serviceaccount:%%s:%%s'%%s" %q $.Release.Namespace (include "skiff.fullname" $) %q | quote }}`, parts[0], parts[1])
			case expr.Value == policyNamespace:
				text = `{{ squote $.Release.Namespace | quote }}`
			case expr.Value == policyLabel:
				text = `{{ squote $.Values.bindingNamespaceLabel | quote }}`
			default:
				continue
			}
			set(item, "expression", f.text(text))
			replaced++
		}
	}
	if replaced != 3 {
		return fmt.Errorf("the RoleBinding policy must name %s, %s and %s once each", policyUser, policyNamespace, policyLabel)
	}
	return nil
}
