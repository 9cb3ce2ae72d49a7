package nft

import (
	"fmt"
	"net/netip"
	"time"
)

// Family is the nftables family of a table. Only ip and ip6 are supported: the proxy
// keeps one table per IP family.
type Family uint8

const (
	IPv4 Family = 2  // NFPROTO_IPV4: "ip"
	IPv6 Family = 10 // NFPROTO_IPV6: "ip6"
)

func (f Family) String() string {
	switch f {
	case IPv4:
		return "ip"
	case IPv6:
		return "ip6"
	}
	return fmt.Sprintf("family(%d)", uint8(f))
}

// TableRef names a table.
type TableRef struct {
	Family Family
	Name   string
}

func (t TableRef) String() string { return t.Family.String() + " " + t.Name }

// Hook is a netfilter hook a base chain attaches to.
type Hook uint8

const (
	HookPrerouting  Hook = 0
	HookInput       Hook = 1
	HookForward     Hook = 2
	HookOutput      Hook = 3
	HookPostrouting Hook = 4
)

var hookNames = map[Hook]string{HookPrerouting: "prerouting", HookInput: "input", HookForward: "forward", HookOutput: "output", HookPostrouting: "postrouting"}

func (h Hook) String() string {
	if n, ok := hookNames[h]; ok {
		return n
	}
	return fmt.Sprintf("hook(%d)", uint8(h))
}

// ChainType is a base chain's type.
type ChainType string

const (
	ChainFilter ChainType = "filter"
	ChainNAT    ChainType = "nat"
)

// Well-known priorities (nft's names).
const (
	PriorityDstNAT int32 = -100
	PriorityFilter int32 = 0
	PrioritySrcNAT int32 = 100
)

// BaseChain attaches a chain to a hook. Its policy is always accept.
type BaseChain struct {
	Type     ChainType
	Hook     Hook
	Priority int32
}

// ChainSpec declares a chain (base when Base is set).
type ChainSpec struct {
	Name string
	Base *BaseChain
}

// DataType is the type of a set key part, a match operand or a field.
type DataType uint8

const (
	TypeIPv4Addr    DataType = iota + 1 // ipv4_addr, 4 bytes, network order
	TypeIPv6Addr                        // ipv6_addr, 16 bytes, network order
	TypeInetProto                       // inet_proto, 1 byte
	TypeInetService                     // inet_service, 2 bytes, network order
	TypeMark                            // mark, 4 bytes, host order
	TypeInteger                         // integer, 4 bytes, host order
	TypeAddrType                        // addrtype (fib results), 4 bytes, host order
	TypeVerdict                         // verdict (map data only)
)

var typeNames = map[DataType]string{
	TypeIPv4Addr: "ipv4_addr", TypeIPv6Addr: "ipv6_addr", TypeInetProto: "inet_proto",
	TypeInetService: "inet_service", TypeMark: "mark", TypeInteger: "integer",
	TypeAddrType: "addrtype", TypeVerdict: "verdict",
}

func (d DataType) String() string {
	if n, ok := typeNames[d]; ok {
		return n
	}
	return fmt.Sprintf("type(%d)", uint8(d))
}

// Size is the type's length in bytes.
func (d DataType) Size() int {
	switch d {
	case TypeIPv6Addr:
		return 16
	case TypeInetProto:
		return 1
	case TypeInetService:
		return 2
	}
	return 4
}

// SetSpec declares a named set, or a verdict map when IsMap.
type SetSpec struct {
	Name string
	// Key lists the key's parts; more than one is a concatenation.
	Key   []DataType
	IsMap bool // a map: data type verdict, or Data when set
	// Data is the data type of a non-verdict map (for example address . port for DNAT).
	Data []DataType
	// Interval sets hold prefixes (single address key only).
	Interval bool
	// Dynamic sets are updated from the packet path (UpdateSet); Timeout, when set, is
	// the default element lifetime.
	Dynamic bool
	Timeout time.Duration
}

// Value is one operand: an address (Addr valid) or a number (protocol, port, mark,
// integer, addrtype).
type Value struct {
	Addr netip.Addr
	Num  uint32
}

func AddrValue(a netip.Addr) Value { return Value{Addr: a.Unmap()} }
func NumValue(n uint32) Value      { return Value{Num: n} }

// Element is one set or map element.
type Element struct {
	// Key has one Value per key part; for interval sets it is empty and Prefix is used.
	Key    []Value
	Prefix netip.Prefix
	// Verdict is a verdict map's data; Data a data map's.
	Verdict *Verdict
	Data    []Value
}

// VerdictKind is what a verdict does.
type VerdictKind uint8

const (
	VerdictAccept VerdictKind = iota + 1
	VerdictDrop
	VerdictReturn
	VerdictJump
	VerdictGoto
)

// Verdict ends (or diverts) rule evaluation. It is also an expression: the last one of
// a rule.
type Verdict struct {
	Kind  VerdictKind
	Chain string // Jump and Goto
}

func Accept() Verdict               { return Verdict{Kind: VerdictAccept} }
func Drop() Verdict                 { return Verdict{Kind: VerdictDrop} }
func Return() Verdict               { return Verdict{Kind: VerdictReturn} }
func Jump(chain string) Verdict     { return Verdict{Kind: VerdictJump, Chain: chain} }
func Goto(chain string) Verdict     { return Verdict{Kind: VerdictGoto, Chain: chain} }
func (v Verdict) pointer() *Verdict { return &v }

// Rule is a list of expressions, evaluated in order.
type Rule []Expr

// Table is a table's whole content: what List reads back and what Recorder holds.
type Table struct {
	Ref    TableRef
	Chains map[string]*Chain
	Sets   map[string]*Set
}

// Chain is a chain with its rules.
type Chain struct {
	ChainSpec
	Rules []Rule
}

// Set is a set or map with its elements, keyed by their text.
type Set struct {
	SetSpec
	Elements map[string]Element
}

// NewTable returns an empty table.
func NewTable(ref TableRef) *Table {
	return &Table{Ref: ref, Chains: map[string]*Chain{}, Sets: map[string]*Set{}}
}

func (t *Table) clone() *Table {
	c := NewTable(t.Ref)
	for n, ch := range t.Chains {
		cc := *ch
		cc.Rules = append([]Rule(nil), ch.Rules...)
		c.Chains[n] = &cc
	}
	for n, s := range t.Sets {
		cs := *s
		cs.Elements = make(map[string]Element, len(s.Elements))
		for k, e := range s.Elements {
			cs.Elements[k] = e
		}
		c.Sets[n] = &cs
	}
	return c
}
