// Package controlclient is how a node obtains and keeps its credentials for the control
// service: `plinthctl join` (Join) pins the cluster CA by the hash of its public key,
// generates the node's private key locally, has the control service sign a client
// certificate for system:node:<name> using a bootstrap token, and writes plinthd's
// kubeconfig; plinthd (CertRenewer) renews that certificate at 70-90% of its lifetime,
// authenticated by the certificate itself, as kubelet's certificate manager does.
//
// It touches only the files it is told about: the kubeconfig, and in the certificate
// directory the node's combined certificate-and-key file (plinthd-client.pem, mode
// 0600) and the CA (ca.crt). Every write is atomic: a temporary file in the same
// directory, fsync, rename, fsync of the directory. The certificate and key share one
// file so that a reader (client-go reloads it) never sees a new certificate with an old
// key. Its only goroutine is CertRenewer.Run, owned by the caller.
package controlclient
