//go:build linux

package plinthd

import (
	"log/slog"

	"github.com/plinth/plinth/daemon/pods/podcgroup"
	"github.com/plinth/plinth/kernel/cgroup"
)

// cleanupPodCgroups removes the pod cgroups under parent that hold no process, in
// every hierarchy, and parent once it is empty.
func cleanupPodCgroups(parent string, logger *slog.Logger) error {
	host, err := cgroup.DetectHost()
	if err != nil {
		return err
	}
	removed, err := podcgroup.Cleanup(host, parent)
	if len(removed) > 0 {
		logger.Info("removed the pod cgroups", "parent", parent, "cgroups", len(removed))
	}
	return err
}
