#!/usr/bin/env bash
# Prepares a Ubuntu 22.04/24.04, Debian 12 or Fedora machine (the Vagrant boxes and lima
# templates beside this file) to run Plinth's kernel tests on its own kernel with
# `make test-host`: the distribution's build and test packages, Go (the version go.mod
# names, from go.dev), the pinned runc, and the kernel modules a node loads at boot.
# Idempotent. Run as root with the repository at $1 (default: two levels up).
set -euo pipefail

repo=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
. /etc/os-release

case $ID in
ubuntu | debian)
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends ca-certificates curl make git gcc pkg-config \
		libseccomp-dev iproute2 nftables busybox-static e2fsprogs util-linux procps xz-utils kmod >/dev/null
	;;
fedora)
	dnf install -y -q curl make git gcc pkgconf-pkg-config libseccomp-devel iproute nftables \
		busybox e2fsprogs util-linux procps-ng xz kmod
	;;
*)
	echo "provision: $PRETTY_NAME is not one of Ubuntu, Debian, Fedora" >&2
	exit 1
	;;
esac
# The pods tests copy /bin/busybox into container roots: it must be the static one.
if [[ ! -x /bin/busybox ]]; then
	ln -sf "$(command -v busybox)" /bin/busybox
fi

go_version=$(awk '$1 == "go" { print $2; exit }' "$repo/go.mod")
if ! /usr/local/go/bin/go version 2>/dev/null | grep -q "go${go_version} "; then
	echo "provision: installing Go ${go_version}"
	rm -rf /usr/local/go
	curl -fsSL "https://go.dev/dl/go${go_version}.linux-amd64.tar.gz" | tar -C /usr/local -xz
fi
export PATH=$PATH:/usr/local/go/bin

# The runc scripts/install-deps.sh pins, with seccomp.
runc_version=$(sed -nE 's/^runc_version=(v[0-9.]+)$/\1/p' "$repo/scripts/install-deps.sh")
if ! runc --version 2>/dev/null | grep -q "^runc version ${runc_version#v}\$"; then
	echo "provision: building runc ${runc_version}"
	GOBIN=/usr/local/bin CGO_ENABLED=1 go install -tags seccomp "github.com/opencontainers/runc@${runc_version}"
fi

# What a Plinth node has loaded before plinthd starts (the same list the qemu guests
# load, test/vm/rootfs.go); missing ones are reported by the tests, not here.
modprobe -a crc32c_generic nfnetlink nf_tables nf_conntrack nf_conntrack_netlink nf_nat veth bridge overlay loop || true
# Pure cgroup v2 is what the matrix is about; say so when the machine is not.
if [[ $(stat -fc %T /sys/fs/cgroup) != cgroup2fs ]]; then
	echo "provision: $PRETTY_NAME boots with cgroup v1 or hybrid; the tests run on it as it is" >&2
fi
echo "provision: ready; run: cd $repo && sudo make test-host"
