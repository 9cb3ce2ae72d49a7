// Package kerneltest is the one place a kernel test may skip: Require names the kernel
// features a test needs and skips with their names when one is missing, or fails the
// test instead when PLINTH_REQUIRE_KERNEL=1 (set by .ci/run), so CI never passes on a
// silently skipped kernel test. NewNetNS gives a test a fresh network namespace that is
// removed by t.Cleanup even when the test fails.
//
// It touches only what the probes read (/proc, /sys) and the namespaces it creates.
package kerneltest
