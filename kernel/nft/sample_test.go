package nft

import (
	"net/netip"
	"time"
)

// sampleBatch builds a table using every expression and set kind this package has.
func sampleBatch(f Family) (*Batch, TableRef) {
	ref := TableRef{Family: f, Name: "plinth-sample"}
	addr := func(v4, v6 string) netip.Addr {
		if f == IPv6 {
			return netip.MustParseAddr(v6)
		}
		return netip.MustParseAddr(v4)
	}
	pfx := func(v4, v6 string) netip.Prefix {
		if f == IPv6 {
			return netip.MustParsePrefix(v6)
		}
		return netip.MustParsePrefix(v4)
	}
	addrT := TypeIPv4Addr
	if f == IPv6 {
		addrT = TypeIPv6Addr
	}
	var b Batch
	b.AddTable(ref)
	b.AddChain(ref, ChainSpec{Name: "nat-prerouting", Base: &BaseChain{Type: ChainNAT, Hook: HookPrerouting, Priority: PriorityDstNAT}})
	b.AddChain(ref, ChainSpec{Name: "filter-forward", Base: &BaseChain{Type: ChainFilter, Hook: HookForward, Priority: PriorityDstNAT - 10}})
	b.AddChain(ref, ChainSpec{Name: "nat-postrouting", Base: &BaseChain{Type: ChainNAT, Hook: HookPostrouting, Priority: PrioritySrcNAT}})
	for _, c := range []string{"services", "ep-a", "ep-b", "svc", "reject-chain", "mark-for-masquerade"} {
		b.AddChain(ref, ChainSpec{Name: c})
	}
	b.AddSet(ref, SetSpec{Name: "service-ips", Key: []DataType{addrT, TypeInetProto, TypeInetService}, IsMap: true})
	b.AddSet(ref, SetSpec{Name: "nodeport-ips", Key: []DataType{addrT}})
	b.AddSet(ref, SetSpec{Name: "cidrs", Key: []DataType{addrT}, Interval: true})
	b.AddSet(ref, SetSpec{Name: "endpoints", Key: []DataType{TypeMark}, IsMap: true, Data: []DataType{addrT, TypeInetService}})
	b.AddElements(ref, "endpoints",
		Element{Key: []Value{NumValue(40)}, Data: []Value{AddrValue(addr("10.3.0.1", "fd00:3::1")), NumValue(8080)}},
		Element{Key: []Value{NumValue(41)}, Data: []Value{AddrValue(addr("10.3.0.2", "fd00:3::2")), NumValue(8081)}})
	b.AddSet(ref, SetSpec{Name: "affinity-a", Key: []DataType{addrT}, Dynamic: true, Timeout: 3 * time.Hour})
	b.AddElements(ref, "service-ips",
		Element{Key: []Value{AddrValue(addr("10.96.0.10", "fd00:96::10")), NumValue(ProtoTCP), NumValue(80)}, Verdict: Goto("svc").pointer()},
		Element{Key: []Value{AddrValue(addr("10.96.0.11", "fd00:96::11")), NumValue(ProtoSCTP), NumValue(9000)}, Verdict: Goto("reject-chain").pointer()})
	b.AddElements(ref, "nodeport-ips", Element{Key: []Value{AddrValue(addr("192.0.2.1", "2001:db8::1"))}})
	b.AddElements(ref, "cidrs", Element{Prefix: pfx("10.0.0.0/8", "fd00::/48")}, Element{Prefix: pfx("192.168.7.0/24", "2001:db8:7::/64")},
		Element{Prefix: pfx("203.0.113.9/32", "2001:db8::9/128")})
	b.AddRule(ref, "nat-prerouting", Verdict{Kind: VerdictJump, Chain: "services"})
	b.AddRule(ref, "services", VMap{Fields: []Field{FieldDaddr, FieldL4Proto, FieldTHDport}, Map: "service-ips"})
	b.AddRule(ref, "services", Lookup{Fields: []Field{FieldDaddr}, Set: "nodeport-ips"}, Cmp{Field: FieldTHDport, Value: NumValue(30080)}, Goto("svc"))
	b.AddRule(ref, "services", Cmp{Field: FieldFibDaddrType, Value: NumValue(AddrTypeLocal)}, PrefixCmp{Field: FieldDaddr, Neq: true, Prefix: pfx("127.0.0.0/8", "::1/128")}, Return())
	b.AddRule(ref, "filter-forward", CtStateNew{}, Lookup{Fields: []Field{FieldSaddr}, Set: "cidrs", Neq: true}, Drop())
	b.AddRule(ref, "filter-forward", Cmp{Field: FieldL4Proto, Value: NumValue(ProtoTCP)}, Reject{TCPReset: true})
	b.AddRule(ref, "reject-chain", Reject{})
	b.AddRule(ref, "mark-for-masquerade", MarkOr{Bits: 0x4000})
	b.AddRule(ref, "nat-postrouting", MarkBitClear{Bits: 0x4000}, Return())
	b.AddRule(ref, "nat-postrouting", MarkXor{Bits: 0x4000})
	b.AddRule(ref, "nat-postrouting", Masquerade{FullyRandom: true})
	b.AddRule(ref, "svc", PrefixCmp{Field: FieldSaddr, Neq: true, Prefix: pfx("10.0.0.0/8", "fd00::/48")}, Jump("mark-for-masquerade"))
	b.AddRule(ref, "svc", Lookup{Fields: []Field{FieldSaddr}, Set: "affinity-a"}, Goto("ep-a"))
	b.AddRule(ref, "svc", NumgenVMap{Targets: []Verdict{Goto("ep-a"), Goto("ep-b")}})
	b.AddRule(ref, "svc", NumgenCmp{Mod: 3, Value: 0}, Goto("ep-a"))
	b.AddRule(ref, "svc", Cmp{Field: FieldL4Proto, Value: NumValue(ProtoTCP)}, NumgenDNAT{Mod: 2, Offset: 40, Map: "endpoints"})
	b.AddRule(ref, "ep-a", Cmp{Field: FieldSaddr, Value: AddrValue(addr("10.1.0.5", "fd00:1::5"))}, Jump("mark-for-masquerade"))
	b.AddRule(ref, "ep-a", UpdateSet{Set: "affinity-a", Field: FieldSaddr})
	b.AddRule(ref, "ep-a", Cmp{Field: FieldL4Proto, Value: NumValue(ProtoTCP)}, DNAT{Addr: addr("10.1.0.5", "fd00:1::5"), Port: 8080})
	b.AddRule(ref, "ep-b", Cmp{Field: FieldMark, Neq: true, Value: NumValue(7)}, Cmp{Field: FieldL4Proto, Value: NumValue(ProtoTCP)}, DNAT{Addr: addr("10.2.0.6", "fd00:2::6"), Port: 80})
	b.AddRule(ref, "ep-b", Cmp{Field: FieldFibSaddrType, Value: NumValue(AddrTypeLocal)}, Accept())
	b.InsertRule(ref, "ep-b", Cmp{Field: FieldMark, Value: NumValue(9)}, Drop())
	return &b, ref
}
