// Package plinthd wires the node daemon's subsystems together and runs them: the node
// lock, the health and metrics endpoint (with the /pressure view), the systemd notify
// protocol and watchdog, the pressure manager and the kernel signals that feed it,
// and, unless it runs standalone, the Node registration, Lease heartbeats and status
// reports carrying the pressure conditions, and the Service proxy (daemon/proxy, with
// the rule syncer main hands in through Backends). Cleanup is plinthd --cleanup.
//
// It owns the goroutines it starts and stops them all before Run returns; it touches
// only what those subsystems touch.
package plinthd
