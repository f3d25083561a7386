package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	// The namespace manifests/ installs into; the chart uses the release's.
	installNamespace = "skiff-system"
	// The ServiceAccount's name, and the prefix of every other skiff object's name; the chart
	// names them after the release (templates/_helpers.tpl, "skiff.fullname").
	baseName = "skiff"
	// --leader-election-id's default, named in the leader-election Role's resourceNames.
	leaseName = "skiff-leader"
)

// templateFile returns the chart template for one manifest file: each object templated, the
// documents joined; "" when the file holds nothing the chart renders (the Namespace).
func templateFile(manifests, rel string, src source, labels map[string]string, d *valueDefaults) (string, error) {
	content, err := os.ReadFile(filepath.Join(manifests, rel))
	if err != nil {
		return "", err
	}
	decoder := yaml.NewDecoder(bytesReader(content))
	var docs []string
	for {
		var doc yaml.Node
		if err := decoder.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", err
		}
		text, err := templateObject(&doc, rel, src, labels, d)
		if err != nil {
			return "", err
		}
		if text != "" {
			docs = append(docs, text)
		}
	}
	return strings.Join(docs, "---\n"), nil
}

// templateObject templates one object, wrapped in the conditions that switch it off.
func templateObject(doc *yaml.Node, rel string, src source, labels map[string]string, d *valueDefaults) (string, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return "", errors.New("a document that is not one object")
	}
	root := doc.Content[0]
	kind, meta := get(root, "kind"), get(root, "metadata")
	if kind == nil || meta == nil || get(meta, "name") == nil {
		return "", errors.New("an object without kind or metadata.name")
	}
	if kind.Value == "Namespace" {
		if name := get(meta, "name").Value; name != installNamespace {
			return "", fmt.Errorf("the Namespace is %s; chartgen expects %s", name, installNamespace)
		}
		return "", nil
	}
	if err := checkNoDelimiters(root); err != nil {
		return "", err
	}
	f := newFragments()
	// The Roles that let skiff read Secret sources go into every source namespace.
	perSourceNamespace := src.condition != "" && src.dir == sources[1].dir &&
		(kind.Value == "Role" || kind.Value == "RoleBinding")
	if err := templateMetadata(meta, kind.Value, perSourceNamespace, labels, f); err != nil {
		return "", err
	}
	if err := templateKind(root, kind.Value, src, f, d); err != nil {
		return "", err
	}
	templateReferences(root, f, false)
	text, err := f.encode(doc)
	if err != nil {
		return "", err
	}
	if perSourceNamespace {
		text = "{{- range $namespace := $.Values.sourceNamespaces | default (list $.Release.Namespace) }}\n---\n" +
			text + "{{- end }}\n"
	}
	conditions := []string{src.condition, fileConditions[rel]}
	for _, condition := range conditions {
		if condition != "" {
			text = "{{- if " + condition + " }}\n" + text + "{{- end }}\n"
		}
	}
	return text, nil
}

// templateMetadata puts the release's namespace, the kustomization's labels plus the chart's
// (commonLabels among them) and the chart's annotations into metadata.
func templateMetadata(meta *yaml.Node, kind string, perSourceNamespace bool, labels map[string]string, f *fragments) error {
	if ns := get(meta, "namespace"); ns != nil {
		if ns.Value != installNamespace {
			return fmt.Errorf("%s in namespace %s; chartgen expects %s", kind, ns.Value, installNamespace)
		}
		expr := "$.Release.Namespace"
		if perSourceNamespace {
			expr = "$namespace"
		}
		set(meta, "namespace", f.value(expr))
	}
	objectLabels := get(meta, "labels")
	if objectLabels == nil {
		objectLabels = &yaml.Node{Kind: yaml.MappingNode}
		meta.Content = append(meta.Content, scalar("labels"), objectLabels)
	}
	for _, key := range sortedKeys(labels) {
		if get(objectLabels, key) == nil {
			objectLabels.Content = append(objectLabels.Content, scalar(key), scalar(labels[key]))
		}
	}
	f.addLines(objectLabels, `{{- include "skiff.labels" $ | nindent @0 }}`)
	if get(meta, "annotations") != nil {
		return fmt.Errorf("%s with annotations; chartgen does not merge them with the chart's yet", kind)
	}
	helper := "skiff.annotations"
	if kind == "CustomResourceDefinition" {
		helper = "skiff.crdAnnotations" // helm.sh/resource-policy: keep, with crd.keep
	}
	f.addLines(meta, includeIfAny(helper))
	return nil
}

