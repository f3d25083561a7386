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
