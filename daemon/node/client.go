package node

import (
	"time"

	"k8s.io/client-go/rest"
)

// ConfigureClient sets what a node agent's client of the control service needs beyond
// its kubeconfig: the user agent, and a request timeout of one lease duration, so a
// control service that accepts a request and never answers cannot hold the heartbeat
// longer than the Lease lasts. plinthd and the node simulator (test/nodesim) both use
// it, so the simulator's requests behave like plinthd's.
func ConfigureClient(cfg *rest.Config, leaseDuration time.Duration, userAgent string) {
	cfg.UserAgent = userAgent
	cfg.Timeout = leaseDuration
}
