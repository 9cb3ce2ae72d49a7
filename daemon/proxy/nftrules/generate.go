package nftrules

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/nft"
)

// TableName is the name of both tables (ip and ip6).
const TableName = "plinth"

// MasqueradeBit is the packet mark bit that asks nat-postrouting to masquerade. It is
// kube-proxy's and kubelet's KUBE-MARK-MASQ bit, so the meaning stays the same on nodes
// that ran them before.
const MasqueradeBit uint32 = 0x4000

// Chain priorities, as kube-proxy's nftables mode uses them.
const (
	priorityFilter        = nft.PriorityDstNAT - 10 // before DNAT: sees the service address
	priorityFilterPostNAT = nft.PriorityDstNAT + 10 // after DNAT in output
)

// Names of the fixed chains and sets.
const (
	chainFilterPrerouting   = "filter-prerouting"
	chainFilterInput        = "filter-input"
	chainFilterForward      = "filter-forward"
	chainFilterOutput       = "filter-output"
	chainFilterOutputPost   = "filter-output-post-dnat"
	chainNATPrerouting      = "nat-prerouting"
	chainNATOutput          = "nat-output"
	chainNATPostrouting     = "nat-postrouting"
	chainMarkForMasquerade  = "mark-for-masquerade"
	chainMasquerading       = "masquerading"
	chainServices           = "services"
	chainServiceEPCheck     = "service-endpoints-check"
	chainNodePortEPCheck    = "nodeport-endpoints-check"
	chainFirewallCheck      = "firewall-check"
	chainClusterIPsCheck    = "cluster-ips-check"
	chainReject             = "reject-chain"
	setClusterIPs           = "cluster-ips"
	setClusterIPPorts       = "cluster-ip-ports"
	setServiceCIDRs         = "service-cidrs"
	setClusterCIDRs         = "cluster-cidrs"
	setNodePortIPs          = "nodeport-ips"
	mapServiceIPs           = "service-ips"
	mapServiceNodePorts     = "service-nodeports"
	mapNoEndpointServices   = "no-endpoint-services"
	mapNoEndpointNodePorts  = "no-endpoint-nodeports"
	mapFirewallIPs          = "firewall-ips"
	endpointMapPrefix       = "service-endpoints-"
	servicePrefix           = "service-"
	externalPrefix          = "external-"
	localPrefix             = "local-"
	endpointPrefix          = "endpoint-"
	firewallPrefix          = "firewall-"
	affinityPrefix          = "affinity-"
	hairpinUnknownNodeLabel = ""
)

var serviceKey = []nft.Field{nft.FieldDaddr, nft.FieldL4Proto, nft.FieldTHDport}
var nodePortKey = []nft.Field{nft.FieldL4Proto, nft.FieldTHDport}

func tableRef(f desired.Family) nft.TableRef {
	if f == desired.IPv6 {
		return nft.TableRef{Family: nft.IPv6, Name: TableName}
	}
	return nft.TableRef{Family: nft.IPv4, Name: TableName}
}

func addrType(f desired.Family) nft.DataType {
	if f == desired.IPv6 {
		return nft.TypeIPv6Addr
	}
	return nft.TypeIPv4Addr
}

func protoNum(p desired.Protocol) uint32 {
	switch p {
	case desired.UDP:
		return nft.ProtoUDP
	case desired.SCTP:
		return nft.ProtoSCTP
	}
	return nft.ProtoTCP
}

// baseChains are the hooks kube-proxy's nftables mode uses, at the same priorities.
var baseChains = []nft.ChainSpec{
	{Name: chainFilterPrerouting, Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookPrerouting, Priority: priorityFilter}},
	{Name: chainFilterInput, Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput, Priority: priorityFilter}},
	{Name: chainFilterForward, Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookForward, Priority: priorityFilter}},
	{Name: chainFilterOutput, Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookOutput, Priority: priorityFilter}},
	{Name: chainFilterOutputPost, Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookOutput, Priority: priorityFilterPostNAT}},
	{Name: chainNATPrerouting, Base: &nft.BaseChain{Type: nft.ChainNAT, Hook: nft.HookPrerouting, Priority: nft.PriorityDstNAT}},
	{Name: chainNATOutput, Base: &nft.BaseChain{Type: nft.ChainNAT, Hook: nft.HookOutput, Priority: nft.PriorityDstNAT}},
	{Name: chainNATPostrouting, Base: &nft.BaseChain{Type: nft.ChainNAT, Hook: nft.HookPostrouting, Priority: nft.PrioritySrcNAT}},
}

