// Package bench holds the scenario benchmarks that go into docs/benchmarks.md: each
// starts the real component (the control service with embedded etcd, over TLS, with
// client-go as the client; plinthd as its own process) and reports its numbers
// through b.ReportMetric.
//
// It touches temporary directories and loopback ports; the pod benchmark also runs
// containers with runc under a uniquely named cgroup parent, with their network in a
// fresh network namespace, and removes all of it at the end, even on failure.
package bench
