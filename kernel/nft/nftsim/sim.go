// Package nftsim evaluates packets over kernel/nft tables (the package's own
// expression types, not nft text): the base chains of each hook in priority order,
// jumps, gotos and returns, set and map lookups, numgen, dynamic sets with timeouts,
// DNAT, masquerade marks, reject and drop. It models the first packet of a connection
// (conntrack state new) on one node, enough to decide which endpoint a packet reaches
// or why it does not.
//
// It owns nothing and touches nothing outside its own memory.
package nftsim

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/plinth/plinth/kernel/nft"
)

// Origin is where a packet enters the node.
type Origin int

const (
	// FromNetwork arrives on an interface (another host, or a pod through its veth).
	FromNetwork Origin = iota
	// FromLocal is sent by a process on the node (host network).
	FromLocal
)

// Packet is the first packet of a connection.
type Packet struct {
	Src, Dst netip.Addr
	Proto    uint8
	DPort    uint16
	Mark     uint32
}

// Outcome is what happened to a packet.
type Outcome int

const (
	Accepted Outcome = iota // delivered (locally or forwarded), maybe rewritten
	Dropped
	Rejected
)

func (o Outcome) String() string {
	return [...]string{"accepted", "dropped", "rejected"}[o]
}

// Result is the packet's fate.
type Result struct {
	Outcome Outcome
	// TCPReset is set for a reject with a TCP reset (otherwise ICMP unreachable).
	TCPReset bool
	// Dst and DPort after DNAT (unchanged when no DNAT happened).
	Dst   netip.Addr
	DPort uint16
	DNAT  bool
	// Masquerade is set when nat-postrouting source-NATed the packet.
	Masquerade bool
	// Trace lists the chains entered, for failure messages.
	Trace []string
}

func (r Result) String() string {
	s := r.Outcome.String()
	if r.Outcome == Rejected && r.TCPReset {
		s += " (tcp reset)"
	}
	if r.DNAT {
		s += fmt.Sprintf(" dnat %s", netip.AddrPortFrom(r.Dst, r.DPort))
	}
	if r.Masquerade {
		s += " masquerade"
	}
	return s
}

// Sim evaluates packets over the tables of one family.
type Sim struct {
	tables []*nft.Table
	family nft.Family
	// Local lists the node's own addresses (fib ... type local, and whether a packet
	// is delivered locally or forwarded).
	Local []netip.Addr
	// Pick chooses numgen's result in [0, n); nil picks 0. call counts the numgen
	// evaluations of the current packet from 0, so a test can steer a cascade of
	// "numgen random mod (N-i) 0" rules to its k-th rule (0 at call k, 1 before).
	Pick func(call, n int) int
	// Now is the time for dynamic set timeouts.
	Now     func() time.Time
	dynamic map[string]map[netip.Addr]time.Time // set -> key -> expiry
}

// New returns a simulator over the model's tables of one family.
func New(m *nft.Model, f nft.Family) *Sim {
	s := &Sim{family: f, dynamic: map[string]map[netip.Addr]time.Time{}, Now: time.Now}
	for ref, t := range m.Tables {
		if ref.Family == f {
			s.tables = append(s.tables, t)
		}
	}
	sort.Slice(s.tables, func(i, j int) bool { return s.tables[i].Ref.Name < s.tables[j].Ref.Name })
	return s
}

type hooked struct {
	t *nft.Table
	c *nft.Chain
}

func (s *Sim) baseChains(h nft.Hook) []hooked {
	var out []hooked
	for _, t := range s.tables {
		for _, c := range t.Chains {
			if c.Base != nil && c.Base.Hook == h {
				out = append(out, hooked{t, c})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].c.Base.Priority < out[j].c.Base.Priority })
	return out
}

func (s *Sim) isLocal(a netip.Addr) bool {
	for _, l := range s.Local {
		if l == a {
			return true
		}
	}
	return false
}

