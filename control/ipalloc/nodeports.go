package ipalloc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// NodePortPrefix is where node port claims live in storage.
const NodePortPrefix = "/portallocations/nodeports/"

// PortRange is an inclusive range of ports, as --service-node-port-range gives it.
type PortRange struct {
	Base int // first port
	Size int // number of ports
}

// Last is the highest port in the range.
func (r PortRange) Last() int { return r.Base + r.Size - 1 }

// Contains reports whether port is in the range.
func (r PortRange) Contains(port int) bool { return port >= r.Base && port <= r.Last() }

func (r PortRange) String() string {
	if r.Size == 0 {
		return ""
	}
	return fmt.Sprintf("%d-%d", r.Base, r.Last())
}

// Set parses a flag value; PortRange is a flag.Value.
func (r *PortRange) Set(s string) error {
	p, err := ParsePortRange(s)
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// ParsePortRange reads "30000-32767", "30000+2767" (base plus offset) or a single port.
func ParsePortRange(s string) (PortRange, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) (PortRange, error) {
		return PortRange{}, fmt.Errorf("port range %q: %s; want FIRST-LAST such as 30000-32767, or FIRST+OFFSET", s, why)
	}
	if s == "" {
		return bad("empty")
	}
	port := func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 1 && n <= 65535 && v == strconv.Itoa(n)
	}
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		lo, ok := port(s[:i])
		if !ok {
			return bad(fmt.Sprintf("%q is not a port number 1-65535", s[:i]))
		}
		rest := s[i+1:]
		var hi int
		if s[i] == '-' {
			if hi, ok = port(rest); !ok {
				return bad(fmt.Sprintf("%q is not a port number 1-65535", rest))
			}
		} else {
			n, err := strconv.Atoi(rest)
			if err != nil || n < 0 || rest != strconv.Itoa(n) || lo+n > 65535 {
				return bad(fmt.Sprintf("offset %q does not keep the range within 1-65535", rest))
			}
			hi = lo + n
		}
		if hi < lo {
			return bad("the last port is below the first")
		}
		return PortRange{Base: lo, Size: hi - lo + 1}, nil
	}
	p, ok := port(s)
	if !ok {
		return bad("not a port number 1-65535")
	}
	return PortRange{Base: p, Size: 1}, nil
}

// NodePorts allocates node ports from a range.
type NodePorts struct {
	r      PortRange
	claims *claims
}

// NewNodePorts returns the allocator for r, for example 30000-32767. The static band
// is Kubernetes' min(max(16, size/32), 128) ports at the bottom of the range.
func NewNodePorts(store Store, r PortRange, o Options) (*NodePorts, error) {
	if r.Size <= 0 || r.Base < 1 || r.Last() > 65535 {
		return nil, fmt.Errorf("node port range %q is not within 1-65535", r)
	}
	size := uint64(r.Size)
	a := &NodePorts{r: r}
	a.claims = newClaims(store, NodePortPrefix, bands{size: size, lower: lowerBandSize(size, 16, 32, 128)}, o,
		func(off uint64) string { return strconv.Itoa(r.Base + int(off)) },
		func(name string) (uint64, bool) {
			p, err := strconv.Atoi(name)
			if err != nil || !r.Contains(p) {
				return 0, false
			}
			return uint64(p - r.Base), true
		})
	return a, nil
}

// Range is the port range the allocator serves.
func (a *NodePorts) Range() PortRange { return a.r }

// LowerBand is the number of ports reserved for static allocation.
func (a *NodePorts) LowerBand() int { return int(a.claims.bands.lower) }

// Allocate claims a free port for owner, from the upper band if any is free there.
// inUse are ports the owner's object already uses, which must not be handed back.
func (a *NodePorts) Allocate(ctx context.Context, owner Owner, inUse []int) (int, error) {
	skip := map[uint64]bool{}
	for _, p := range inUse {
		if a.r.Contains(p) {
			skip[uint64(p-a.r.Base)] = true
		}
	}
	off, err := a.claims.allocate(ctx, owner, skip)
	if err != nil {
		return 0, err
	}
	return a.r.Base + int(off), nil
}

// Claim takes a specific port for owner. It fails with ErrNotInRange or ErrAllocated.
func (a *NodePorts) Claim(ctx context.Context, port int, owner Owner) error {
	if !a.r.Contains(port) {
		return ErrNotInRange
	}
	return a.claims.claim(ctx, uint64(port-a.r.Base), owner)
}

// Release frees port if owner holds it.
func (a *NodePorts) Release(ctx context.Context, port int, owner Owner) error {
	if !a.r.Contains(port) {
		return nil
	}
	return a.claims.release(ctx, uint64(port-a.r.Base), owner)
}

// Held lists the claimed ports and their owners.
func (a *NodePorts) Held(ctx context.Context) (map[int]Owner, error) {
	m, err := a.claims.held(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int]Owner, len(m))
	for off, o := range m {
		out[a.r.Base+int(off)] = o
	}
	return out, nil
}
