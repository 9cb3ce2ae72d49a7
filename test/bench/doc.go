// Package bench holds the scenario benchmarks that go into docs/benchmarks.md: each
// starts the real component (the control service with embedded etcd, over TLS, with
// client-go as the client) and reports its numbers through b.ReportMetric.
//
// It touches only temporary directories and loopback ports.
package bench
