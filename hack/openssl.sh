#!/usr/bin/env bash
# Builds the static OpenSSL that `make static` links into the image's binary: the source the
# openssl-src crate bundles (the version Cargo.lock pins for the `vendored` feature), configured
# with only what skiff uses, and prints the install directory (OPENSSL_DIR) on stdout.
#
#   dir=$(hack/openssl.sh [TARGET])   # <cargo target dir>/openssl/<TARGET>/<version>-<hash>
#
# TARGET is the Rust target triple of the binary, by default the machine's own
# (<arch>-unknown-linux-gnu). For another architecture OpenSSL is cross-compiled with Debian's
# <arch>-linux-gnu-gcc (hack/cross-tools.sh installs it).
#
# skiff needs TLS 1.2 and 1.3 as a client (kube-apiserver) and as a server (HTTPS /metrics,
# native-tls' acceptor: TLS 1.2 with ECDHE or DHE), X.509 parsing and chain verification, PEM
# and PKCS#8 keys (RSA, EC, Ed25519), and a self-signed P-256 certificate. Hashing is done by
# the sha2 crate, not OpenSSL. Everything else is configured out (see OPTIONS); the reasons,
# and what each step saved, are in docs/benchmarks-history.md ("Binary size and build cost").
#
# The result is reused while it exists (a clean clone compiles OpenSSL once); `make clean`
# removes it with the rest of the target directory. A finished build is also kept in a cache
# outside the clone (SKIFF_OPENSSL_CACHE, by default ~/.cache/skiff/openssl; `off` turns it
# off), under the same key, so a fresh clone on a machine that built this very OpenSSL before
# copies it instead of compiling it again, as ccache would. OPENSSL_JOBS sets make's -j (default: the
# number of CPUs).
set -euo pipefail

script=$(cd "$(dirname "$0")" && pwd -P)/$(basename "$0")
cd "$(dirname "$script")/.."

# Configure options. Kept on purpose: DH (native-tls' acceptor sets DHE parameters), X25519 and
# ML-KEM (TLS 1.3's default key shares), RSA, ECDSA and Ed25519, AES-GCM and ChaCha20-Poly1305.
# Not usable: no-deprecated (the openssl crate calls DH_*, RSA_* and AES_* functions it removes).
OPTIONS=(
  # a static library without plugins, apps, tests or docs; never reads an openssl.cnf
  no-shared no-module no-dso no-engine no-apps no-tests no-docs no-autoload-config
  no-ui-console no-afalgeng no-async no-comp no-zlib no-legacy
  # protocols: TLS 1.2 and 1.3 over TCP only
  no-ssl3 no-tls1 no-tls1_1 no-dtls no-quic no-srp no-psk no-srtp no-nextprotoneg
  no-weak-ssl-ciphers no-ssl-trace
  # PKI formats and services skiff never parses or calls
  no-ct no-ocsp no-http no-cms no-ts no-cmp
  # algorithms outside TLS 1.2/1.3's usual suites and skiff's key types
  no-aria no-bf no-blake2 no-camellia no-cast no-des no-dsa no-gost no-idea no-md2 no-md4
  no-mdc2 no-ocb no-rc2 no-rc4 no-rc5 no-rmd160 no-scrypt no-seed no-siphash no-siv no-sm2
  no-sm3 no-sm4 no-whirlpool no-ec2m no-ml-dsa no-slh-dsa no-lms
  # TLS extras and internals skiff never uses: multi-block AES-CBC-HMAC, file names in error
  # records, socket BIOs (skiff's own sockets carry TLS), RFC 3779 certificate extensions,
  # CMAC, Argon2, deprecated TLS groups, integrity-only TLS 1.3 suites, the thread pool, the
  # secure heap
  no-multiblock no-filenames no-sock no-rfc3779 no-cmac no-argon2 no-tls-deprecated-ec
  no-integrity-only-ciphers no-thread-pool no-secure-memory
)
# -Os: 0.4 MB smaller than -O2 for handshakes 0.1-0.2 ms slower (the assembly is the same).
# -ffunction-sections/-fdata-sections let the linker drop the functions skiff never calls (the
# cc crate adds them for the vendored build too); -fPIC because the binary is a static PIE.
# No unwind tables for the C code (0.35 MB): a Rust panic never unwinds through OpenSSL (its
# callbacks are extern "C", where an unwinding panic aborts), so nothing reads them.
CFLAGS_EXTRA=(-Os -ffunction-sections -fdata-sections -fPIC -fno-asynchronous-unwind-tables
  -fno-unwind-tables)

die() {
  echo "hack/openssl.sh: $*" >&2
  exit 1
}

target=${1:-$(uname -m)-unknown-linux-gnu}
arch=${target%%-*}
# OpenSSL's name for the platform; with no cross prefix it compiles with the machine's cc.
case $target in
  x86_64-unknown-linux-gnu) platform=linux-x86_64 ;;
  aarch64-unknown-linux-gnu) platform=linux-aarch64 ;;
  *) die "unsupported target $target (x86_64-unknown-linux-gnu or aarch64-unknown-linux-gnu)" ;;
esac
cross=()
compiler=cc
if [ "$arch" != "$(uname -m)" ]; then
  cross=(--cross-compile-prefix="$arch-linux-gnu-")
  compiler=$arch-linux-gnu-gcc
fi

for tool in "${CARGO:-cargo}" perl make "$compiler"; do
  command -v "$tool" >/dev/null ||
    die "$tool not found; install it (perl, make and a C compiler build OpenSSL; hack/cross-tools.sh $target installs a cross compiler)"
