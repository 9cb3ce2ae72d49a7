// Package plinthd wires the node daemon's subsystems together and runs them: the node
// lock, the health and metrics endpoint, the systemd notify protocol and watchdog, and,
// unless it runs standalone, the Node registration, Lease heartbeats and status reports.
//
// It owns the goroutines it starts and stops them all before Run returns; it touches
// only what those subsystems touch.
package plinthd
