// Package kerneltest is the one place a kernel test may skip: Require names the kernel
// features a test needs and skips with their names when one is missing, or fails the
// test instead when PLINTH_REQUIRE_KERNEL=1 (set by .ci/run), so CI never passes on a
// silently skipped kernel test. NewNetNS gives a test a fresh network namespace that is
// removed by t.Cleanup even when the test fails.
//
// Where kernel/features has a probe for a feature (PSI, BTF, seccomp, ring buffers,
// nftables, conntrack), the Feature uses it, so a test skips for exactly the reason
// `plinthctl check` reports.
//
// It touches only what the probes read (/proc, /sys), what they create and free at
// once (a BPF map, an nftables table in a throwaway network namespace) and the
// namespaces it creates.
package kerneltest
