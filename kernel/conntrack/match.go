package conntrack

import (
	"fmt"
	"net/netip"
)

// Match selects UDP flows. Exactly one of Dst and DstPort is set.
type Match struct {
	// Dst selects flows whose original destination is this address and port (a
	// Service's cluster, external or load-balancer address).
	Dst netip.AddrPort
	// DstPort selects flows whose original destination port is this, on any address
	// (a node port).
	DstPort uint16
	// DNATTo, when valid, narrows the match to flows DNATed to this address and port:
	// the reply direction's source.
	DNATTo netip.AddrPort
}

func (m Match) String() string {
	dst := m.Dst.String()
	if !m.Dst.IsValid() {
		dst = fmt.Sprintf("*:%d", m.DstPort)
	}
	if m.DNATTo.IsValid() {
		return fmt.Sprintf("udp to %s via %s", dst, m.DNATTo)
	}
	return "udp to " + dst
}

func (m Match) validate() error {
	if m.Dst.IsValid() == (m.DstPort != 0) {
		return fmt.Errorf("conntrack match %s: set exactly one of Dst and DstPort", m)
	}
	return nil
}

// Flow is the part of a conntrack flow a Match looks at.
type Flow struct {
	Protocol uint8
	// OrigDst is the original direction's destination (what the client sent to).
	OrigDst netip.AddrPort
	// ReplySrc is the reply direction's source: the endpoint after DNAT, or OrigDst
	// when the flow was not translated.
	ReplySrc netip.AddrPort
}

const protoUDP = 17

// matchSet answers "does any match select this flow" with map lookups, so one table
// dump is checked against thousands of matches cheaply.
type matchSet struct {
	byDst  map[netip.AddrPort][]Match
	byPort map[uint16][]Match
	// v4 and v6 say which families' tables need dumping.
	v4, v6 bool
}

func newMatchSet(matches []Match) (*matchSet, error) {
	s := &matchSet{byDst: map[netip.AddrPort][]Match{}, byPort: map[uint16][]Match{}}
	for _, m := range matches {
		if err := m.validate(); err != nil {
			return nil, err
		}
		m.Dst = unmap(m.Dst)
		m.DNATTo = unmap(m.DNATTo)
		switch {
		case m.Dst.IsValid():
			s.byDst[m.Dst] = append(s.byDst[m.Dst], m)
			s.noteFamily(m.Dst.Addr())
		default:
			s.byPort[m.DstPort] = append(s.byPort[m.DstPort], m)
			if m.DNATTo.IsValid() {
				s.noteFamily(m.DNATTo.Addr())
			} else {
				s.v4, s.v6 = true, true
			}
		}
	}
	return s, nil
}

func (s *matchSet) noteFamily(a netip.Addr) {
	if a.Is4() {
		s.v4 = true
	} else {
		s.v6 = true
	}
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	if !ap.IsValid() {
		return ap
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// selects reports whether any match selects f.
func (s *matchSet) selects(f Flow) bool {
	if f.Protocol != protoUDP {
		return false
	}
	f.OrigDst, f.ReplySrc = unmap(f.OrigDst), unmap(f.ReplySrc)
	for _, m := range s.byDst[f.OrigDst] {
		if !m.DNATTo.IsValid() || m.DNATTo == f.ReplySrc {
			return true
		}
	}
	for _, m := range s.byPort[f.OrigDst.Port()] {
		if !m.DNATTo.IsValid() || m.DNATTo == f.ReplySrc {
			return true
		}
	}
	return false
}
