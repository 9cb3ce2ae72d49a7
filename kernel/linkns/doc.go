// Package linkns makes the kernel objects of a node's pod network: named network
// namespaces (a namespace kept alive by a bind mount on a file, as `ip netns add` does
// under /var/run/netns), a bridge with gateway addresses, veth pairs whose host end is
// a bridge port in hairpin mode and whose other end is eth0 inside a pod's namespace with its
// addresses and routes, and per-namespace sysctls.
//
// Every call works in the network namespace named by the Host it is made on (the node;
// the caller's own when the Host's path is empty), never in whatever namespace the
// calling thread happens to be in: netlink sockets are opened inside the target
// namespace, and the few things only a thread can do (unshare, sysctl writes) run on a
// locked OS thread that is thrown away afterwards, so no goroutine ever runs in a
// namespace it did not ask for.
//
// Every Ensure call is idempotent: it looks at what exists, keeps what is right and
// replaces what is not. It owns nothing but what callers name: links by name, netns
// files by path; it touches /proc/sys of the Host's namespace and mounts on the netns
// files it creates. Linux only; elsewhere every call fails.
package linkns
