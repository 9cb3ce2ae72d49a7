package nft

import (
	"fmt"
	"net/netip"
	"strings"
)

// Field is a packet or metadata field an expression reads.
type Field uint8

const (
	FieldSaddr        Field = iota + 1 // ip saddr / ip6 saddr
	FieldDaddr                         // ip daddr / ip6 daddr
	FieldL4Proto                       // meta l4proto
	FieldTHDport                       // th dport
	FieldMark                          // meta mark
	FieldFibDaddrType                  // fib daddr type
	FieldFibSaddrType                  // fib saddr type
)

// Type is the field's data type in family f.
func (fl Field) Type(f Family) DataType {
	switch fl {
	case FieldSaddr, FieldDaddr:
		if f == IPv6 {
			return TypeIPv6Addr
		}
		return TypeIPv4Addr
	case FieldL4Proto:
		return TypeInetProto
	case FieldTHDport:
		return TypeInetService
	case FieldMark:
		return TypeMark
	case FieldFibDaddrType, FieldFibSaddrType:
		return TypeAddrType
	}
	return 0
}

func (fl Field) text(f Family) string {
	switch fl {
	case FieldSaddr:
		return f.String() + " saddr"
	case FieldDaddr:
		return f.String() + " daddr"
	case FieldL4Proto:
		return "meta l4proto"
	case FieldTHDport:
		return "th dport"
	case FieldMark:
		return "meta mark"
	case FieldFibDaddrType:
		return "fib daddr type"
	case FieldFibSaddrType:
		return "fib saddr type"
	}
	return fmt.Sprintf("field(%d)", uint8(fl))
}

// Expr is one expression of a rule. The set is closed: the kernel Programmer compiles
// each to netlink expressions and decodes them back.
type Expr interface {
	text(f Family) string
}

// Protocol numbers (inet_proto).
const (
	ProtoTCP  = 6
	ProtoUDP  = 17
	ProtoSCTP = 132
)

// Address types (fib ... type).
const AddrTypeLocal = 2 // RTN_LOCAL

// Cmp matches Field == Value (or != when Neq).
type Cmp struct {
	Field Field
	Neq   bool
	Value Value
}

// PrefixCmp matches an address field inside (or, Neq, outside) a prefix.
type PrefixCmp struct {
	Field  Field
	Neq    bool
	Prefix netip.Prefix
}

// CtStateNew matches connections in conntrack state new.
type CtStateNew struct{}

// MarkBitClear matches packets whose mark has none of Bits set.
type MarkBitClear struct{ Bits uint32 }

// Lookup matches when the concatenation of Fields is (or, Neq, is not) in Set.
type Lookup struct {
	Fields []Field
	Set    string
	Neq    bool
}

// VMap looks the concatenation of Fields up in a verdict map and applies the verdict
// found; no match continues with the next rule.
type VMap struct {
	Fields []Field
	Map    string
}

// NumgenVMap picks one of Targets at random (numgen random mod len(Targets)) through
// an anonymous verdict map. Every anonymous map is a set of the table, and the kernel
// finds sets by name with a linear scan, so tables with thousands of them commit in
// quadratic time: at scale prefer a NumgenCmp cascade.
type NumgenVMap struct{ Targets []Verdict }

// NumgenCmp matches when a fresh random number mod Mod equals Value. A cascade of
// rules "numgen random mod (N-i) 0 goto endpoint-i" picks uniformly among N without
// any set.
type NumgenCmp struct{ Mod, Value uint32 }

// NumgenDNAT DNATs to the address . port found in Map under the key
// Offset + (numgen random mod Mod): one rule and one shared map choose among N
// endpoints, and replacing an endpoint changes only map elements. Map is keyed by
// mark (4 bytes) with address . inet_service data.
type NumgenDNAT struct {
	Mod, Offset uint32
	Map         string
}

// MarkOr sets Bits in the packet mark; MarkXor flips them.
type MarkOr struct{ Bits uint32 }
type MarkXor struct{ Bits uint32 }

// UpdateSet adds (or refreshes the timeout of) Field's value in a dynamic set.
type UpdateSet struct {
	Set   string
	Field Field
}

// DNAT rewrites the destination to Addr:Port. Match the L4 protocol before it.
type DNAT struct {
	Addr netip.Addr
	Port uint16
}

// Masquerade source-NATs to the outgoing interface's address.
type Masquerade struct{ FullyRandom bool }

// Reject answers with a TCP reset, or with ICMP(v6) port unreachable.
type Reject struct{ TCPReset bool }

func (e Cmp) text(f Family) string {
	op := " "
	if e.Neq {
		op = " != "
	}
	return e.Field.text(f) + op + formatValue(e.Field.Type(f), e.Value)
}

