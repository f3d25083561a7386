#!/bin/sh
# Writes a kustomization into DIR that takes manifests/ and sets the skiff container's image to
# IMG, for `make deploy` and `make build-installer`. The tracked manifests
# are never edited: the override lives only in DIR, which the caller removes.
#
#   hack/image-overlay.sh DIR IMG       IMG: name, name:tag or name@sha256:digest
set -eu
if [ $# -ne 2 ] || [ -z "$2" ]; then
  echo "usage: $0 DIR IMG (e.g. $0 \"\$(mktemp -d)\" registry.example/skiff:v0.1.0)" >&2
  exit 2
fi
dir=$1
img=$2
manifests=$(cd "$(dirname "$0")/../manifests" && pwd -P)
# kustomize refuses absolute paths: climb from DIR to / and descend to manifests/.
up=$(cd "$dir" && pwd -P | sed -e 's|[^/][^/]*|..|g' -e 's|^/||')
relative=$up$manifests

# name@digest, name:tag (the colon after the last slash, not a registry port), or name alone.
case $img in
  *@*) name=${img%%@*} ref="digest: ${img#*@}" ;;
  *)
    last=${img##*/}
    case $last in
      *:*) name=${img%:*} ref="newTag: ${img##*:}" ;;
      *) name=$img ref="newTag: latest" ;;
    esac
    ;;
esac

cat >"$dir/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $relative
images:
  - name: skiff
    newName: $name
    $ref
YAML