// Send evaluates one packet through the hooks its origin passes.
func (s *Sim) Send(p Packet, origin Origin) Result {
	st := &state{p: p, res: Result{Dst: p.Dst, DPort: p.DPort}}
	first := []nft.Hook{nft.HookPrerouting}
	if origin == FromLocal {
		first = []nft.Hook{nft.HookOutput}
	}
	for _, h := range first {
		if s.runHook(st, h) {
			return st.res
		}
	}
	if origin == FromNetwork {
		next := nft.HookForward
		if s.isLocal(st.p.Dst) {
			next = nft.HookInput
		}
		if s.runHook(st, next) {
			return st.res
		}
	}
	s.runHook(st, nft.HookPostrouting)
	return st.res
}

type state struct {
	p      Packet
	res    Result
	numgen int
}

// runHook runs the hook's base chains in priority order; true when the packet's fate
// is sealed (dropped or rejected).
func (s *Sim) runHook(st *state, h nft.Hook) bool {
	for _, hc := range s.baseChains(h) {
		v := s.runChain(st, hc.t, hc.c, 0)
		switch v {
		case verdictDrop:
			st.res.Outcome = Dropped
			return true
		case verdictReject:
			st.res.Outcome = Rejected
			return true
		}
	}
	return false
}

type verdict int

const (
	verdictContinue verdict = iota // fell off the end or returned
	verdictAccept
	verdictDrop
	verdictReject
)

func (s *Sim) runChain(st *state, t *nft.Table, c *nft.Chain, depth int) verdict {
	if depth > 32 {
		panic("nftsim: jump depth over 32 (a loop?)")
	}
	st.res.Trace = append(st.res.Trace, c.Name)
	for _, r := range c.Rules {
		v, next, matched := s.runRule(st, t, r)
		if !matched {
			continue
		}
		if next != nil {
			sub := s.runChain(st, t, next.chain, depth+1)
			if next.isGoto {
				return sub
			}
			if sub == verdictContinue {
				continue
			}
			return sub
		}
		if v != verdictContinue {
			return v
		}
	}
	return verdictContinue
}

type branch struct {
	chain  *nft.Chain
	isGoto bool
}

// runRule evaluates one rule. matched is false when a match failed (next rule); a
// jump or goto comes back as next; otherwise v is the rule's verdict (continue when it
// only had statements).
func (s *Sim) runRule(st *state, t *nft.Table, r nft.Rule) (v verdict, next *branch, matched bool) {
	for _, e := range r {
		switch e := e.(type) {
		case nft.Cmp:
			if s.value(st, e.Field) != e.Value == !e.Neq {
				return 0, nil, false
			}
		case nft.PrefixCmp:
			a := s.value(st, e.Field).Addr
			if e.Prefix.Contains(a) == e.Neq {
				return 0, nil, false
			}
		case nft.CtStateNew:
			// Every simulated packet opens a connection.
		case nft.MarkBitClear:
			if st.p.Mark&e.Bits != 0 {
				return 0, nil, false
			}
		case nft.Lookup:
			if s.inSet(t, e.Set, s.key(st, e.Fields)) == e.Neq {
				return 0, nil, false
			}
		case nft.VMap:
			set := t.Sets[e.Map]
			el, ok := s.find(set, s.key(st, e.Fields))
			if !ok || el.Verdict == nil {
				return 0, nil, false
			}
			return s.applyVerdict(t, *el.Verdict)
		case nft.NumgenVMap:
			return s.applyVerdict(t, e.Targets[s.pick(st, len(e.Targets))])
		case nft.NumgenCmp:
			if uint32(s.pick(st, int(e.Mod))) != e.Value {
				return 0, nil, false
			}
		case nft.NumgenDNAT:
			key := e.Offset + uint32(s.pick(st, int(e.Mod)))
			el, ok := s.find(t.Sets[e.Map], []nft.Value{nft.NumValue(key)})
			if !ok || len(el.Data) != 2 {
				// The kernel drops a packet whose NAT map lookup finds nothing.
				return verdictDrop, nil, true
			}
			port := uint16(el.Data[1].Num)
			st.p.Dst, st.p.DPort = el.Data[0].Addr, port
			st.res.Dst, st.res.DPort, st.res.DNAT = el.Data[0].Addr, port, true
			return verdictAccept, nil, true
		case nft.MarkOr:
			st.p.Mark |= e.Bits
		case nft.MarkXor:
			st.p.Mark ^= e.Bits
		case nft.UpdateSet:
			set := t.Sets[e.Set]
			exp := s.Now().Add(set.Timeout)
			if set.Timeout == 0 {
				exp = time.Unix(1<<40, 0)
			}
			if s.dynamic[e.Set] == nil {
				s.dynamic[e.Set] = map[netip.Addr]time.Time{}
			}
			s.dynamic[e.Set][s.value(st, e.Field).Addr] = exp
		case nft.DNAT:
			st.p.Dst, st.p.DPort = e.Addr, e.Port
			st.res.Dst, st.res.DPort, st.res.DNAT = e.Addr, e.Port, true
			return verdictAccept, nil, true
		case nft.Masquerade:
			st.res.Masquerade = true
			return verdictAccept, nil, true
		case nft.Reject:
			st.res.TCPReset = e.TCPReset
			return verdictReject, nil, true
		case nft.Verdict:
			return s.applyVerdict(t, e)
		default:
			panic(fmt.Sprintf("nftsim: expression %T not modelled", e))
		}
	}
	return verdictContinue, nil, true
}

