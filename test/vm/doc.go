// Package vm runs Plinth's kernel tests on other kernels: it builds the test binary of
// every package whose tests use internal/kerneltest, boots each of Debian's linux-image
// kernels (6.1 and 6.12 by default) under qemu's software emulation with a busybox
// initramfs, pure cgroup v2 and the kernel's own modules, runs the binaries there, and
// turns their output into a matrix of kernel × package recording, for every test,
// pass, fail, or skip with the missing kernel feature named by kerneltest.Require.
//
// It owns a cache directory (kernel packages, unpacked and with decompressed modules,
// by default /var/cache/plinth/vm) and a temporary work directory per run, which it
// removes. It touches nothing on the host beyond those and the qemu processes it
// starts, which it kills when its context ends.
package vm
