#!/usr/bin/env bash
# What the static binary is made of: the bytes of its named symbols by origin (Rust, libcrypto,
# libssl, glibc with libgcc), and the sections no symbol covers. It needs a binary with its
# symbol table, so build one without strip first (an OpenSSL is compiled for that target dir):
#
#   CARGO_TARGET_DIR=target/unstripped CARGO_PROFILE_RELEASE_STRIP=false make static
#   hack/size-breakdown.sh target/unstripped/x86_64-unknown-linux-gnu/release/skiff
#
# OPENSSL_DIR names the OpenSSL the binary was linked with (default: hack/openssl.sh's, for the
# default target dir). Static functions of the C libraries are matched by name, so a few
# same-named ones may land in the wrong row; docs/benchmarks-history.md ("Binary size and build cost") has
# the figures this printed.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 BINARY (an unstripped build; see the comment at the top of $0)" >&2
  exit 2
fi
binary=$1
for tool in nm size cc; do
  command -v "$tool" >/dev/null || {
    echo "hack/size-breakdown.sh: $tool not found; install binutils and a C compiler" >&2
    exit 1
  }
done
if [ -z "$(nm "$binary" 2>/dev/null | head -n 1)" ]; then
  echo "hack/size-breakdown.sh: $binary has no symbols; build it with CARGO_PROFILE_RELEASE_STRIP=false" >&2
  exit 1
fi
openssl=${OPENSSL_DIR:-$("$(dirname "$0")/openssl.sh")}

# The C archives the static link took symbols from.
libc=$(cc -print-file-name=libc.a)
glibc=("$libc" "$(cc -print-file-name=libgcc.a)" "$(cc -print-file-name=libgcc_eh.a)")
for archive in "$openssl/lib/libssl.a" "$openssl/lib/libcrypto.a" "${glibc[@]}"; do
  [ -f "$archive" ] || {
    echo "hack/size-breakdown.sh: $archive not found (set OPENSSL_DIR, or install libc6-dev)" >&2
    exit 1
  }
done
# libm.a may be a linker script naming the real archive (libm-<version>.a).
for archive in "$(dirname "$libc")"/libm.a "$(dirname "$libc")"/libm-*.a; do
  if [ -f "$archive" ] && [ "$(head -c 7 "$archive")" = '!<arch>' ]; then
    glibc+=("$archive")
  fi
done

names=$(mktemp)
trap 'rm -f "$names"' EXIT
{
  nm -A "$openssl/lib/libssl.a" 2>/dev/null | awk 'NF >= 3 { print "libssl", $NF }'
  nm -A "$openssl/lib/libcrypto.a" 2>/dev/null | awk 'NF >= 3 { print "libcrypto", $NF }'
  for archive in "${glibc[@]}"; do
    nm -A "$archive" 2>/dev/null | awk 'NF >= 3 { print "glibc+libgcc", $NF }'
  done
} >"$names"

echo "named symbols by origin (bytes):"
nm -S --size-sort -t d "$binary" | awk -v names="$names" '
  BEGIN { while ((getline line < names) > 0) { split(line, f, " "); if (!(f[2] in from)) from[f[2]] = f[1] } }
  NF >= 4 {
    size = $2 + 0; name = $4; base = name; sub(/\..*/, "", base)
    if (name ~ /^_ZN/ || name ~ /^_R/ || name ~ /rust/) origin = "Rust"
    else if (name in from) origin = from[name]
    else if (base in from) origin = from[base]
    else origin = "other"
    total[origin] += size; all += size
  }
  END {
    for (o in total) printf "  %-14s %10d\n", o, total[o] | "sort -k2 -nr"
    close("sort -k2 -nr")
    printf "  %-14s %10d\n", "sum", all
  }'
echo "sections no named symbol covers (bytes):"
size -A "$binary" | awk '$1 ~ /^\.(eh_frame|eh_frame_hdr|gcc_except_table|rela\.dyn|relr\.dyn)$/ { printf "  %-18s %10d\n", $1, $2 }'