func (s *Sim) pick(st *state, n int) int {
	call := st.numgen
	st.numgen++
	if s.Pick == nil {
		return 0
	}
	v := s.Pick(call, n)
	if v < 0 || v >= n {
		panic(fmt.Sprintf("nftsim: Pick returned %d outside [0, %d)", v, n))
	}
	return v
}

func (s *Sim) applyVerdict(t *nft.Table, v nft.Verdict) (verdict, *branch, bool) {
	switch v.Kind {
	case nft.VerdictAccept:
		return verdictAccept, nil, true
	case nft.VerdictDrop:
		return verdictDrop, nil, true
	case nft.VerdictReturn:
		return verdictContinue, &branch{chain: &nft.Chain{ChainSpec: nft.ChainSpec{Name: "(return)"}}, isGoto: true}, true
	case nft.VerdictJump, nft.VerdictGoto:
		c, ok := t.Chains[v.Chain]
		if !ok {
			panic("nftsim: verdict to missing chain " + v.Chain)
		}
		return 0, &branch{chain: c, isGoto: v.Kind == nft.VerdictGoto}, true
	}
	panic(fmt.Sprintf("nftsim: verdict kind %d", v.Kind))
}

func (s *Sim) value(st *state, f nft.Field) nft.Value {
	switch f {
	case nft.FieldSaddr:
		return nft.AddrValue(st.p.Src)
	case nft.FieldDaddr:
		return nft.AddrValue(st.p.Dst)
	case nft.FieldL4Proto:
		return nft.NumValue(uint32(st.p.Proto))
	case nft.FieldTHDport:
		return nft.NumValue(uint32(st.p.DPort))
	case nft.FieldMark:
		return nft.NumValue(st.p.Mark)
	case nft.FieldFibDaddrType:
		if s.isLocal(st.p.Dst) {
			return nft.NumValue(nft.AddrTypeLocal)
		}
		return nft.NumValue(1) // unicast
	case nft.FieldFibSaddrType:
		if s.isLocal(st.p.Src) {
			return nft.NumValue(nft.AddrTypeLocal)
		}
		return nft.NumValue(1)
	}
	panic(fmt.Sprintf("nftsim: field %d not modelled", f))
}

func (s *Sim) key(st *state, fields []nft.Field) []nft.Value {
	out := make([]nft.Value, len(fields))
	for i, f := range fields {
		out[i] = s.value(st, f)
	}
	return out
}

func (s *Sim) find(set *nft.Set, key []nft.Value) (nft.Element, bool) {
	if set == nil {
		return nft.Element{}, false
	}
	if set.Interval {
		for _, e := range set.Elements {
			if e.Prefix.Contains(key[0].Addr) {
				return e, true
			}
		}
		return nft.Element{}, false
	}
	e, ok := set.Elements[nft.ElementKey(set.SetSpec, nft.Element{Key: key})]
	return e, ok
}

func (s *Sim) inSet(t *nft.Table, name string, key []nft.Value) bool {
	set := t.Sets[name]
	if set != nil && set.Dynamic {
		exp, ok := s.dynamic[name][key[0].Addr]
		return ok && s.Now().Before(exp)
	}
	_, ok := s.find(set, key)
	return ok
}

// TraceText joins a trace for messages.
func TraceText(r Result) string { return strings.Join(r.Trace, " > ") }