// fixedSets are the sets and maps every table has.
func fixedSets(f desired.Family) []nft.SetSpec {
	at := addrType(f)
	return []nft.SetSpec{
		{Name: setClusterIPs, Key: []nft.DataType{at}},
		{Name: setClusterIPPorts, Key: []nft.DataType{at, nft.TypeInetProto, nft.TypeInetService}},
		{Name: setServiceCIDRs, Key: []nft.DataType{at}, Interval: true},
		{Name: setClusterCIDRs, Key: []nft.DataType{at}, Interval: true},
		{Name: setNodePortIPs, Key: []nft.DataType{at}, Interval: true},
		{Name: mapServiceIPs, Key: []nft.DataType{at, nft.TypeInetProto, nft.TypeInetService}, IsMap: true},
		{Name: mapServiceNodePorts, Key: []nft.DataType{nft.TypeInetProto, nft.TypeInetService}, IsMap: true},
		{Name: mapNoEndpointServices, Key: []nft.DataType{at, nft.TypeInetProto, nft.TypeInetService}, IsMap: true},
		{Name: mapNoEndpointNodePorts, Key: []nft.DataType{nft.TypeInetProto, nft.TypeInetService}, IsMap: true},
		{Name: mapFirewallIPs, Key: []nft.DataType{at, nft.TypeInetProto, nft.TypeInetService}, IsMap: true},
	}
}

// endpointMap is the spec of endpoint map number g: key offset+i, data the i-th
// endpoint's address . port.
func endpointMap(f desired.Family, g int) nft.SetSpec {
	return nft.SetSpec{Name: fmt.Sprintf("%s%d", endpointMapPrefix, g), Key: []nft.DataType{nft.TypeMark}, IsMap: true,
		Data: []nft.DataType{addrType(f), nft.TypeInetService}}
}

type namedRules struct {
	name  string
	rules []nft.Rule
}

