//go:build linux

package podcgroup

import (
	"fmt"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
)

// Manager creates and removes pod cgroups under Parent.
type Manager struct {
	Parent string
}

func (m Manager) library(uid string, r *Resources) (cgroups.Manager, error) {
	p, err := Path(m.Parent, uid)
	if err != nil {
		return nil, err
	}
	res := &cgroups.Resources{SkipDevices: true}
	if r != nil {
		res.CpuShares, res.CpuQuota, res.CpuPeriod, res.Memory = r.CPUShares, r.CPUQuota, r.CPUPeriod, r.MemoryLimit
		if r.CPUQuota == 0 {
			res.CpuQuota = -1 // clear a quota an earlier Ensure set
		}
		if r.MemoryLimit == 0 {
			res.Memory = -1
		}
		limit := int64(-1)
		if r.PidsLimit > 0 {
			limit = r.PidsLimit
		}
		res.PidsLimit = &limit
	}
	return manager.New(&cgroups.Cgroup{Path: p, Resources: res})
}

// Ensure creates the pod's cgroup in every hierarchy if missing and sets r on it.
// Calling it again with other values updates the limits.
func (m Manager) Ensure(uid string, r Resources) error {
	cm, err := m.library(uid, &r)
	if err != nil {
		return err
	}
	// Apply with pid -1 creates the directories without moving a process in.
	if err := cm.Apply(-1); err != nil {
		return fmt.Errorf("pod cgroup %s: create: %w", uid, err)
	}
	cg, err := cm.GetCgroups()
	if err != nil {
		return fmt.Errorf("pod cgroup %s: %w", uid, err)
	}
	if err := cm.Set(cg.Resources); err != nil {
		return fmt.Errorf("pod cgroup %s: set limits %+v: %w", uid, r, err)
	}
	return nil
}

// Remove deletes the pod's cgroup everywhere. The containers' cgroups below it must be
// gone (runc delete removes them); a missing cgroup is not an error.
func (m Manager) Remove(uid string) error {
	cm, err := m.library(uid, nil)
	if err != nil {
		return err
	}
	if err := cm.Destroy(); err != nil {
		return fmt.Errorf("pod cgroup %s: remove: %w", uid, err)
	}
	return nil
}
