// Package pki owns the control service's public key infrastructure: the cluster CA, the
// serving certificate plinth-control presents on :6443, the client certificates that
// identify admins, nodes and the control service's own loopback clients, and the
// kubeconfig files that carry them.
//
// Every client of plinth-control must present a certificate signed by the cluster CA;
// the certificate's CommonName is the user and its Organizations are the groups, as in
// Kubernetes' x509 authenticator.
//
// It touches only files under the directory given to LoadOrCreate (ca.crt, ca.key,
// serving.crt, serving.key) and the kubeconfig paths callers name. Every write is
// atomic (temporary file in the same directory, fsync, rename, fsync of the directory),
// so a crash leaves either the old file or the new one.
package pki
