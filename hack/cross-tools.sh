#!/usr/bin/env bash
# Installs what building and testing the static binary for another architecture needs, when it
# is missing: the Rust standard library for the target (rustup), Debian's cross C compiler and
# glibc for it (OpenSSL is compiled with them and the binary is linked against their libc.a),
# and qemu's user-mode emulator, which runs the binary in the emulated smoke test.
#
#   hack/cross-tools.sh aarch64-unknown-linux-gnu
#
# Nothing is installed that is already there; packages come from apt-get (as root, or with
# sudo), the Rust target from rustup. A target the machine itself runs needs only rustup's part.
set -euo pipefail

die() {
  echo "hack/cross-tools.sh: $*" >&2
  exit 1
}

[ $# -eq 1 ] || die "usage: $0 TARGET (e.g. aarch64-unknown-linux-gnu)"
target=$1
arch=${target%%-*}
case $target in
  x86_64-unknown-linux-gnu) debian_arch=amd64 ;;
  aarch64-unknown-linux-gnu) debian_arch=arm64 ;;
  *) die "unsupported target $target; skiff's images are built for x86_64-unknown-linux-gnu and aarch64-unknown-linux-gnu" ;;
esac

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  command -v rustup >/dev/null || die "rustup not found; install the Rust standard library for $target another way"
  echo "hack/cross-tools.sh: rustup target add $target"
  rustup target add "$target"
fi

[ "$arch" = "$(uname -m)" ] && exit 0

packages=()
command -v "$arch-linux-gnu-gcc" >/dev/null || packages+=("gcc-$arch-linux-gnu")
[ -f "/usr/$arch-linux-gnu/lib/libc.a" ] || packages+=("libc6-dev-$debian_arch-cross")
command -v "qemu-$arch" >/dev/null || command -v "qemu-$arch-static" >/dev/null ||
  packages+=(qemu-user-static)
[ ${#packages[@]} -eq 0 ] && exit 0

command -v apt-get >/dev/null || die "apt-get not found; install ${packages[*]} (Debian names) yourself"
sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "installing ${packages[*]} needs root; run as root or install them yourself"
  sudo=(sudo)
fi
echo "hack/cross-tools.sh: installing ${packages[*]}"
export DEBIAN_FRONTEND=noninteractive
# No recommends: qemu's would register binfmt handlers, which needs privileges and is not used
# (the test runs qemu directly).
install=("${sudo[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}")
"${install[@]}" >/dev/null || { "${sudo[@]}" apt-get update -q >/dev/null && "${install[@]}" >/dev/null; }
