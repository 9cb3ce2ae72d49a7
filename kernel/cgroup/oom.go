package cgroup

// OOMKills returns how many processes the memory controller's OOM killer has killed in
// the cgroup at cgroupPath: oom_kill in memory.events on v2, in memory.oom_control on
// v1 (kernel 4.13 and later). A container runtime reads it after the container exits to
// tell an OOM kill from any other SIGKILL.
func (h Host) OOMKills(cgroupPath string) (uint64, error) {
	dir, err := h.Dir("memory", cgroupPath)
	if err != nil {
		return 0, err
	}
	if h.memoryIsV2(dir) {
		return readStatKey(dir, "memory.events", "oom_kill")
	}
	return readStatKey(dir, "memory.oom_control", "oom_kill")
}
