package node

import "time"

// Retry backoff after failed registration or lease renewal, as the Leases
// documentation and kubelet prescribe: 200 ms, doubling, capped at 7 s.
const (
	backoffInitial = 200 * time.Millisecond
	backoffMax     = 7 * time.Second
)

// backoffDelay returns how long to wait after the given number of consecutive
// failures (1 for the first): 200ms, 400ms, 800ms, ... capped at 7s.
func backoffDelay(failures int) time.Duration {
	if failures < 1 {
		return 0
	}
	d := backoffInitial
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= backoffMax {
			return backoffMax
		}
	}
	return d
}