// templateKind applies what is particular to a kind.
func templateKind(root *yaml.Node, kind string, src source, f *fragments, d *valueDefaults) error {
	switch {
	case kind == "Deployment":
		return templateDeployment(root, f, d)
	case kind == "PodDisruptionBudget":
		spec := get(root, "spec")
		if spec == nil || get(spec, "minAvailable") == nil {
			return errors.New("a PodDisruptionBudget without spec.minAvailable")
		}
		d.MinAvailable = get(spec, "minAvailable").Value
		set(spec, "minAvailable", f.value("$.Values.podDisruptionBudget.minAvailable"))
	case kind == "ClusterRole" && src.dir == kindsDir:
		return templateKindsRules(root, f)
	case kind == "ValidatingAdmissionPolicy":
		return templatePolicy(root, f)
	case kind == "ClusterRole" && src.dir == sources[1].dir:
		// The Secret names skiff may write are secretTargetNames, flag and RBAC alike.
		found := false
		for _, rule := range get(root, "rules").Content {
			if get(rule, "resourceNames") != nil {
				set(rule, "resourceNames", f.value("toJson $.Values.secretTargetNames"))
				found = true
			}
		}
		if !found {
			return errors.New("the secret-targets ClusterRole has no rule with resourceNames")
		}
	}
	return nil
}

// templateReferences names skiff's objects after the release: a name (or serviceAccountName)
// that is skiff or skiff-<suffix> (a container's name aside), the install namespace, and the
// Lease's name.
func templateReferences(node *yaml.Node, f *fragments, inContainer bool) {
	switch node.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(node.Content); i += 2 {
			key, value := node.Content[i-1].Value, node.Content[i]
			if value.Kind == yaml.ScalarNode {
				node.Content[i] = scalarReference(key, value, f, inContainer)
			} else {
				templateReferences(value, f, key == "containers")
			}
		}
	case yaml.SequenceNode:
		for i, item := range node.Content {
			if item.Kind == yaml.ScalarNode {
				node.Content[i] = scalarReference("", item, f, false)
			} else {
				templateReferences(item, f, inContainer)
			}
		}
	}
}

// scalarReference returns the template for a scalar that names a skiff object, the install
// namespace or the Lease, and node itself for any other.
func scalarReference(key string, node *yaml.Node, f *fragments, inContainer bool) *yaml.Node {
	if key == "name" && !inContainer || key == "serviceAccountName" || key == "policyName" {
		if suffix, ok := strings.CutPrefix(node.Value, baseName); ok && (suffix == "" || suffix[0] == '-') {
			return f.text(`{{ include "skiff.fullname" $ }}` + suffix)
		}
	}
	switch node.Value {
	case installNamespace:
		return f.value("$.Release.Namespace")
	case leaseName:
		return f.value("$.Values.leaderElection.id")
	}
	return node
}

// checkNoDelimiters refuses text that Helm would read as a template action.
func checkNoDelimiters(node *yaml.Node) error {
	if strings.Contains(node.Value, "{{") {
		return fmt.Errorf("%q holds {{, which Helm would read as a template action", node.Value)
	}
	for _, child := range node.Content {
		if err := checkNoDelimiters(child); err != nil {
			return err
		}
	}
	return nil
}

// get returns the value of key in mapping m, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// set replaces the value of key in mapping m (which must hold it).
func set(m *yaml.Node, key string, value *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = value
			return
		}
	}
	panic("set: no key " + key)
}
