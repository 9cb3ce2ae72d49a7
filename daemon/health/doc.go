// Package health holds plinthd's internal health checks and the local HTTP endpoint
// that shows them: /healthz (kubelet-style "[+]name ok" / "[-]name failed: reason"
// lines), /metrics (Prometheus exposition of a caller-supplied Gatherer) and whatever
// read-only views other subsystems mount with Server.Handle (/pressure).
//
// The same Checker gates the systemd watchdog pings (package internal/watchdog), so a
// check that fails or hangs both turns /healthz red and lets systemd restart plinthd.
//
// It owns the listening socket and the HTTP server goroutines it starts in Server.Run,
// all stopped before Run returns. It touches nothing else; checks are the callers'.
package health
