#!/usr/bin/env bash
# Builds the plinth-node and plinth-control packages, .deb and .rpm, with nfpm.
#
#   packaging/build.sh BIN_DIR OUT_DIR VERSION [RELEASE]
#
# BIN_DIR holds the built plinthd, plinth-shim, plinthctl and plinth-control; VERSION is
# a semantic version (a leading v is dropped; v0.1.0-dev.abc123 becomes the Debian
# version 0.1.0~dev.abc123-RELEASE); RELEASE (default 1) is the package revision, which
# the system test raises to build an upgrade of the same binaries. PLINTH_PACKAGES and
# PLINTH_FORMATS (space-separated) narrow what is built; both default to everything.
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# < 3)); then
	echo "usage: packaging/build.sh BIN_DIR OUT_DIR VERSION [RELEASE]" >&2
	exit 2
fi
bin=$(realpath "$1")
out=$2
version=${3#v}
release=${4:-1}
for b in plinthd plinth-shim plinthctl plinth-control; do
	if [[ ! -x $bin/$b ]]; then
		echo "packaging: $bin/$b is missing; run make build first" >&2
		exit 1
	fi
done
nfpm=$(command -v nfpm || true)
if [[ -z $nfpm ]]; then
	echo "packaging: nfpm is missing; scripts/install-deps.sh installs it" >&2
	exit 1
fi
mkdir -p "$out"
export PLINTH_BIN=$bin PLINTH_PKG_VERSION=$version PLINTH_PKG_RELEASE=$release
for pkg in ${PLINTH_PACKAGES:-plinth-node plinth-control}; do
	for format in ${PLINTH_FORMATS:-deb rpm}; do
		"$nfpm" package --config "packaging/$pkg.yaml" --packager "$format" --target "$out/" >/dev/null || {
			echo "packaging: nfpm failed on $pkg ($format)" >&2
			exit 1
		}
	done
done
ls -1 "$out"/plinth-*
