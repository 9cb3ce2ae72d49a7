// Package service runs the control service process: it loads or creates the cluster PKI
// in the data directory, starts the embedded etcd (or connects to an external cluster),
// serves the API over TLS with client-certificate authentication, writes the admin
// kubeconfig, and runs the controllers against the API through a loopback client, as
// kube-controller-manager does.
//
// It owns the data directory (pki/, etcd/, admin.kubeconfig), the listening socket and
// the goroutines it starts; all stop when Run's context ends.
package service
