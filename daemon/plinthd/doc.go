// Package plinthd wires the node daemon's subsystems together and runs them: the node
// lock, the health and metrics endpoint (with the /pressure view), the systemd notify
// protocol and watchdog, the pressure manager and the kernel signals that feed it,
// and, unless it runs standalone, the Node registration, Lease heartbeats and status
// reports carrying the pressure conditions, the Service proxy (daemon/proxy, with
// the rule syncer main hands in through Backends), and the pod runtime: node admission
// (daemon/admission), the Supervisor of daemon/pods fed by an informer on the node's
// pods, their status written through the API and their deletions confirmed, and the
// node's container and image garbage collection, which also reclaims disk for the
// pressure manager before it evicts. Cleanup is plinthd --cleanup.
//
// It owns the goroutines it starts and stops them all before Run returns (pod
// containers are not among them: they outlive plinthd, and the next one adopts them);
// it touches only what those subsystems touch.
package plinthd
