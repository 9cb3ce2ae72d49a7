// Package e2e runs Plinth's real processes on loopback — plinth-control with its
// embedded etcd, plinthd, the installed kubectl and client-go — and checks what an
// operator would see. Binaries come from PLINTH_BIN_DIR (set by `make test`), or are
// built into a temporary directory.
//
// It touches only temporary directories, loopback ports and the processes it starts,
// which it kills when a test ends, even on failure.
package e2e
