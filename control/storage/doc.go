// Package storage keeps the control service's objects in etcd: one key per object,
// resourceVersion taken from the key's etcd mod revision, optimistic concurrency through
// etcd transactions comparing that revision, watches from a revision, and periodic
// compaction. It also starts the embedded single-member etcd used by default, and
// connects to an external etcd cluster (ConnectExternal: TLS with client certificates
// read at each handshake, and a start-up check that reports why no member answers).
//
// It owns the etcd client it is given (or the embedded server it starts) and touches
// only keys under its prefix and, when embedded, the etcd data directory; of the
// filesystem it otherwise reads only the TLS files it is given.
package storage