// fixedChains are the base and helper chains with their rules. nodePortCIDRs is true
// when NodePorts listen on every local address inside configured CIDRs rather than on
// the node's primary addresses.
func fixedChains(f desired.Family, nodePortCIDRs, clusterCIDRs bool) []namedRules {
	newConn := nft.CtStateNew{}
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	if f == desired.IPv6 {
		loopback = netip.MustParsePrefix("::1/128")
	}
	nodePortMatch := []nft.Expr{nft.Lookup{Fields: []nft.Field{nft.FieldDaddr}, Set: setNodePortIPs}}
	if nodePortCIDRs {
		nodePortMatch = []nft.Expr{
			nft.Cmp{Field: nft.FieldFibDaddrType, Value: nft.NumValue(nft.AddrTypeLocal)},
			nft.PrefixCmp{Field: nft.FieldDaddr, Neq: true, Prefix: loopback},
			nodePortMatch[0],
		}
	}
	rule := func(es ...nft.Expr) nft.Rule { return nft.Rule(es) }
	with := func(prefix []nft.Expr, es ...nft.Expr) nft.Rule {
		return append(append(nft.Rule{}, prefix...), es...)
	}
	var services []nft.Rule
	if clusterCIDRs {
		// Traffic from outside the pod network to a ClusterIP must come back through
		// this node: masquerade it. (kube-proxy has one such rule per service; one
		// rule and a set cost the kernel far less at scale.)
		services = append(services, rule(nft.Lookup{Fields: []nft.Field{nft.FieldSaddr}, Set: setClusterCIDRs, Neq: true},
			nft.Lookup{Fields: serviceKey, Set: setClusterIPPorts}, nft.Jump(chainMarkForMasquerade)))
	}
	services = append(services,
		rule(nft.VMap{Fields: serviceKey, Map: mapServiceIPs}),
		with(nodePortMatch, nft.VMap{Fields: nodePortKey, Map: mapServiceNodePorts}))
	return []namedRules{
		{chainFilterPrerouting, []nft.Rule{rule(newConn, nft.Jump(chainFirewallCheck))}},
		{chainFilterInput, []nft.Rule{rule(newConn, nft.Jump(chainNodePortEPCheck)), rule(newConn, nft.Jump(chainServiceEPCheck))}},
		{chainFilterForward, []nft.Rule{rule(newConn, nft.Jump(chainServiceEPCheck)), rule(newConn, nft.Jump(chainClusterIPsCheck))}},
		{chainFilterOutput, []nft.Rule{rule(newConn, nft.Jump(chainServiceEPCheck)), rule(newConn, nft.Jump(chainFirewallCheck))}},
		{chainFilterOutputPost, []nft.Rule{rule(newConn, nft.Jump(chainClusterIPsCheck))}},
		{chainNATPrerouting, []nft.Rule{rule(nft.Jump(chainServices))}},
		{chainNATOutput, []nft.Rule{rule(nft.Jump(chainServices))}},
		{chainNATPostrouting, []nft.Rule{rule(nft.Jump(chainMasquerading))}},
		{chainMarkForMasquerade, []nft.Rule{rule(nft.MarkOr{Bits: MasqueradeBit})}},
		{chainMasquerading, []nft.Rule{
			rule(nft.MarkBitClear{Bits: MasqueradeBit}, nft.Return()),
			rule(nft.MarkXor{Bits: MasqueradeBit}),
			rule(nft.Masquerade{FullyRandom: true}),
		}},
		{chainServices, services},
		{chainServiceEPCheck, []nft.Rule{rule(nft.VMap{Fields: serviceKey, Map: mapNoEndpointServices})}},
		{chainNodePortEPCheck, []nft.Rule{with(nodePortMatch, nft.VMap{Fields: nodePortKey, Map: mapNoEndpointNodePorts})}},
		{chainFirewallCheck, []nft.Rule{rule(nft.VMap{Fields: serviceKey, Map: mapFirewallIPs})}},
		{chainClusterIPsCheck, []nft.Rule{
			// An allocated ClusterIP on a port no service defines: refuse fast.
			rule(nft.Lookup{Fields: []nft.Field{nft.FieldDaddr}, Set: setClusterIPs}, nft.Goto(chainReject)),
			// An unallocated address in the service range: nothing will ever answer.
			rule(nft.Lookup{Fields: []nft.Field{nft.FieldDaddr}, Set: setServiceCIDRs}, nft.Drop()),
		}},
		{chainReject, []nft.Rule{
			rule(nft.Cmp{Field: nft.FieldL4Proto, Value: nft.NumValue(nft.ProtoTCP)}, nft.Reject{TCPReset: true}),
			rule(nft.Reject{}),
		}},
	}
}

// portID is the readable, unique part of a service port's chain names, as kube-proxy
// forms them: a hash (so truncation or odd characters never collide) then
// namespace/name/protocol/port.
func portID(n desired.ServicePortName) string {
	sum := sha256.Sum256([]byte(n.String()))
	h := base32.StdEncoding.EncodeToString(sum[:])[:8]
	port := n.Port
	if port == "" {
		port = "-"
	}
	return fmt.Sprintf("%s-%s/%s/%s/%s", h, n.Namespace, n.Name, strings.ToLower(string(n.Protocol)), port)
}

func endpointID(n desired.ServicePortName, ep desired.Endpoint) string {
	a := ep.Addr.String()
	if ep.Addr.Is6() && !ep.Addr.Is4In6() {
		a = "[" + a + "]"
	}
	return fmt.Sprintf("%s__%s/%d", portID(n), a, ep.Port)
}

// mapElem is one element a service port puts into a fixed set or map.
type mapElem struct {
	set  string
	elem nft.Element
}

// key identifies the element within the table: its set and its raw key (the record
// holds hundreds of thousands; formatting them as text cost a tenth of a full sync).
func (m mapElem) key() string {
	b := make([]byte, 0, len(m.set)+24)
	b = append(b, m.set...)
	b = append(b, 0)
	if m.elem.Prefix.IsValid() {
		b = m.elem.Prefix.AppendTo(b)
	}
	for _, v := range m.elem.Key {
		if v.Addr.IsValid() {
			b = append(b, v.Addr.AsSlice()...)
		} else {
			b = binary.BigEndian.AppendUint32(b, v.Num)
		}
	}
	return string(b)
}

// portRules is everything one service port contributes to one family's table.
type portRules struct {
	chains   []namedRules  // service, external, local, firewall and endpoint chains
	affinity []nft.SetSpec // one dynamic set per endpoint with ClientIP affinity
	elems    []mapElem
}

