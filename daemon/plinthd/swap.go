package plinthd

import (
	"fmt"
	"log/slog"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/pods/bundle"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
)

// containerSwap is how containers' swap is limited on this host: memorySwap's
// behaviour where the cgroups account swap, nothing where they cannot (preflight
// warns, or fails LimitedSwap, before this runs), and the node's swap total for
// LimitedSwap's shares.
func containerSwap(cfg config.Config, sys *features.System, mode cgroup.Mode, logger *slog.Logger) (bundle.Swap, error) {
	devs, err := sys.Swap()
	if err != nil {
		return bundle.Swap{}, fmt.Errorf("swap areas: %w", err)
	}
	total := features.SwapTotal(devs)
	acct := sys.SwapAccounting(mode)
	if !acct.Available {
		logger.Warn("containers' swap is not limited", "reason", acct.Reason, "memorySwap.swapBehavior", cfg.MemorySwap.SwapBehavior)
		return bundle.Swap{}, nil
	}
	if total > 1<<62 {
		total = 1 << 62 // a sum of kernel KiB figures; keeps int64 arithmetic safe
	}
	return bundle.Swap{Behavior: cfg.MemorySwap.SwapBehavior, Unified: mode == cgroup.Unified, NodeSwapBytes: int64(total)}, nil
}
