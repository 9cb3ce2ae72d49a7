# Plinth: `make run` starts a one-node cluster, `make test` runs every test.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin

# A release tag when there is one, else v0.1.0-dev.<commit>: always a semantic version,
# because the Node's VERSION column and kubectl show it.
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.1.0-dev.$$(git rev-parse --short HEAD 2>/dev/null || echo unknown))
LDFLAGS := -X github.com/plinth/plinth/internal/version.version=$(VERSION)
BIN := $(CURDIR)/bin
GO_TEST_FLAGS ?= -count=1 -timeout 20m

.PHONY: all deps build run test unit e2e check generate bench clean packages test-system test-vm kernel-matrix test-host

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@mkdir -p $(BIN)
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

run: build
	scripts/run-local.sh

# Unit, kernel, end-to-end and system tests, then the kernel tests again on Debian's 6.1
# and 6.12 kernels in qemu (test-vm, 5 to 10 minutes). Kernel tests need root; with
# PLINTH_REQUIRE_KERNEL=1 (as in CI) a missing kernel feature fails instead of skipping
# on this machine (in the VMs a missing feature is named, see docs/kernel-matrix.md).
test: build check
	PLINTH_BIN_DIR=$(BIN) go test $(GO_TEST_FLAGS) ./...
	# The API server hands cached objects to concurrent requests without copying them:
	# its tests also run under the race detector (about 20 s).
	go test -race -count=1 ./control/apiserver/
	$(MAKE) test-system
	go run ./test/vm/vmtest

# plinth-node and plinth-control as .deb and .rpm (nfpm; packaging/README.md).
DIST := $(CURDIR)/dist
packages: build
	rm -f $(DIST)/plinth-node[-_]* $(DIST)/plinth-control[-_]*
	packaging/build.sh $(BIN) $(DIST) $(VERSION)

# The packages installed into a Debian bookworm booted with systemd-nspawn (test/system;
# the first run debootstraps the machine image into /var/cache/plinth, about a minute).
test-system: packages
	PLINTH_BIN_DIR=$(BIN) PLINTH_DIST_DIR=$(DIST) PLINTH_VERSION=$(VERSION) \
		go test $(GO_TEST_FLAGS) -tags system -v ./test/system/

# The kernel tests again inside qemu (software emulation) on Debian's 6.1 and 6.12
# kernels (test/vm, docs/kernel-matrix.md); kernel packages are cached in
# /var/cache/plinth/vm. Fails on any failing test; a missing kernel feature is named.
test-vm: deps
	go run ./test/vm/vmtest

# test-vm, and the results written into docs/kernel-matrix.md.
kernel-matrix: deps
	go run ./test/vm/vmtest -doc docs/kernel-matrix.md

# The same suites on this machine's own kernel (the Vagrant and lima machines of test/vm).
test-host:
	go run ./test/vm/vmtest -host

# The end-to-end tests alone.
e2e: build
	PLINTH_BIN_DIR=$(BIN) go test $(GO_TEST_FLAGS) -v ./test/e2e/...

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_bpfe[lb]\.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags system ./test/system/

# Regenerates the committed eBPF objects and bindings (needs clang, installed here).
generate:
	@scripts/install-deps.sh generate
	go generate ./...

bench: build
	go test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN) dist .run
