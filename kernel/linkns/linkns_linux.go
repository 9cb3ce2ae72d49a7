package linkns

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Host is a network namespace acting as the node.
type Host struct{ nsPath string }

// NewHost returns the Host for the namespace bind-mounted at nsPath, or the caller's
// own namespace when nsPath is empty.
func NewHost(nsPath string) Host { return Host{nsPath: nsPath} }

// Path is the Host's namespace path, empty for the caller's.
func (h Host) Path() string { return h.nsPath }

// handle opens a netlink handle inside the Host's namespace; the caller closes it.
func (h Host) handle() (*netlink.Handle, error) {
	if h.nsPath == "" {
		return netlink.NewHandle()
	}
	return handleAt(h.nsPath)
}

func handleAt(path string) (*netlink.Handle, error) {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer ns.Close()
	hd, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", path, err)
	}
	return hd, nil
}

// inHost runs fn on a locked OS thread inside the Host's namespace. The thread is not
// unlocked, so the runtime ends it with the goroutine instead of reusing a thread in a
// foreign namespace.
func (h Host) inHost(fn func() error) error {
	if h.nsPath == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.GetFromPath(h.nsPath)
		if err != nil {
			errc <- fmt.Errorf("open network namespace %s: %w", h.nsPath, err)
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("enter network namespace %s: %w", h.nsPath, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// WriteSysctl sets a sysctl (net.ipv4.ip_forward) in the Host's namespace, unless it
// already has the value.
func (h Host) WriteSysctl(name, value string) error {
	return h.inHost(func() error {
		p := sysctlPath(name)
		if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) == value {
			return nil
		}
		if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
			return fmt.Errorf("sysctl %s=%s: %w", name, value, err)
		}
		return nil
	})
}

// SysctlExists reports whether the Host's namespace has the sysctl (those of bridge
// netfilter exist only with br_netfilter).
func (h Host) SysctlExists(name string) (bool, error) {
	var ok bool
	err := h.inHost(func() error {
		_, err := os.Stat(sysctlPath(name))
		switch {
		case err == nil:
			ok = true
		case errors.Is(err, os.ErrNotExist):
		default:
			return err
		}
		return nil
	})
	return ok, err
}

// LinkExists reports whether the Host has a link of that name.
func (h Host) LinkExists(name string) (bool, error) {
	hd, err := h.handle()
	if err != nil {
		return false, err
	}
	defer hd.Close()
	_, err = hd.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return false, nil
	}
	return err == nil, err
}

// DeleteLink removes the Host's link of that name; a missing link is not an error.
// Deleting one end of a veth pair deletes both.
func (h Host) DeleteLink(name string) error {
	hd, err := h.handle()
	if err != nil {
		return err
	}
	defer hd.Close()
	return deleteLink(hd, name)
}

func deleteLink(hd *netlink.Handle, name string) error {
	l, err := hd.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	if err := hd.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func family(a netip.Addr) int {
	if a.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

// EnsureBridge makes the bridge name exist, up, carrying exactly the addresses given
// (each the gateway with its pod CIDR's length, 10.244.1.1/24). A link of that name
// that is not a bridge is an error, never replaced: it is not ours.
func (h Host) EnsureBridge(name string, addrs []netip.Prefix) error {
	hd, err := h.handle()
	if err != nil {
		return err
	}
	defer hd.Close()
	l, err := hd.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		// A fixed MAC: a bridge otherwise takes its lowest port's, and every pod's
		// neighbour entry for the gateway would go stale as pods come and go.
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: localMAC()}}
		if err := hd.LinkAdd(br); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create bridge %s: %w", name, err)
		}
		if l, err = hd.LinkByName(name); err != nil {
			return fmt.Errorf("bridge %s: %w", name, err)
		}
	case err != nil:
		return fmt.Errorf("bridge %s: %w", name, err)
	case l.Type() != "bridge":
		return fmt.Errorf("link %s exists and is a %s, not a bridge; refusing to touch it", name, l.Type())
	}
	if err := ensureAddrs(hd, l, addrs); err != nil {
		return fmt.Errorf("bridge %s: %w", name, err)
	}
	if err := hd.LinkSetUp(l); err != nil {
		return fmt.Errorf("bridge %s up: %w", name, err)
	}
	return nil
}

// localMAC is a random locally administered unicast address.
func localMAC() net.HardwareAddr {
	mac := make(net.HardwareAddr, 6)
	_, _ = rand.Read(mac)
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}

// ensureAddrs makes l's global addresses exactly want (link-local ones are left).
func ensureAddrs(hd *netlink.Handle, l netlink.Link, want []netip.Prefix) error {
	have, err := hd.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	wanted := map[netip.Prefix]bool{}
	for _, p := range want {
		wanted[p] = true
	}
	for _, a := range have {
		ip, _ := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		p := netip.PrefixFrom(ip.Unmap(), ones)
		if ip.IsLinkLocalUnicast() || wanted[p] {
			delete(wanted, p)
			continue
		}
		if err := hd.AddrDel(l, &a); err != nil {
			return fmt.Errorf("remove address %s: %w", p, err)
		}
	}
	for _, p := range want {
		if !wanted[p] {
			continue
		}
		// No duplicate address detection: the address is ours by allocation, and a
		// tentative IPv6 address could not be used for the first second.
		a := &netlink.Addr{IPNet: ipNet(p), Flags: unix.IFA_F_NODAD}
		if err := hd.AddrReplace(l, a); err != nil {
			return fmt.Errorf("add address %s: %w", p, err)
		}
	}
	return nil
}

// IsNetNS reports whether path is a mounted network namespace.
func IsNetNS(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("statfs %s: %w", path, err)
	}
	return st.Type == unix.NSFS_MAGIC, nil
}

// CreateNetNS makes path a new network namespace with only a loopback link (down), as
// `ip netns add` does; an existing namespace at path is kept.
func CreateNetNS(path string) error {
	if ok, err := IsNetNS(path); err != nil || ok {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("netns directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o444)
	if err != nil {
		return fmt.Errorf("netns file %s: %w", path, err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread is in the new namespace and ends with this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare network namespace: %w", err)
			return
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind-mount network namespace on %s: %w", path, err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// DeleteNetNS unmounts and removes the namespace file at path; the namespace itself
// goes when nothing else holds it. A missing path is not an error.
func DeleteNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove network namespace file %s: %w", path, err)
	}
	return nil
}
