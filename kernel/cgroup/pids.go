package cgroup

import "fmt"

// PIDs is a cgroup's task count and task limit.
type PIDs struct {
	// Current counts the tasks (threads included) in the cgroup and its descendants.
	Current uint64
	// Max is Unlimited when the cgroup has no limit of its own.
	Max uint64
}

// PIDs reads pids.current and pids.max of the cgroup at cgroupPath. The root cgroup has
// neither file on v1; count the node's tasks from /proc instead.
func (h Host) PIDs(cgroupPath string) (PIDs, error) {
	if cgroupPath == "/" {
		return PIDs{}, fmt.Errorf("cgroup pids: the root cgroup has no pids.current or pids.max; count tasks from /proc")
	}
	dir, err := h.Dir("pids", cgroupPath)
	if err != nil {
		return PIDs{}, err
	}
	var p PIDs
	if p.Current, err = readUint(dir, "pids.current"); err != nil {
		return PIDs{}, err
	}
	if p.Max, err = readLimit(dir, "pids.max"); err != nil {
		return PIDs{}, err
	}
	return p, nil
}
