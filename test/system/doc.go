// Package system is the system-test layer: Plinth's built .deb packages installed into
// a Debian bookworm root booted with systemd-nspawn, checked through systemd the way an
// operator meets them (unit states, READY, the watchdog, upgrades, purge).
//
// The harness (Root, Boot, Machine) is here; the tests are in files built only with the
// `system` build tag (make test-system), because they need the packages make packages
// writes and a minute or two of wall time.
//
// Root debootstraps the machine image once into /var/cache/plinth (keyed by its package
// list) and never changes it: each Boot stacks an overlay on it. A booted Machine gets a
// unique name, a private network namespace (loopback only), and unique cgroups in every
// hierarchy of the host, which its cgroup namespace is rooted at; the test's cleanup
// powers it off, kills what is left, and removes the overlay and the cgroups, so nothing
// stays on the host even when a test fails.
//
// The machine runs the pods with Debian's runc 1.1.5, which plinth-node's dependency
// installs, unless ClusterOptions.HostRunc copies in the host's pinned build (1.5.2) as
// /usr/local/bin/runc; TestPackages uses the first, the shutdown test the second.
package system