func (e PrefixCmp) text(f Family) string {
	op := " "
	if e.Neq {
		op = " != "
	}
	return e.Field.text(f) + op + e.Prefix.Masked().String()
}

func (CtStateNew) text(Family) string { return "ct state new" }

func (e MarkBitClear) text(Family) string {
	return fmt.Sprintf("meta mark & 0x%08x == 0x00000000", e.Bits)
}

func fieldsText(f Family, fields []Field) string {
	parts := make([]string, len(fields))
	for i, fl := range fields {
		parts[i] = fl.text(f)
	}
	return strings.Join(parts, " . ")
}

func (e Lookup) text(f Family) string {
	op := " @"
	if e.Neq {
		op = " != @"
	}
	return fieldsText(f, e.Fields) + op + e.Set
}

func (e VMap) text(f Family) string { return fieldsText(f, e.Fields) + " vmap @" + e.Map }

func (e NumgenVMap) text(Family) string {
	parts := make([]string, len(e.Targets))
	for i, v := range e.Targets {
		parts[i] = fmt.Sprintf("%d : %s", i, v.text(0))
	}
	return fmt.Sprintf("numgen random mod %d vmap { %s }", len(e.Targets), strings.Join(parts, ", "))
}

func (e NumgenCmp) text(Family) string {
	return fmt.Sprintf("numgen random mod %d %d", e.Mod, e.Value)
}

func (e NumgenDNAT) text(Family) string {
	return fmt.Sprintf("dnat to numgen random mod %d offset %d map @%s", e.Mod, e.Offset, e.Map)
}

func (e MarkOr) text(Family) string  { return fmt.Sprintf("meta mark set meta mark | 0x%08x", e.Bits) }
func (e MarkXor) text(Family) string { return fmt.Sprintf("meta mark set meta mark ^ 0x%08x", e.Bits) }

func (e UpdateSet) text(f Family) string {
	return fmt.Sprintf("update @%s { %s }", e.Set, e.Field.text(f))
}

func (e DNAT) text(Family) string {
	if e.Addr.Is6() && !e.Addr.Is4In6() {
		return fmt.Sprintf("dnat to [%s]:%d", e.Addr, e.Port)
	}
	return fmt.Sprintf("dnat to %s:%d", e.Addr.Unmap(), e.Port)
}

func (e Masquerade) text(Family) string {
	if e.FullyRandom {
		return "masquerade fully-random"
	}
	return "masquerade"
}

func (e Reject) text(Family) string {
	if e.TCPReset {
		return "reject with tcp reset"
	}
	return "reject"
}

func (v Verdict) text(Family) string {
	switch v.Kind {
	case VerdictAccept:
		return "accept"
	case VerdictDrop:
		return "drop"
	case VerdictReturn:
		return "return"
	case VerdictJump:
		return "jump " + v.Chain
	case VerdictGoto:
		return "goto " + v.Chain
	}
	return fmt.Sprintf("verdict(%d)", v.Kind)
}

func (v Verdict) String() string { return v.text(0) }

var protoNames = map[uint32]string{ProtoTCP: "tcp", ProtoUDP: "udp", ProtoSCTP: "sctp", 1: "icmp", 58: "ipv6-icmp"}

func formatValue(t DataType, v Value) string {
	switch t {
	case TypeIPv4Addr, TypeIPv6Addr:
		return v.Addr.String()
	case TypeInetProto:
		if n, ok := protoNames[v.Num]; ok {
			return n
		}
		return fmt.Sprint(v.Num)
	case TypeMark:
		return fmt.Sprintf("0x%08x", v.Num)
	case TypeAddrType:
		if v.Num == AddrTypeLocal {
			return "local"
		}
		return fmt.Sprint(v.Num)
	}
	return fmt.Sprint(v.Num)
}

// RuleText renders a rule as nft prints it.
func RuleText(f Family, r Rule) string {
	parts := make([]string, len(r))
	for i, e := range r {
		parts[i] = e.text(f)
	}
	return strings.Join(parts, " ")
}

// ElementKey renders an element's key as nft prints it; it also identifies the element
// within its set.
func ElementKey(spec SetSpec, e Element) string {
	if spec.Interval || e.Prefix.IsValid() {
		if e.Prefix.IsSingleIP() {
			return e.Prefix.Addr().String()
		}
		return e.Prefix.Masked().String()
	}
	parts := make([]string, len(e.Key))
	for i, v := range e.Key {
		t := TypeInteger
		if i < len(spec.Key) {
			t = spec.Key[i]
		} else if v.Addr.IsValid() {
			t = TypeIPv6Addr
		}
		parts[i] = formatValue(t, v)
	}
	return strings.Join(parts, " . ")
}
