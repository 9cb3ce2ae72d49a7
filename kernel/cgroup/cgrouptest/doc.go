// Package cgrouptest gives kernel tests (of any package) a uniquely named cgroup with
// memory, pids and CPU limits, on hybrid hosts (v1 memory, pids and cpu hierarchies that
// carry the limits, plus a v2 child in the unified tree for per-cgroup PSI) and on
// unified hosts (one v2 cgroup with memory.max, pids.max and cpu.max). Start runs a
// process inside it from its first instruction, and t.Cleanup kills every process in
// it and removes every directory it made, even when the test fails.
//
// It owns the cgroup directories named plinth-test-<pid>-<n> it creates under each
// hierarchy's root and the processes inside them. On unified hosts it enables the
// memory, pids and cpu controllers in the root's cgroup.subtree_control and leaves them
// enabled, since other tests may be using them.
package cgrouptest
