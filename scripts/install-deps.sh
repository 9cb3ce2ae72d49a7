#!/usr/bin/env bash
# Installs what building, running and testing Plinth needs on Debian bookworm, and
# checks what cannot be installed from here. Idempotent: installs only what is missing.
set -euo pipefail

need_go_minor=26
debian_packages=(
	iproute2        # ip netns / ip link: kernel tests and e2e test hosts
	ca-certificates
	make
	git
	procps          # pkill/pgrep in scripts
	e2fsprogs       # mkfs.ext4: the DiskPressure kernel test fills a loop-mounted ext4
	util-linux      # losetup, mount
	busybox-static  # /bin/busybox: the test images daemon/images/imagetest builds; the pods kernel tests' root filesystems
	gcc             # cgo: daemon/seccomp reaches libseccomp through kernel/seccomp; building runc
	pkg-config      # cgo: libseccomp-golang (and runc's seccomp support) find libseccomp with pkg-config
	libseccomp-dev  # seccomp profiles are validated and compiled with libseccomp (2.5.4 on bookworm); runc links it
	dbus            # dbus-daemon: daemon/shutdown's tests run a private bus with a fake systemd-logind
	nftables        # nft: tests check that `nft list ruleset` prints plinthd's tables (plinthd itself never runs it)
	debootstrap     # the system tests' Debian root (test/system, cached in /var/cache/plinth)
	systemd-container # systemd-nspawn boots that root for the system tests
	qemu-system-x86 # make test-vm: the kernel tests on Debian's 6.1 and 6.12 kernels under qemu
	xz-utils        # make test-vm: 6.12's modules ship as .ko.xz
)

missing=()
for p in "${debian_packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-deps: missing Debian packages ${missing[*]}; run as root or install them" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

export PATH=$PATH:/usr/local/go/bin
if ! command -v go >/dev/null; then
	echo "install-deps: Go 1.${need_go_minor} or newer is required (expected at /usr/local/go)" >&2
	exit 1
fi
minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if ((minor < need_go_minor)); then
	echo "install-deps: Go 1.${need_go_minor} or newer is required, found $(go env GOVERSION)" >&2
	exit 1
fi
if ! command -v kubectl >/dev/null; then
	echo "install-deps: kubectl is required by the end-to-end tests (expected at /usr/bin/kubectl)" >&2
	exit 1
fi

# runc, the OCI runtime plinthd drives. Debian's 1.1.5 predates years of fixes (among
# them the fd-leak breakout of CVE-2024-21626 and the cgroup v2 work); build the pinned
# release from the module proxy with seccomp support instead (about 20 s).
runc_version=v1.5.2
# (grep reads a here-string: with pipefail, grep -q ending a pipe early fails it.)
if ! grep -q "^runc version ${runc_version#v}\$" <<<"$(runc --version 2>/dev/null)"; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-deps: runc ${runc_version} is missing; run as root to build it into /usr/local/bin" >&2
		exit 1
	fi
	echo "install-deps: building runc ${runc_version} into /usr/local/bin"
	GOBIN=/usr/local/bin CGO_ENABLED=1 go install -tags seccomp "github.com/opencontainers/runc@${runc_version}"
fi

# nfpm builds the .deb and .rpm packages (make packages). Pinned: later releases do not
# resolve their dependencies through the module proxy here.
nfpm_version=v2.45.2
nfpm_bin=$(command -v nfpm || true)
if [[ -z $nfpm_bin ]] || ! grep -Eq "^\s*mod\s+github.com/goreleaser/nfpm/v2\s+${nfpm_version}\s" <<<"$(go version -m "$nfpm_bin" 2>/dev/null)"; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-deps: nfpm ${nfpm_version} is missing; run as root to install it into /usr/local/bin" >&2
		exit 1
	fi
	echo "install-deps: installing nfpm ${nfpm_version} into /usr/local/bin"
	GOBIN=/usr/local/bin go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@${nfpm_version}"
fi

# --- Generate-time tools (only for `install-deps.sh generate`, so `make test` never
# needs them): `go generate` compiles bpf/**/*.c with bpf2go, pinned to clang-14 and
# llvm-strip-14 so the committed objects are reproducible; bpftool dumps
# bpf/headers/vmlinux.h (see bpf/README.md).
install_generate_tools() {
	local tools=(clang-14 llvm-14 libbpf-dev bpftool) want=() p
	for p in "${tools[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || want+=("$p")
	done
	((${#want[@]})) || return 0
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-deps: generate needs ${want[*]}; run as root or install them" >&2
		exit 1
	fi
	echo "install-deps: installing ${want[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
}
if [[ ${1:-} == generate ]]; then
	install_generate_tools
fi
