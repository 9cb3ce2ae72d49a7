package podnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/plinth/plinth/internal/atomicfile"
)

// ErrNoAddress means a pod CIDR has no free address left.
var ErrNoAddress = errors.New("no free pod address")

// Reservation is what the allocator holds for one pod.
type Reservation struct {
	// NetNS is the name of the pod's network namespace file.
	NetNS string `json:"netns"`
	// IPs are the pod's addresses, one per pod CIDR, in the pod CIDRs' order.
	IPs []netip.Addr `json:"ips"`
}

// ipamState is the allocator's file (version 1).
type ipamState struct {
	Version int `json:"version"`
	// Pods by UID.
	Pods map[string]Reservation `json:"pods"`
	// Last is, per pod CIDR, the address handed out last: the next search starts after
	// it, so a released address is reused as late as possible.
	Last map[string]netip.Addr `json:"last,omitempty"`
}

const ipamStateVersion = 1

// Allocator hands out pod addresses from the node's pod CIDRs: for each, everything
// but the network address, the gateway (the first address after it) and, for IPv4, the
// broadcast address. Each change is on disk (atomicfile) before the call returns, so
// an address in use survives a crash or restart of plinthd. It is safe for concurrent
// use.
type Allocator struct {
	path   string // "" keeps the state in memory (the fake)
	ranges []netip.Prefix

	mu    sync.Mutex
	state ipamState
	used  map[netip.Addr]string // address -> pod UID
}

// CheckPodCIDR reports why p cannot be a node's pod CIDR: not a CIDR, host bits set, or
// too small to hold a gateway and one pod.
func CheckPodCIDR(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return fmt.Errorf("pod CIDR %q is not a CIDR", p)
	case p != p.Masked():
		return fmt.Errorf("pod CIDR %s has host bits set", p)
	case p.Addr().Is4In6():
		return fmt.Errorf("pod CIDR %s is an IPv4-mapped IPv6 CIDR", p)
	case p.Addr().BitLen()-p.Bits() < 2:
		return fmt.Errorf("pod CIDR %s is too small: want at least 2 host bits (a gateway and a pod)", p)
	}
	return nil
}

// Gateway is the bridge's address in pod CIDR p: the first address after the network
// address.
func Gateway(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

// OpenAllocator loads the state at path (a missing file is an empty state) for the
// given pod CIDRs, at most one per family. Reservations made from other CIDRs (the
// Node's were different) stay until their pods are torn down, but their addresses are
// not handed out again.
func OpenAllocator(path string, ranges []netip.Prefix) (*Allocator, error) {
	if len(ranges) == 0 || len(ranges) > 2 || (len(ranges) == 2 && ranges[0].Addr().Is4() == ranges[1].Addr().Is4()) {
		return nil, fmt.Errorf("pod CIDRs %v: want one, or one IPv4 and one IPv6", ranges)
	}
	for _, p := range ranges {
		if err := CheckPodCIDR(p); err != nil {
			return nil, err
		}
	}
	a := &Allocator{path: path, ranges: slices.Clone(ranges), used: map[netip.Addr]string{},
		state: ipamState{Version: ipamStateVersion, Pods: map[string]Reservation{}, Last: map[string]netip.Addr{}}}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("pod address state: %w", err)
		default:
			st, err := parseIPAMState(data)
			if err != nil {
				return nil, fmt.Errorf("pod address state %s: %w", path, err)
			}
			a.state = st
		}
	}
	for uid, r := range a.state.Pods {
		for _, ip := range r.IPs {
			a.used[ip] = uid
		}
	}
	return a, nil
}

// parseIPAMState reads a state file strictly: unknown fields, another version, or a
// pod without addresses are errors.
func parseIPAMState(data []byte) (ipamState, error) {
	var st ipamState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return ipamState{}, err
	}
	if dec.More() {
		return ipamState{}, errors.New("trailing data after the state object")
	}
	if st.Version != ipamStateVersion {
		return ipamState{}, fmt.Errorf("field \"version\": %d, want %d", st.Version, ipamStateVersion)
	}
	if st.Pods == nil {
		st.Pods = map[string]Reservation{}
	}
	if st.Last == nil {
		st.Last = map[string]netip.Addr{}
	}
	seen := map[netip.Addr]string{}
	for uid, r := range st.Pods {
		if err := checkPodUID(uid); err != nil {
			return ipamState{}, fmt.Errorf("field \"pods\": %w", err)
		}
		if len(r.IPs) == 0 {
			return ipamState{}, fmt.Errorf("field \"pods.%s.ips\": empty", uid)
		}
		for _, ip := range r.IPs {
			if !ip.IsValid() {
				return ipamState{}, fmt.Errorf("field \"pods.%s.ips\": an invalid address", uid)
			}
			if other, dup := seen[ip]; dup {
				return ipamState{}, fmt.Errorf("field \"pods.%s.ips\": %s is also pod %s's", uid, ip, other)
			}
			seen[ip] = uid
		}
	}
	return st, nil
}

