package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The parts of a kustomization chartgen understands. Anything else (a namePrefix, a
// configMapGenerator, a patch it does not know) is an error, so a new kustomize feature in
// manifests/ is taught to chartgen instead of being dropped from the chart.
type kustomization struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Resources  []string `yaml:"resources"`
	Labels     []struct {
		Pairs            map[string]string `yaml:"pairs"`
		IncludeSelectors bool              `yaml:"includeSelectors"`
		IncludeTemplates bool              `yaml:"includeTemplates"`
	} `yaml:"labels"`
	// The secret-targets, kinds and fleet-hub components add --secret-target-names, --kinds,
	// --bindable-roles and --fleet-hub to the Deployment; the chart's values do that, so the
	// patch is only checked for what it adds.
	Patches []struct {
		Target map[string]string `yaml:"target"`
		Patch  string            `yaml:"patch"`
	} `yaml:"patches"`
}

// What the components' patches must add for the chart to stand in for them.
const (
	secretTargetsPatch = "--secret-target-names="
	fleetHubPatch      = "--fleet-hub"
)

// readKustomization returns the resource files of dir/kustomization.yaml, in order, and the
// labels it adds to every object's metadata.
func readKustomization(dir string) ([]string, map[string]string, error) {
	path := filepath.Join(dir, "kustomization.yaml")
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var k kustomization
	decoder := yaml.NewDecoder(bytesReader(content))
	decoder.KnownFields(true)
	if err := decoder.Decode(&k); err != nil {
		return nil, nil, fmt.Errorf("%s: %w (chartgen knows resources, labels and the patches of the secret-targets, kinds and fleet-hub components; teach it the rest)", path, err)
	}
	labels := map[string]string{}
	for _, l := range k.Labels {
		if l.IncludeSelectors || l.IncludeTemplates {
			return nil, nil, fmt.Errorf("%s: labels with includeSelectors or includeTemplates are not supported by chartgen", path)
		}
		for key, value := range l.Pairs {
			labels[key] = value
		}
	}
	for _, p := range k.Patches {
		known := false
		for _, flag := range []string{secretTargetsPatch, kindsPatch, fleetHubPatch} {
			known = known || strings.Contains(p.Patch, flag)
		}
		if p.Target["kind"] != "Deployment" || !known {
			return nil, nil, fmt.Errorf("%s: a patch that adds none of %s, %s and %s; chartgen only stands in for those", path, secretTargetsPatch, kindsPatch, fleetHubPatch)
		}
	}
	return k.Resources, labels, nil
}

// sortedKeys returns m's keys in order, for output that does not change from run to run.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
