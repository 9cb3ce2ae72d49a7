// Package etcdtest starts real etcd members for tests of code that talks to an external
// etcd: a single member in a temporary directory serving clients over TLS on loopback
// and requiring client certificates, as production clusters are run. It touches only
// the temporary directories and the loopback port it is given by the kernel.
package etcdtest