// Lookup returns the pod's reservation.
func (a *Allocator) Lookup(podUID string) (Reservation, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.state.Pods[podUID]
	return Reservation{NetNS: r.NetNS, IPs: slices.Clone(r.IPs)}, ok
}

// Pods lists the pod UIDs holding addresses, sorted.
func (a *Allocator) Pods() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.state.Pods))
	for uid := range a.state.Pods {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}

// Allocate returns the pod's reservation, making it when the pod has none (or one from
// other pod CIDRs). Calling it again for the same pod returns the same addresses.
func (a *Allocator) Allocate(podUID, netnsName string) (Reservation, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.state.Pods[podUID]; ok && a.fits(r.IPs) {
		if r.NetNS == netnsName {
			return Reservation{NetNS: r.NetNS, IPs: slices.Clone(r.IPs)}, nil
		}
		r.NetNS = netnsName
		return a.commit(podUID, r)
	}
	for _, ip := range a.state.Pods[podUID].IPs {
		delete(a.used, ip)
	}
	r := Reservation{NetNS: netnsName}
	last := map[string]netip.Addr{}
	for _, p := range a.ranges {
		ip, err := a.next(p)
		if err != nil {
			for _, taken := range r.IPs {
				delete(a.used, taken)
			}
			return Reservation{}, err
		}
		a.used[ip] = podUID
		r.IPs = append(r.IPs, ip)
		last[p.String()] = ip
	}
	for k, v := range last {
		a.state.Last[k] = v
	}
	return a.commit(podUID, r)
}

// fits reports whether ips are one address in each current pod CIDR, in order.
func (a *Allocator) fits(ips []netip.Addr) bool {
	if len(ips) != len(a.ranges) {
		return false
	}
	for i, p := range a.ranges {
		if !usable(p, ips[i]) {
			return false
		}
	}
	return true
}

// usable reports whether ip may be a pod's address in p.
func usable(p netip.Prefix, ip netip.Addr) bool {
	if !p.Contains(ip) || ip == p.Addr() || ip == Gateway(p) {
		return false
	}
	return !(ip.Is4() && ip == lastAddr(p))
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// usableCount is how many pod addresses p has, capped at MaxUint64.
func usableCount(p netip.Prefix) uint64 {
	hostBits := p.Addr().BitLen() - p.Bits()
	reserved := uint64(2) // network and gateway
	if p.Addr().Is4() {
		reserved = 3 // and broadcast
	}
	if hostBits >= 64 {
		return math.MaxUint64
	}
	return (uint64(1) << hostBits) - reserved
}

// next finds a free address in p, starting after the last one handed out and
// wrapping around.
func (a *Allocator) next(p netip.Prefix) (netip.Addr, error) {
	ip, ok := a.state.Last[p.String()]
	if !ok || !p.Contains(ip) {
		ip = Gateway(p)
	}
	total := usableCount(p)
	for checked := uint64(0); checked < total; {
		ip = ip.Next()
		if !ip.IsValid() || !p.Contains(ip) {
			ip = p.Addr()
			continue
		}
		if !usable(p, ip) {
			continue
		}
		checked++
		if _, taken := a.used[ip]; !taken {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("pod CIDR %s: all %d addresses are in use: %w", p, total, ErrNoAddress)
}

// Release frees the pod's addresses; a pod without any is not an error.
func (a *Allocator) Release(podUID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.state.Pods[podUID]
	if !ok {
		return nil
	}
	delete(a.state.Pods, podUID)
	if err := a.save(); err != nil {
		a.state.Pods[podUID] = r
		return err
	}
	for _, ip := range r.IPs {
		delete(a.used, ip)
	}
	return nil
}

// commit records r for the pod and writes the state; on a failed write the
// reservation is not made.
func (a *Allocator) commit(podUID string, r Reservation) (Reservation, error) {
	prev, had := a.state.Pods[podUID]
	a.state.Pods[podUID] = r
	if err := a.save(); err != nil {
		for _, ip := range r.IPs {
			delete(a.used, ip)
		}
		delete(a.state.Pods, podUID)
		if had {
			a.state.Pods[podUID] = prev
			for _, ip := range prev.IPs {
				a.used[ip] = podUID
			}
		}
		return Reservation{}, err
	}
	return Reservation{NetNS: r.NetNS, IPs: slices.Clone(r.IPs)}, nil
}

func (a *Allocator) save() error {
	if a.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(a.state, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(a.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("pod address state: %w", err)
	}
	return nil
}
