#!/usr/bin/env bash
# skiff's multi-platform image, with podman: for each platform of PLATFORMS a static binary
# (make static, cross-compiled for another architecture), its SBOM (hack/sbom.sh) and a
# FROM-scratch image from Containerfile; then one manifest list IMG holding them (podman manifest
# create/add), written as an OCI image index to the OCI layout DIST/image (tag: IMG's tag), which
# is what a registry receives from
#
#   podman manifest push --all --format oci IMG docker://IMG
#
# Run by `make docker-buildx`, which passes IMG, PLATFORMS, VERSION, REVISION, SOURCE, DIST and
# MAX_IMAGE_BYTES. Each platform's image is also tagged IMG-<os>-<arch>; an image over
# MAX_IMAGE_BYTES, or of the wrong architecture, is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "hack/buildx.sh: $*" >&2
  exit 1
}

: "${IMG:?}" "${PLATFORMS:?}" "${VERSION:?}" "${REVISION:?}" "${SOURCE:?}" "${DIST:?}" "${MAX_IMAGE_BYTES:?}"
command -v podman >/dev/null || die "podman not found; install it (apt-get install podman): the index is made with podman's manifest commands"
case $IMG in *@*) die "IMG=$IMG: a digest names one image, not the index to build; give a name:tag" ;; esac
last=${IMG##*/}
if [[ $last == *:* ]]; then name=${IMG%:*} tag=${IMG##*:}; else name=$IMG tag=latest; fi

# A list of that name from an earlier run goes; so does the tag on a single-platform image.
podman manifest rm "$IMG" >/dev/null 2>&1 || podman untag "$IMG" >/dev/null 2>&1 || true
podman manifest create "$IMG" >/dev/null
mkdir -p "$DIST/sbom"
IFS=, read -r -a platforms <<<"$PLATFORMS"
for platform in "${platforms[@]}"; do
  case $platform in
    linux/amd64) target=x86_64-unknown-linux-gnu ;;
    linux/arm64) target=aarch64-unknown-linux-gnu ;;
    *) die "unsupported platform $platform; skiff builds linux/amd64 and linux/arm64" ;;
  esac
  arch=${platform#linux/}
  arch_of_target=${target%%-*}
  "${MAKE:-make}" --no-print-directory static STATIC_TARGET="$target"
  # Where make static puts it: cross builds have target/cross (see the Makefile).
  binary=target/$target/release/skiff
  [ "$arch_of_target" = "$(uname -m)" ] || binary=target/cross/${binary#target/}
  sbom=skiff-$VERSION-$target.spdx.json
  hack/sbom.sh "$target" "$binary" >"$DIST/sbom/$sbom"
  sbom_digest=sha256:$(sha256sum "$DIST/sbom/$sbom" | cut -d' ' -f1)
  image=$name:$tag-linux-$arch
  # --no-cache: podman reuses a FROM-scratch build for another platform from its cache.
  podman build --quiet --no-cache --platform "$platform" -f Containerfile \
    --build-arg BINARY="$binary" --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" \
    --build-arg SOURCE="$SOURCE" --build-arg SBOM="$sbom" --build-arg SBOM_DIGEST="$sbom_digest" \
    -t "$image" . >/dev/null
  read -r id size built_arch < <(podman image inspect "$image" --format '{{.Id}} {{.Size}} {{.Architecture}}')
  [ "$built_arch" = "$arch" ] || die "$image is for $built_arch, not $arch"
  [ "$size" -le "$MAX_IMAGE_BYTES" ] ||
    die "$image is $size bytes, over the $MAX_IMAGE_BYTES-byte ceiling (MAX_IMAGE_BYTES)"
  # By ID: the containers-storage transport would qualify a short name with a default registry.
  podman manifest add "$IMG" "containers-storage:$id" >/dev/null
  echo "hack/buildx.sh: $image $size bytes, SBOM $DIST/sbom/$sbom ($sbom_digest)"
done

rm -rf "$DIST/image"
podman manifest push --quiet --all --format oci "$IMG" "oci:$DIST/image:$tag"
index=$(podman manifest inspect "$IMG")
count=$(grep -c '"architecture"' <<<"$index") || true
[ "$count" = "${#platforms[@]}" ] || die "the list $IMG holds $count platforms, not ${#platforms[@]}"
echo "hack/buildx.sh: $IMG: an OCI image index of ${#platforms[@]} platforms ($PLATFORMS) in $DIST/image"