func svcElem(set string, a netip.Addr, proto uint32, port uint16, v nft.Verdict) mapElem {
	e := nft.Element{Key: []nft.Value{nft.AddrValue(a), nft.NumValue(proto), nft.NumValue(uint32(port))}}
	if v.Kind != 0 {
		e.Verdict = &v
	}
	return mapElem{set: set, elem: e}
}

// blockAllocator hands out endpoint map key ranges: chain's N endpoints live in map
// number group under keys offset .. offset+N-1. Asking again for the same chain and
// the same endpoints gives the same place; other endpoints get a new range (and a new
// rule), so the old range can be deleted later rather than overwritten now.
//
// The endpoints are spread over several maps (about 64 service ports each) because the
// kernel checks every element of a map each time a rule binds to it, and every binding
// of a map each time an element is added: one map for all services made a sync
// quadratic.
type blockAllocator interface {
	block(chain string, endpoints string, n int) (group int, offset uint32)
}

// generatePort renders one service port in one family. clusterCIDRs tells whether the
// table has pod CIDRs to tell pod traffic from off-node traffic.
func generatePort(sp *desired.ServicePort, clusterCIDRs bool, blocks blockAllocator) *portRules {
	if !sp.ClusterIP.IsValid() {
		return nil // headless: no rules
	}
	pr := &portRules{}
	id := portID(sp.Name)
	proto := protoNum(sp.Protocol)
	fam := sp.Family
	serviceChain := servicePrefix + id
	external := len(sp.ExternalIPs) > 0 || len(sp.LoadBalancerIPs) > 0 || sp.NodePort != 0

	usable := func(eps []desired.Endpoint) []desired.Endpoint {
		out := make([]desired.Endpoint, 0, len(eps))
		for _, ep := range eps {
			if ep.Addr.IsValid() && desired.FamilyOf(ep.Addr) == fam {
				out = append(out, ep)
			}
		}
		return out
	}
	clusterEPs := usable(sp.ClusterEndpoints)
	externalEPs := usable(sp.ExternalEndpoints)

	endpointChains := map[string]bool{}
	// chooser picks an endpoint uniformly: rule i of N matches with probability
	// 1/(N-i) (numgen random mod N-i == 0), the last rule takes what is left. kube-proxy
	// uses one anonymous vmap per service instead; the kernel looks sets up by name
	// with a linear scan, which made commits quadratic in the number of services (see
	// README.md). An endpoint gets its own chain only when it needs more than the DNAT
	// (hairpin masquerade for a local endpoint, ClientIP affinity); otherwise the rule
	// DNATs directly, which keeps a sync to about a third of the netlink messages.
	chooser := func(chain string, eps []desired.Endpoint) []nft.Rule {
		simple := true
		for _, ep := range eps {
			simple = simple && !needsEndpointChain(sp, ep)
		}
		if simple {
			// One rule and one element per endpoint in the shared map.
			group, off := blocks.block(chain, endpointList(eps), len(eps))
			m := endpointMap(sp.Family, group).Name
			for i, ep := range eps {
				pr.elems = append(pr.elems, mapElem{set: m, elem: nft.Element{
					Key:  []nft.Value{nft.NumValue(off + uint32(i))},
					Data: []nft.Value{nft.AddrValue(ep.Addr), nft.NumValue(uint32(ep.Port))},
				}})
			}
			return []nft.Rule{{
				nft.Cmp{Field: nft.FieldL4Proto, Value: nft.NumValue(proto)},
				nft.NumgenDNAT{Mod: uint32(len(eps)), Offset: off, Map: m},
			}}
		}
		var rules, picks []nft.Rule
		for i, ep := range eps {
			var action []nft.Expr
			if needsEndpointChain(sp, ep) {
				epChain := endpointPrefix + endpointID(sp.Name, ep)
				if !endpointChains[epChain] {
					endpointChains[epChain] = true
					pr.addEndpoint(sp, ep, epChain, proto)
				}
				if sp.SessionAffinity > 0 {
					rules = append(rules, nft.Rule{nft.Lookup{Fields: []nft.Field{nft.FieldSaddr}, Set: affinitySet(sp, ep)}, nft.Goto(epChain)})
				}
				action = []nft.Expr{nft.Goto(epChain)}
			} else {
				action = []nft.Expr{nft.Cmp{Field: nft.FieldL4Proto, Value: nft.NumValue(proto)}, nft.DNAT{Addr: ep.Addr, Port: ep.Port}}
			}
			if rest := len(eps) - i; rest > 1 {
				picks = append(picks, append(nft.Rule{nft.NumgenCmp{Mod: uint32(rest), Value: 0}}, action...))
			} else {
				picks = append(picks, nft.Rule(action))
			}
		}
		return append(rules, picks...)
	}

	// Traffic to the ClusterIP.
	pr.elems = append(pr.elems, mapElem{set: setClusterIPs, elem: nft.Element{Key: []nft.Value{nft.AddrValue(sp.ClusterIP)}}})
	if len(clusterEPs) > 0 {
		if clusterCIDRs {
			pr.elems = append(pr.elems, svcElem(setClusterIPPorts, sp.ClusterIP, proto, sp.Port, nft.Verdict{}))
		}
		rules := chooser(serviceChain, clusterEPs)
		// The service chain goes first so chain creation order reads naturally.
		pr.chains = append([]namedRules{{serviceChain, rules}}, pr.chains...)
		pr.elems = append(pr.elems, svcElem(mapServiceIPs, sp.ClusterIP, proto, sp.Port, nft.Goto(serviceChain)))
	} else {
		pr.elems = append(pr.elems, svcElem(mapNoEndpointServices, sp.ClusterIP, proto, sp.Port, noEndpointVerdict(sp.InternalPolicyLocal, sp)))
	}
	if !external {
		return pr
	}

	// Traffic to node ports, external IPs and load-balancer IPs.
	externalIPs := append(append([]netip.Addr{}, sp.ExternalIPs...), sp.LoadBalancerIPs...)
	if len(externalEPs) == 0 {
		v := noEndpointVerdict(sp.ExternalPolicyLocal, sp)
		for _, a := range externalIPs {
			if desired.FamilyOf(a) == fam {
				pr.elems = append(pr.elems, svcElem(mapNoEndpointServices, a, proto, sp.Port, v))
			}
		}
		if sp.NodePort != 0 {
			pr.elems = append(pr.elems, mapElem{set: mapNoEndpointNodePorts, elem: nft.Element{
				Key: []nft.Value{nft.NumValue(proto), nft.NumValue(uint32(sp.NodePort))}, Verdict: ptr(v)}})
		}
	} else {
		externalChain := externalPrefix + id
		var rules []nft.Rule
		if !sp.ExternalPolicyLocal {
			rules = append(rules, nft.Rule{nft.Jump(chainMarkForMasquerade)})
			if sameEndpoints(externalEPs, clusterEPs) {
				rules = append(rules, nft.Rule{nft.Goto(serviceChain)})
			} else {
				localChain := localPrefix + id
				pr.chains = append(pr.chains, namedRules{localChain, chooser(localChain, externalEPs)})
				rules = append(rules, nft.Rule{nft.Goto(localChain)})
			}
		} else {
			if len(clusterEPs) > 0 {
				if clusterCIDRs {
					// Pods on this node reaching a node port or external IP short-circuit
					// to the ClusterIP's endpoints, as kube-proxy does.
					rules = append(rules, nft.Rule{nft.Lookup{Fields: []nft.Field{nft.FieldSaddr}, Set: setClusterCIDRs}, nft.Goto(serviceChain)})
				}
				// The node itself keeps cluster-wide endpoints, masqueraded.
				rules = append(rules,
					nft.Rule{nft.Cmp{Field: nft.FieldFibSaddrType, Value: nft.NumValue(nft.AddrTypeLocal)}, nft.Jump(chainMarkForMasquerade)},
					nft.Rule{nft.Cmp{Field: nft.FieldFibSaddrType, Value: nft.NumValue(nft.AddrTypeLocal)}, nft.Goto(serviceChain)})
			}
			localChain := localPrefix + id
			pr.chains = append(pr.chains, namedRules{localChain, chooser(localChain, externalEPs)})
			rules = append(rules, nft.Rule{nft.Goto(localChain)})
		}
		pr.chains = append(pr.chains, namedRules{externalChain, rules})
		for _, a := range externalIPs {
			if desired.FamilyOf(a) == fam {
				pr.elems = append(pr.elems, svcElem(mapServiceIPs, a, proto, sp.Port, nft.Goto(externalChain)))
			}
		}
		if sp.NodePort != 0 {
			pr.elems = append(pr.elems, mapElem{set: mapServiceNodePorts, elem: nft.Element{
				Key: []nft.Value{nft.NumValue(proto), nft.NumValue(uint32(sp.NodePort))}, Verdict: ptr(nft.Goto(externalChain))}})
		}
	}

	// loadBalancerSourceRanges: only listed sources may reach the load-balancer IPs.
	var ranges []netip.Prefix
	for _, r := range sp.LoadBalancerSourceRanges {
		if r.IsValid() && desired.FamilyOf(r.Addr()) == fam {
			ranges = append(ranges, r)
		}
	}
	if len(sp.LoadBalancerSourceRanges) > 0 && len(sp.LoadBalancerIPs) > 0 {
		fwChain := firewallPrefix + id
		var rules []nft.Rule
		for _, r := range ranges {
			rules = append(rules, nft.Rule{nft.PrefixCmp{Field: nft.FieldSaddr, Prefix: r}, nft.Return()})
		}
		rules = append(rules, nft.Rule{nft.Drop()})
		pr.chains = append(pr.chains, namedRules{fwChain, rules})
		for _, a := range sp.LoadBalancerIPs {
			if desired.FamilyOf(a) == fam {
				pr.elems = append(pr.elems, svcElem(mapFirewallIPs, a, proto, sp.Port, nft.Goto(fwChain)))
			}
		}
	}
	return pr
}

