package main

import (
	_ "embed"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// What values.yaml and Chart.yaml take from manifests/ and Cargo.toml.
type valueDefaults struct {
	Version            string
	ImageRepository    string
	PullPolicy         string
	Replicas           string
	Resources          string
	PodSecurityContext string
	SecurityContext    string
	Affinity           string
	MinAvailable       string
}

//go:embed values.yaml.tmpl
var valuesTemplate string

//go:embed Chart.yaml.tmpl
var chartTemplate string

func writeChartFiles(chart string, d *valueDefaults) error {
	if d.Replicas == "" || d.MinAvailable == "" {
		return errors.New("manifests/ has no Deployment or no PodDisruptionBudget; the chart's defaults come from them")
	}
	for name, text := range map[string]string{"values.yaml": valuesTemplate, "Chart.yaml": chartTemplate} {
		t, err := template.New(name).Delims("[[", "]]").Funcs(template.FuncMap{"nested": nested}).Parse(text)
		if err != nil {
			return err
		}
		var out strings.Builder
		out.WriteString(generatedHeader + " and Cargo.toml; edit those (or hack/chartgen/" + name + ".tmpl), not this file.\n")
		if err := t.Execute(&out, d); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(chart, name), []byte(out.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// nested is YAML text as the value of a top-level key: on the lines below it, indented by 2.
func nested(text string) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		out.WriteString("\n  " + line)
	}
	return out.String()
}
