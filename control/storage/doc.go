// Package storage keeps the control service's objects in etcd: one key per object,
// resourceVersion taken from the key's etcd mod revision, optimistic concurrency through
// etcd transactions comparing that revision, watches from a revision, and periodic
// compaction. It also starts the embedded single-member etcd used by default.
//
// It owns the etcd client it is given (or the embedded server it starts) and touches
// only keys under its prefix and, when embedded, the etcd data directory.
package storage
