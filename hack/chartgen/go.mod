// chartgen writes the Helm chart (charts/skiff) from manifests/: `make chart`.
module skiff.dev/hack/chartgen

go 1.26.0

require go.yaml.in/yaml/v3 v3.0.5
