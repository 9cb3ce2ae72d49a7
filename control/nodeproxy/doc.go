// Package nodeproxy carries requests from the control service to nodes' APIs (kubelet's
// :10250; plinthd's daemon/nodeapi): today pods/log. It dials the node's InternalIP at
// status.daemonEndpoints.kubeletEndpoint.port, verifies the node's serving certificate
// against the cluster CA for that address, authenticates with the control service's
// own client certificate, and streams the answer back, flushing as it goes so a
// followed log arrives line by line.
//
// It owns an HTTP transport and its idle connections; it reads Nodes through the
// NodeGetter it is given.
package nodeproxy
