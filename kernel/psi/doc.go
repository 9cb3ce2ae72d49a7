// Package psi reads Linux pressure stall information (PSI) for the whole node
// (/proc/pressure/{cpu,memory,io}) and for cgroup v2 groups (<cgroup>/{cpu,memory,io}.pressure),
// and arms PSI triggers that wake a waiter when stall time crosses a threshold within a
// window, so the daemon reacts within the window instead of polling.
//
// It owns nothing but the file descriptors of the triggers it arms; callers Close what
// they open. It touches /proc/pressure and cgroup v2 *.pressure files only. Parse takes
// an io.Reader so it is tested against fixtures in testdata; triggers are Linux-only
// (trigger_linux.go) and come with a FakeTrigger for consumers' unit tests.
package psi
