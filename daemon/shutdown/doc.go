// Package shutdown is plinthd's graceful node shutdown, as kubelet's: it holds a
// systemd-logind delay inhibitor lock on "shutdown" so the machine waits for plinthd,
// raises logind's InhibitDelayMaxSec through a drop-in when the configured time does not
// fit in it, and on PrepareForShutdown(true) marks the node shutting down (for the
// Ready condition and pod admission), stops the node's pods band by band, lowest
// priority first, each band within its time, records the start and end in the state
// file and in metrics, and releases the lock so the shutdown goes on. A
// PrepareForShutdown(false) cancels: the node is back to accepting pods and the lock is
// taken again.
//
// The planning (Plan) is pure; the sequence runs on an injected clock against two small
// interfaces, Logind (DialLogind talks to the real one over D-Bus) and Pods (the pod
// runtime), so both are tested with fakes and the D-Bus side against a private
// dbus-daemon.
//
// It owns the inhibitor lock's file descriptor, its D-Bus connection and the goroutine
// reading its signals, the state file (graceful_node_shutdown_state) and the logind
// drop-in 99-plinth-shutdown.conf; it touches pods only through Pods and the node's
// status not at all (plinthd reads ShuttingDown and Changed).
package shutdown
