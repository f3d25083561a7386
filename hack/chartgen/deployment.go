package main

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The flag whose value the chart sets from metrics.enable (0 turns the listener off).
const metricsAddressFlag = "--metrics-bind-address="

// templateDeployment makes the Deployment's replicas, pod settings, image, args, resources and
// security contexts values, and records the manifest's settings as their defaults.
func templateDeployment(root *yaml.Node, f *fragments, d *valueDefaults) error {
	spec := get(root, "spec")
	template := get(spec, "template")
	pod := get(template, "spec")
	if spec == nil || get(spec, "replicas") == nil || get(template, "metadata") == nil || pod == nil {
		return errors.New("a Deployment without spec.replicas and a pod template")
	}
	d.Replicas = get(spec, "replicas").Value
	set(spec, "replicas", f.value("$.Values.replicaCount"))
	templatePodMetadata(get(template, "metadata"), f)

	var err error
	if d.PodSecurityContext, err = takeDefault(pod, "securityContext", "$.Values.podSecurityContext", f); err != nil {
		return err
	}
	if d.Affinity, err = takeOptional(pod, "affinity", "$.Values.affinity", f); err != nil {
		return err
	}
	f.addLines(pod, `{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent @2 }}
{{- end }}
{{- with $.Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with $.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent @2 }}
{{- end }}
{{- with $.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent @2 }}
{{- end }}
`+includeIfAny("skiff.volumes"))

	container, err := skiffContainer(pod)
	if err != nil {
		return err
	}
	return templateContainer(container, f, d)
}

// templatePodMetadata adds podLabels to the pod's labels and podAnnotations as its annotations.
func templatePodMetadata(meta *yaml.Node, f *fragments) {
	if labels := get(meta, "labels"); labels != nil {
		f.addLines(labels, `{{- with $.Values.podLabels }}
{{- toYaml . | nindent @0 }}
{{- end }}`)
	}
	f.addLines(meta, `{{- with $.Values.podAnnotations }}
annotations:
  {{- toYaml . | nindent @2 }}
{{- end }}`)
}

func skiffContainer(pod *yaml.Node) (*yaml.Node, error) {
	containers := get(pod, "containers")
	if containers == nil {
		return nil, errors.New("a Deployment without containers")
	}
	for _, container := range containers.Content {
		if name := get(container, "name"); name != nil && name.Value == baseName {
			return container, nil
		}
	}
	return nil, fmt.Errorf("no container named %s in the Deployment", baseName)
}

func templateContainer(container *yaml.Node, f *fragments, d *valueDefaults) error {
	image, policy, args := get(container, "image"), get(container, "imagePullPolicy"), get(container, "args")
	if image == nil || policy == nil || args == nil {
		return errors.New("the skiff container needs image, imagePullPolicy and args")
	}
	d.ImageRepository = imageRepository(image.Value)
	d.PullPolicy = policy.Value
	set(container, "image", f.value(`include "skiff.image" $`))
	set(container, "imagePullPolicy", f.value("$.Values.image.pullPolicy"))
	if err := templateArgs(args, f); err != nil {
		return err
	}
	var err error
	if d.Resources, err = takeDefault(container, "resources", "$.Values.resources", f); err != nil {
		return err
	}
	if d.SecurityContext, err = takeDefault(container, "securityContext", "$.Values.securityContext", f); err != nil {
		return err
	}
	f.addLines(container, includeIfAny("skiff.volumeMounts"))
	return nil
}

// templateArgs keeps the manifest's args (a flag added there reaches the chart), turns the
// metrics listener off unless metrics.enable, and appends the flags values set ("skiff.args").
func templateArgs(args *yaml.Node, f *fragments) error {
	found := false
	for i, arg := range args.Content {
		if address, ok := strings.CutPrefix(arg.Value, metricsAddressFlag); ok {
			args.Content[i] = f.text(metricsAddressFlag + "{{ if $.Values.metrics.enable }}" + address + "{{ else }}0{{ end }}")
			found = true
		}
	}
	if !found {
		return fmt.Errorf("the skiff container has no %s arg", metricsAddressFlag)
	}
	args.Content = append(args.Content, f.lines(includeIfAny("skiff.args")))
	return nil
}

// takeDefault replaces key's value in m with `toYaml expr` and returns the manifest's value as
// YAML, the default of expr in values.yaml.
func takeDefault(m *yaml.Node, key, expr string, f *fragments) (string, error) {
	value := get(m, key)
	if value == nil {
		return "", fmt.Errorf("no %s in the Deployment; chartgen takes its default from there", key)
	}
	text, err := yamlText(value)
	if err != nil {
		return "", err
	}
	set(m, key, f.block(expr))
	return text, nil
}

// takeOptional is takeDefault for a key the chart leaves out when its value is empty.
func takeOptional(m *yaml.Node, key, expr string, f *fragments) (string, error) {
	text, err := takeDefault(m, key, expr, f)
	if err != nil {
		return "", err
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i] = f.lines(fmt.Sprintf("{{- with %s }}\n%s:\n  {{- toYaml . | nindent @2 }}\n{{- end }}", expr, key))
			m.Content[i+1] = scalar("")
		}
	}
	return text, nil
}

// imageRepository is an image reference without its tag or digest.
func imageRepository(image string) string {
	image, _, _ = strings.Cut(image, "@")
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		image = image[:colon]
	}
	return image
}

// yamlText is node as YAML, indented by 2.
func yamlText(node *yaml.Node) (string, error) {
	return newFragments().encode(node)
}