// endpointList identifies a list of endpoints (addresses and ports, in order).
func endpointList(eps []desired.Endpoint) string {
	b := make([]byte, 0, 20*len(eps))
	for _, ep := range eps {
		b = ep.AddrPort().AppendTo(b)
		b = append(b, ',')
	}
	return string(b)
}

// needsEndpointChain: a chain of its own for an endpoint that may be the sender
// (hairpin: it is on this node, or its node is unknown) or that keeps ClientIP affinity.
func needsEndpointChain(sp *desired.ServicePort, ep desired.Endpoint) bool {
	return sp.SessionAffinity > 0 || ep.IsLocal || ep.NodeName == hairpinUnknownNodeLabel
}

func (pr *portRules) addEndpoint(sp *desired.ServicePort, ep desired.Endpoint, chain string, proto uint32) {
	var rules []nft.Rule
	// Hairpin: a pod reaching itself through the service must be masqueraded or it
	// would answer itself directly. Only an endpoint on this node (or of unknown node)
	// can be the sender, so remote endpoints skip the rule.
	if ep.IsLocal || ep.NodeName == hairpinUnknownNodeLabel {
		rules = append(rules, nft.Rule{nft.Cmp{Field: nft.FieldSaddr, Value: nft.AddrValue(ep.Addr)}, nft.Jump(chainMarkForMasquerade)})
	}
	if sp.SessionAffinity > 0 {
		set := affinitySet(sp, ep)
		pr.affinity = append(pr.affinity, nft.SetSpec{Name: set, Key: []nft.DataType{addrType(sp.Family)}, Dynamic: true, Timeout: sp.SessionAffinity})
		rules = append(rules, nft.Rule{nft.UpdateSet{Set: set, Field: nft.FieldSaddr}})
	}
	rules = append(rules, nft.Rule{nft.Cmp{Field: nft.FieldL4Proto, Value: nft.NumValue(proto)}, nft.DNAT{Addr: ep.Addr, Port: ep.Port}})
	pr.chains = append(pr.chains, namedRules{chain, rules})
}

// affinitySet names an endpoint's ClientIP affinity set. The timeout is part of the
// name: a set's timeout cannot change in place, so a new timeout means a new set.
func affinitySet(sp *desired.ServicePort, ep desired.Endpoint) string {
	return fmt.Sprintf("%s%s__%ds", affinityPrefix, endpointID(sp.Name, ep), int64(sp.SessionAffinity/time.Second))
}

// noEndpointVerdict: traffic a Local policy keeps off this node although endpoints
// exist elsewhere is dropped (the client retries another node); otherwise refused.
func noEndpointVerdict(local bool, sp *desired.ServicePort) nft.Verdict {
	if local && sp.HasEndpointsElsewhere {
		return nft.Drop()
	}
	return nft.Goto(chainReject)
}

func sameEndpoints(a, b []desired.Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].AddrPort() != b[i].AddrPort() {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }
