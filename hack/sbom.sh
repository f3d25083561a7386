#!/usr/bin/env bash
# Writes the software bill of materials of the image's static binary for TARGET, as SPDX 2.3
# JSON on stdout: skiff itself (with the binary's SHA-256), every crate linked into it (the
# normal dependencies for TARGET, at the versions Cargo.lock pins, with their licenses and
# checksums; build scripts' and proc macros' crates run at build time and are left out), and
# what is linked statically without appearing there: glibc and libgcc from the C toolchain,
# and the OpenSSL that hack/openssl.sh builds.
#
#   hack/sbom.sh TARGET BINARY > skiff.spdx.json
#
# The document is reproducible: its timestamp is the commit's, its namespace is derived from
# the binary's checksum.
set -euo pipefail

die() {
  echo "hack/sbom.sh: $*" >&2
  exit 1
}

[ $# -eq 2 ] || die "usage: $0 TARGET BINARY (e.g. x86_64-unknown-linux-gnu target/x86_64-unknown-linux-gnu/release/skiff)"
target=$1
binary=$2
[ -f "$binary" ] || die "$binary not found; build it with make static STATIC_TARGET=$target"
binary=$(cd "$(dirname "$binary")" && pwd -P)/$(basename "$binary")
cd "$(dirname "$0")/.."
arch=${target%%-*}
cc=cc
[ "$arch" = "$(uname -m)" ] || cc=$arch-linux-gnu-gcc
command -v "$cc" >/dev/null || die "$cc not found (hack/cross-tools.sh $target installs it)"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | sed -n 1p)
checksum=$(sha256sum "$binary" | cut -d' ' -f1)
created=$(date -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)" +%Y-%m-%dT%H:%M:%SZ)
glibc=$("$cc" -dM -E -include features.h -x c /dev/null |
  awk '$2 == "__GLIBC__" { major = $3 } $2 == "__GLIBC_MINOR__" { minor = $3 } END { print major "." minor }')
gcc=$("$cc" -dumpfullversion)
# The OpenSSL release hack/openssl.sh builds: the one the openssl-src crate in Cargo.lock bundles
# (its version is <crate version>+<OpenSSL version>).
openssl=$(awk '$0 == "name = \"openssl-src\"" { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
openssl=${openssl#*+}
[ -n "$openssl" ] || die "openssl-src is not in Cargo.lock; keep the vendored feature in Cargo.toml"

# name|version|license of each crate linked into the binary, skiff itself left out.
crates=$(cargo tree --locked -e normal,no-proc-macro --target "$target" --prefix none --format '{p}|{l}' |
  sed 's/ (\*)$//' | sort -u |
  awk -F'|' '{ split($1, p, " "); if (p[1] != "skiff") print p[1] "|" substr(p[2], 2) "|" $2 }')
[ -n "$crates" ] || die "cargo tree listed no crates"

# The registry checksum Cargo.lock records for name@version.
lock_checksum() {
  awk -v name="$1" -v version="$2" '
    $0 == "[[package]]" { n = ""; v = "" }
    $1 == "name" { n = $3; gsub(/"/, "", n) }
    $1 == "version" { v = $3; gsub(/"/, "", v) }
    $1 == "checksum" && n == name && v == version { c = $3; gsub(/"/, "", c); print c; exit }
  ' Cargo.lock
}

# An SPDX license expression from Cargo's license field (the old "MIT/Apache-2.0" form too).
# A crate whose Cargo.toml names only a license-file ($2) gets the license that file holds,
# read by hand and listed here; any other crate without a license field stays NOASSERTION.
spdx_license() {
  if [ -n "$1" ]; then echo "${1//\// OR }"; return; fi
  case $2 in
    libyaml-safer) echo MIT ;; # LICENSE-MIT, the MIT license of libyaml and of the port
    *) echo NOASSERTION ;;
  esac
}

# package ID NAME VERSION LICENSE SUPPLIER PURL [SHA256] [COMMENT]
package() {
  printf '    {"SPDXID": "SPDXRef-%s", "name": "%s", "versionInfo": "%s",\n' "$1" "$2" "$3"
  printf '     "downloadLocation": "NOASSERTION", "filesAnalyzed": false,\n'
  printf '     "licenseConcluded": "NOASSERTION", "licenseDeclared": "%s", "copyrightText": "NOASSERTION",\n' "$4"
  printf '     "supplier": "%s",\n' "$5"
  [ -z "${7:-}" ] || printf '     "checksums": [{"algorithm": "SHA256", "checksumValue": "%s"}],\n' "$7"
  [ -z "${8:-}" ] || printf '     "comment": "%s",\n' "$8"
  printf '     "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl", "referenceLocator": "%s"}]}' "$6"
}

relationships=()
link() { relationships+=("$(printf '    {"spdxElementId": "SPDXRef-skiff", "relationshipType": "STATIC_LINK", "relatedSpdxElement": "SPDXRef-%s"}' "$1")"); }

{
  printf '{\n  "spdxVersion": "SPDX-2.3", "dataLicense": "CC0-1.0", "SPDXID": "SPDXRef-DOCUMENT",\n'
  printf '  "name": "skiff-%s-%s",\n' "$version" "$target"
  printf '  "documentNamespace": "https://spdx.org/spdxdocs/skiff-%s-%s-%s",\n' "$version" "$target" "$checksum"
  printf '  "creationInfo": {"created": "%s", "creators": ["Tool: skiff hack/sbom.sh"]},\n' "$created"
  printf '  "documentDescribes": ["SPDXRef-skiff"],\n  "packages": [\n'
  package skiff skiff "$version" Apache-2.0 NOASSERTION "pkg:cargo/skiff@$version" "$checksum" \
    "The static binary /skiff of the image for $target"
  while IFS='|' read -r name crate_version license; do
    id=crate-$name-$crate_version
    id=${id//[^a-zA-Z0-9.-]/-}
    printf ',\n'
    package "$id" "$name" "$crate_version" "$(spdx_license "$license" "$name")" NOASSERTION \
      "pkg:cargo/$name@$crate_version" "$(lock_checksum "$name" "$crate_version")"
    link "$id"
  done <<<"$crates"
  printf ',\n'
  package glibc glibc "$glibc" LGPL-2.1-or-later "Organization: GNU Project" "pkg:generic/glibc@$glibc" "" \
    "libc.a of $cc, linked statically"
  link glibc
  printf ',\n'
  package libgcc libgcc "$gcc" "GPL-3.0-or-later WITH GCC-exception-3.1" "Organization: GNU Project" \
    "pkg:generic/libgcc@$gcc" "" "libgcc.a and libgcc_eh.a of $cc, linked statically"
  link libgcc
  printf ',\n'
  package openssl openssl "$openssl" Apache-2.0 "Organization: OpenSSL Software Foundation" \
    "pkg:generic/openssl@$openssl" "" \
    "Built by hack/openssl.sh from the source of the openssl-src crate Cargo.lock pins, configured with only what skiff uses, linked statically"
  link openssl
  printf '\n  ],\n  "relationships": [\n'
  printf '    {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES", "relatedSpdxElement": "SPDXRef-skiff"}'
  for relationship in "${relationships[@]}"; do printf ',\n%s' "$relationship"; done
  printf '\n  ]\n}\n'
}
