// Package watchdog speaks the systemd service notification protocol (sd_notify) for
// plinthd and plinth-control: READY=1 once the daemon does its job (plinthd: the node
// is registered and heartbeating; plinth-control: the API serves), STATUS= lines saying
// what the daemon is doing, WATCHDOG=1 keep-alive pings while the daemon's internal
// health checks pass, and STOPPING=1 on shutdown.
//
// Withholding the keep-alive is deliberate: when a health check fails (a hung control
// loop, a stuck lease renewer, an API that no longer answers), systemd's WatchdogSec
// expires and it restarts the daemon.
//
// It starts no goroutines: Watchdog.Run is the loop, run by its caller until its
// context is done. It touches nothing but the datagram socket named by NOTIFY_SOCKET and the WATCHDOG_USEC and
// WATCHDOG_PID environment variables, which it only reads. Without NOTIFY_SOCKET every
// notification is a no-op, so the daemons run the same outside systemd.
package watchdog
