// Package logindtest gives graceful node shutdown's tests a real D-Bus with a fake
// systemd-logind on it: PrivateBus starts a dbus-daemon of the test's own, and
// NewLogind exports on it the part of org.freedesktop.login1 (Inhibit handing out a
// pipe's write end as logind hands out a FIFO's, the InhibitDelayMaxUSec property, the
// PrepareForShutdown signal) and of org.freedesktop.systemd1 (KillUnit, whose SIGHUP to
// systemd-logind.service rereads InhibitDelayMaxSec from the drop-in directory) that
// plinthd uses.
//
// It owns the dbus-daemon process, its socket directory and the pipes it hands out, all
// removed when the test ends.
package logindtest