done

# The openssl-src crate's source and the cargo target directory, from cargo itself.
metadata=$("${CARGO:-cargo}" metadata --format-version 1 --features vendored) ||
  die "cargo metadata failed (its error is above); fix Cargo.toml, or run cargo fetch"
manifest=$(printf '%s' "$metadata" |
  grep -o '"manifest_path":"[^"]*/openssl-src-[0-9][^"/]*/Cargo.toml"' | head -n 1 |
  sed 's/^"manifest_path":"//; s/"$//') ||
  true
[ -n "$manifest" ] ||
  die "openssl-src is not in cargo metadata; keep the vendored feature (async-native-tls/vendored) in Cargo.toml"
crate_dir=$(dirname "$manifest")
source_dir=$crate_dir/openssl
if [ ! -f "$source_dir/Configure" ] || [ ! -f "$source_dir/VERSION.dat" ]; then
  die "$source_dir has no OpenSSL source; run \`cargo fetch\` to download the openssl-src crate"
fi
target_dir=$(printf '%s' "$metadata" | grep -o '"target_directory":"[^"]*"' |
  sed 's/^"target_directory":"//; s/"$//') || true
[ -n "$target_dir" ] || die "cargo metadata did not name the target directory"

version=$(sed -n 's/^MAJOR=//p; s/^MINOR=//p; s/^PATCH=//p' "$source_dir/VERSION.dat" | paste -sd.)
# The directory name changes with anything that changes the libraries: the crate (its version
# names the OpenSSL release and its own patches), the options, the flags and this script's code
# (not its comments, so a reworded comment keeps the cached build).
hash=$(
  {
    basename "$crate_dir"
    printf '%s\n' "$platform" "${OPTIONS[@]}" "${CFLAGS_EXTRA[@]}"
    grep -v '^[[:space:]]*#' "$script"
  } | sha256sum | cut -c1-12
)
prefix=$target_dir/openssl/$target/$version-$hash

if [ -f "$prefix/.complete" ]; then
  echo "hack/openssl.sh: reusing $prefix" >&2
  echo "$prefix"
  exit 0
fi
cache_root=${SKIFF_OPENSSL_CACHE:-${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/skiff/openssl}
cached=$cache_root/$target/$version-$hash
if [ "$cache_root" != off ] && [ -f "$cached/.complete" ]; then
  mkdir -p "$(dirname "$prefix")"
  rm -rf "$prefix"
  cp -R "$cached" "$prefix"
  echo "hack/openssl.sh: copied $prefix from the cache $cached" >&2
  echo "$prefix"
  exit 0
fi

build=$target_dir/openssl/$target/build-$hash
rm -rf "$build" "$prefix"
mkdir -p "$build"
trap 'rm -rf "$build"' EXIT
echo "hack/openssl.sh: building OpenSSL $version for $target into $prefix (options: ${OPTIONS[*]})" >&2
start=$(date +%s)
cp -R "$source_dir/." "$build/"
chmod -R u+w "$build"
# The AVX-512 (VAES) AES-GCM code is 0.7 MB of unrolled assembly, the largest single part of
# libcrypto in the binary. Left out the way OpenSSL leaves it out for an assembler too old for
# it: the generator emits a stub that reports the CPU as not capable, and AES-GCM runs on the
# AES-NI/AVX code instead (gigabytes per second; skiff moves kilobytes to megabytes).
gcm=$build/crypto/modes/asm/aes-gcm-avx512.pl
# shellcheck disable=SC2016 # a Perl line, matched literally
gcm_switch='if ($avx512vaes>0) { #<<<'
[ "$(grep -cxF "$gcm_switch" "$gcm")" = 1 ] ||
  die "$gcm no longer has the line '$gcm_switch'; update the AVX-512 step of this script for the new OpenSSL"
# shellcheck disable=SC2016
sed -i 's/^if (\$avx512vaes>0) { #<<<$/if (0) { #<<< left out by hack\/openssl.sh/' "$gcm"
grep -q '^if (0) { #<<< left out by hack/openssl.sh$' "$gcm" || die "could not edit $gcm"
(
  cd "$build"
  # --openssldir as openssl-src sets it: where the default CA bundle and certs directory are
  # looked up (SSL_CERT_FILE and SSL_CERT_DIR override it), not a path inside this build.
  perl ./Configure "$platform" "${cross[@]}" --prefix="$prefix" --openssldir=/usr/local/ssl \
    --libdir=lib "${OPTIONS[@]}" "${CFLAGS_EXTRA[@]}"
  make -j "${OPENSSL_JOBS:-$(nproc)}" build_libs
  make install_dev
) >"$build.log" 2>&1 || {
  tail -n 40 "$build.log" >&2
  die "building OpenSSL failed (full log: $build.log); perl, make and a C compiler are needed"
}
rm -f "$build.log"
touch "$prefix/.complete"
echo "hack/openssl.sh: OpenSSL $version for $target built in $(($(date +%s) - start)) s" >&2
if [ "$cache_root" != off ] && mkdir -p "$(dirname "$cached")" 2>/dev/null; then
  rm -rf "$cached.partial"
  cp -R "$prefix" "$cached.partial" && rm -rf "$cached" && mv "$cached.partial" "$cached" ||
    echo "hack/openssl.sh: could not keep the build in the cache $cache_root (the build itself is fine)" >&2
fi
echo "$prefix"
