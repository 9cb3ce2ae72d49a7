package nftrules

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/nft"
)

// StaleChainDelay is how long a chain or affinity set stays (flushed, unreferenced)
// after the last rule or element pointing at it went, before a sync deletes it.
const StaleChainDelay = time.Second

// Syncer turns desired Snapshots into the two plinth tables. It remembers what it
// committed, so a partial sync sends only the difference for the changed service
// ports; it never reads the kernel to sync. Methods are safe for one caller at a time
// (the proxy's sync runner); a mutex guards against misuse.
type Syncer struct {
	prog  nft.Programmer
	clock clock.PassiveClock

	mu     sync.Mutex
	tables map[desired.Family]*committedTable
}

// committedTable is what the last successful syncs put into one family's table.
type committedTable struct {
	nodePortCIDRs bool
	clusterCIDRs  bool
	ports         map[desired.ServicePortName]*portRules
	chains        map[string][]nft.Rule // every per-service chain and its rules
	affinity      map[string]nft.SetSpec
	owner         map[string]*portRules             // mapElem.key() -> the port whose element holds it
	fixedElems    map[string]map[string]nft.Element // node/cluster/service CIDR sets
	stale         map[string]time.Time              // chains flushed at that time
	// dirty chains got new rules inserted in front of their old ones (since then);
	// staleElems are endpoint map elements no rule reaches (since then). Both are
	// cleaned up with the stale chains.
	dirty      map[string]time.Time
	staleElems map[string]staleElement
	staleSets  map[string]time.Time
	// blocks are the endpoint map key ranges by chain; nextBlock is the first
	// never-used key (a full sync renumbers from 0); endpointMaps is how many endpoint
	// maps the table has (chosen by the full sync from the number of service ports).
	blocks       map[string]endpointBlock
	nextBlock    uint32
	endpointMaps int
}

type endpointBlock struct {
	group     int
	offset    uint32
	endpoints string
}

type staleElement struct {
	elem  mapElem
	since time.Time
}

// servicesPerEndpointMap sizes the endpoint maps: small enough that the kernel's
// per-binding and per-element checks stay cheap, large enough that the table does not
// hold so many sets that looking one up by name (a linear scan) costs.
const servicesPerEndpointMap = 64

// Garbage (replaced rules, old endpoint ranges) is collected once there are
// garbageMaxCount pieces or the oldest is garbageMaxAge old.
const (
	garbageMaxCount = 1000
	garbageMaxAge   = 10 * time.Second
)

// maxBlockKey: past it a sync is full, which renumbers the ranges from 0.
const maxBlockKey = 1 << 30

func (ct *committedTable) block(chain, endpoints string, n int) (int, uint32) {
	if b, ok := ct.blocks[chain]; ok && b.endpoints == endpoints {
		return b.group, b.offset
	}
	h := fnv.New32a()
	h.Write([]byte(chain))
	b := endpointBlock{group: int(h.Sum32() % uint32(max(ct.endpointMaps, 1))), offset: ct.nextBlock, endpoints: endpoints}
	ct.nextBlock += uint32(n)
	ct.blocks[chain] = b
	return b.group, b.offset
}

// New returns a Syncer programming through prog, with time from clk.
func New(prog nft.Programmer, clk clock.PassiveClock) *Syncer {
	return &Syncer{prog: prog, clock: clk, tables: map[desired.Family]*committedTable{}}
}

// Sync applies snap. With changes.Full, or on the first call, it rewrites both tables
// whole; otherwise it regenerates only changes.Changed service ports. Either way the
// kernel sees one atomic batch. On error nothing was applied and the next sync must be
// a full one (the caller's sync runner retries).
func (s *Syncer) Sync(ctx context.Context, snap *desired.Snapshot, changes desired.Changes) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap == nil {
		return fmt.Errorf("nftrules: nil snapshot")
	}
	families := []desired.Family{desired.IPv4, desired.IPv6}
	full := map[desired.Family]bool{}
	anyFull := false
	for _, fam := range families {
		old := s.tables[fam]
		full[fam] = changes.Full || old == nil || old.nodePortCIDRs != (len(snap.NodePortAddresses) > 0) ||
			old.clusterCIDRs != (len(prefixesOf(snap.ClusterCIDRs, fam)) > 0) || old.nextBlock > maxBlockKey
		anyFull = anyFull || full[fam]
	}
	if err := validateSnapshot(snap, changes.Changed, anyFull); err != nil {
		return fmt.Errorf("nftrules: %w", err)
	}
	now := s.clock.Now()
	var b nft.Batch
	next := map[desired.Family]*committedTable{}
	var byFamily map[desired.Family]map[desired.ServicePortName]*desired.ServicePort
	for _, fam := range families {
		old := s.tables[fam]
		var ct *committedTable
		if full[fam] {
			if byFamily == nil {
				byFamily = splitByFamily(snap)
			}
			ct = s.fullSync(&b, fam, snap, byFamily[fam], old, now)
		} else {
			// The record is updated in place: if the batch fails it is dropped
			// whole (below), so it never disagrees with the kernel.
			ct = old
			ct.partialSync(&b, fam, changedPorts(snap, fam, changes.Changed), changes.Changed, now)
			ct.syncFixedSets(&b, fam, snap)
		}
		ct.deleteStale(&b, tableRef(fam), now)
		next[fam] = ct
	}
	if err := s.prog.Apply(ctx, &b); err != nil {
		// Forget everything: the next sync rebuilds from scratch.
		s.tables = map[desired.Family]*committedTable{}
		return fmt.Errorf("nftrules: applying %d operations: %w", b.Len(), err)
	}
	s.tables = next
	return nil
}

// validateSnapshot checks the ports a sync will generate: all of them when a table is
// rewritten whole (asked for, the first sync, after a failure, a mode change), the
// changed ones otherwise.
func validateSnapshot(snap *desired.Snapshot, changed map[desired.ServicePortName]bool, all bool) error {
	check := func(name desired.ServicePortName) error {
		ports := snap.Services[name]
		for i := range ports {
			if err := validatePort(name, &ports[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if !all {
		for name := range changed {
			if err := check(name); err != nil {
				return err
			}
		}
		return nil
	}
	for name := range snap.Services {
		if err := check(name); err != nil {
			return err
		}
	}
	return nil
}

func splitByFamily(snap *desired.Snapshot) map[desired.Family]map[desired.ServicePortName]*desired.ServicePort {
	out := map[desired.Family]map[desired.ServicePortName]*desired.ServicePort{
		desired.IPv4: {}, desired.IPv6: {},
	}
	for name, ports := range snap.Services {
		for i := range ports {
			sp := &ports[i]
			out[sp.Family][name] = sp
		}
	}
	return out
}

// changedPorts looks up only the changed service ports of one family, so a partial
// sync costs the size of the change, not of the snapshot.
func changedPorts(snap *desired.Snapshot, fam desired.Family, changed map[desired.ServicePortName]bool) map[desired.ServicePortName]*desired.ServicePort {
	out := make(map[desired.ServicePortName]*desired.ServicePort, len(changed))
	for name := range changed {
		ports := snap.Services[name]
		for i := range ports {
			if ports[i].Family == fam {
				out[name] = &ports[i]
			}
		}
	}
	return out
}

func sortedNames(m map[desired.ServicePortName]*desired.ServicePort) []desired.ServicePortName {
	names := make([]desired.ServicePortName, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sortPortNames(names)
	return names
}

func sortPortNames(names []desired.ServicePortName) {
	sort.Slice(names, func(i, j int) bool {
		a, b := names[i], names[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Protocol < b.Protocol
	})
}

// newCommitted returns an empty record sized for about ports service ports.
func newCommitted(nodePortCIDRs, clusterCIDRs bool, ports int) *committedTable {
	return &committedTable{
		nodePortCIDRs: nodePortCIDRs, clusterCIDRs: clusterCIDRs,
		ports: make(map[desired.ServicePortName]*portRules, ports), chains: make(map[string][]nft.Rule, ports),
		affinity: map[string]nft.SetSpec{}, owner: make(map[string]*portRules, 4*ports),
		fixedElems: map[string]map[string]nft.Element{},
		stale:      map[string]time.Time{}, staleSets: map[string]time.Time{},
		dirty: map[string]time.Time{}, staleElems: map[string]staleElement{},
		blocks: make(map[string]endpointBlock, ports),
	}
}

// fullSync rewrites the table: every chain is flushed and refilled, every map emptied
// and refilled. Affinity sets keep their entries (they are connection state). The first
// sync of a Syncer also deletes whatever a previous run left, in the same transaction.
func (s *Syncer) fullSync(b *nft.Batch, fam desired.Family, snap *desired.Snapshot, ports map[desired.ServicePortName]*desired.ServicePort, old *committedTable, now time.Time) *committedTable {
	ref := tableRef(fam)
	nodePortCIDRs := len(snap.NodePortAddresses) > 0
	clusterCIDRs := len(prefixesOf(snap.ClusterCIDRs, fam)) > 0
	ct := newCommitted(nodePortCIDRs, clusterCIDRs, len(ports))
	b.AddTable(ref)
	if old == nil {
		// Start clean: chains and sets of an earlier run are unknown to this one.
		b.DeleteTable(ref)
		b.AddTable(ref)
	}
	for _, set := range fixedSets(fam) {
		b.AddSet(ref, set)
		b.FlushSet(ref, set.Name)
	}
	fixed := fixedChains(fam, nodePortCIDRs, clusterCIDRs)
	for _, c := range fixed {
		b.AddChain(ref, chainSpec(c.name))
		b.FlushChain(ref, c.name)
	}
	ct.endpointMaps = max(1, (len(ports)+servicesPerEndpointMap-1)/servicesPerEndpointMap)
	for g := 0; g < ct.endpointMaps; g++ {
		m := endpointMap(fam, g)
		b.AddSet(ref, m)
		if old != nil && g < old.endpointMaps {
			b.FlushSet(ref, m.Name)
		}
	}

	// Generate every service port, first owner of a map key wins.
	toAdd := make([]mapElem, 0, 16*len(ports))
	for _, name := range sortedNames(ports) {
		pr := generatePort(ports[name], clusterCIDRs, ct)
		if pr == nil {
			continue
		}
		ct.ports[name] = pr
		for _, c := range pr.chains {
			ct.chains[c.name] = c.rules
		}
		for _, a := range pr.affinity {
			ct.affinity[a.Name] = a
		}
		for _, e := range pr.elems {
			k := e.key()
			if _, taken := ct.owner[k]; taken {
				continue
			}
			ct.owner[k] = pr
			toAdd = append(toAdd, e)
		}
	}
	for name, spec := range ct.affinity {
		b.AddSet(ref, spec)
		delete(ct.staleSets, name)
	}
	chainNames := sortedChainNames(ct.chains)
	for _, name := range chainNames {
		b.AddChain(ref, nft.ChainSpec{Name: name})
		if old != nil {
			if _, existed := old.chains[name]; existed {
				b.FlushChain(ref, name)
			} else if _, wasStale := old.stale[name]; wasStale {
				b.FlushChain(ref, name)
			}
		}
	}
	for _, c := range fixed {
		for _, r := range c.rules {
			b.AddRule(ref, c.name, r...)
		}
	}
	for _, name := range chainNames {
		for _, r := range ct.chains[name] {
			b.AddRule(ref, name, r...)
		}
	}
	addElements(b, ref, toAdd)
	ct.syncFixedSetsFull(b, fam, snap)
	if old != nil {
		// Chains and sets of the old state that are gone: flushed now (the maps were
		// refilled without them), deleted a second later.
		for name, since := range old.stale {
			if _, back := ct.chains[name]; !back {
				ct.stale[name] = since
			}
		}
		for name := range old.chains {
			if _, still := ct.chains[name]; !still {
				if _, already := ct.stale[name]; !already {
					b.FlushChain(ref, name)
					ct.stale[name] = now
				}
			}
		}
		for name, since := range old.staleSets {
			if _, back := ct.affinity[name]; !back && !ct.isEndpointMap(name) {
				ct.staleSets[name] = since
			}
		}
		// Endpoint maps beyond the new count: unreferenced now, deleted later.
		for g := ct.endpointMaps; g < old.endpointMaps; g++ {
			name := endpointMap(fam, g).Name
			if _, already := ct.staleSets[name]; !already {
				b.FlushSet(ref, name)
				ct.staleSets[name] = now
			}
		}
		for name := range old.affinity {
			if _, still := ct.affinity[name]; !still {
				if _, already := ct.staleSets[name]; !already {
					ct.staleSets[name] = now
				}
			}
		}
	}
	return ct
}

func (ct *committedTable) isEndpointMap(name string) bool {
	var g int
	if _, err := fmt.Sscanf(name, endpointMapPrefix+"%d", &g); err != nil {
		return false
	}
	return g < ct.endpointMaps
}

// replaceableInPlace: chains whose rules always end in a verdict every packet reaching
// them takes (the endpoint choice), so new rules inserted in front replace the old.
func replaceableInPlace(chain string) bool {
	return strings.HasPrefix(chain, servicePrefix) || strings.HasPrefix(chain, localPrefix)
}

func chainSpec(name string) nft.ChainSpec {
	for _, c := range baseChains {
		if c.Name == name {
			return c
		}
	}
	return nft.ChainSpec{Name: name}
}

// partialSync regenerates the changed service ports and sends only what differs from
// the committed record: new and changed chains, element deletions and additions, and
// flushes of chains nothing references any more.
func (ct *committedTable) partialSync(b *nft.Batch, fam desired.Family, ports map[desired.ServicePortName]*desired.ServicePort, changed map[desired.ServicePortName]bool, now time.Time) {
	ref := tableRef(fam)
	names := make([]desired.ServicePortName, 0, len(changed))
	for n := range changed {
		names = append(names, n)
	}
	sortPortNames(names)

	var addChains []string
	var ruleChains []string
	var delElems, addElems []mapElem
	var goneChains []string
	var insertChains []string
	for _, name := range names {
		old := ct.ports[name]
		var pr *portRules
		if sp, ok := ports[name]; ok {
			pr = generatePort(sp, ct.clusterCIDRs, ct)
		}
		newChains := map[string][]nft.Rule{}
		if pr != nil {
			for _, c := range pr.chains {
				newChains[c.name] = c.rules
			}
			ct.ports[name] = pr
		} else {
			delete(ct.ports, name)
		}
		for cname, rules := range newChains {
			oldRules, exists := ct.chains[cname]
			_, wasStale := ct.stale[cname]
			switch {
			case !exists && !wasStale:
				addChains = append(addChains, cname)
				ruleChains = append(ruleChains, cname)
			case wasStale:
				delete(ct.stale, cname)
				ruleChains = append(ruleChains, cname) // flushed when it went stale
			case !reflect.DeepEqual(oldRules, rules) && replaceableInPlace(cname):
				// New rules go in front of the old ones, which are never reached again;
				// no flush now (a transaction that deletes waits in the kernel), the
				// old rules go with the next cleanup.
				insertChains = append(insertChains, cname)
				if _, already := ct.dirty[cname]; !already {
					ct.dirty[cname] = now
				}
			case !reflect.DeepEqual(oldRules, rules):
				b.FlushChain(ref, cname)
				delete(ct.dirty, cname)
				ruleChains = append(ruleChains, cname)
			}
			ct.chains[cname] = rules
		}
		if old != nil {
			for _, c := range old.chains {
				if _, still := newChains[c.name]; !still {
					goneChains = append(goneChains, c.name)
				}
			}
			for _, a := range old.affinity {
				ct.staleSets[a.Name] = now
				delete(ct.affinity, a.Name)
			}
		}
		if pr != nil {
			for _, a := range pr.affinity {
				if _, has := ct.affinity[a.Name]; !has {
					if _, stale := ct.staleSets[a.Name]; !stale {
						b.AddSet(ref, a)
					}
				}
				delete(ct.staleSets, a.Name)
				ct.affinity[a.Name] = a
			}
		}
		// Elements: compare by key against what this port owns.
		want := map[string]mapElem{}
		if pr != nil {
			for _, e := range pr.elems {
				want[e.key()] = e
			}
		}
		if old != nil {
			for _, oe := range old.elems {
				k := oe.key()
				if ct.owner[k] != old {
					continue
				}
				if w, ok := want[k]; ok && reflect.DeepEqual(w, oe) {
					delete(want, k)
					ct.owner[k] = pr
					continue
				}
				delete(ct.owner, k)
				if strings.HasPrefix(oe.set, endpointMapPrefix) {
					// An old endpoint range: no rule reaches it any more.
					ct.staleElems[k] = staleElement{oe, now}
					continue
				}
				delElems = append(delElems, oe)
			}
		}
		wantKeys := make([]string, 0, len(want))
		for k := range want {
			wantKeys = append(wantKeys, k)
		}
		sort.Strings(wantKeys)
		for _, k := range wantKeys {
			if _, taken := ct.owner[k]; taken {
				continue // another service port holds this address and port
			}
			ct.owner[k] = pr
			if se, pending := ct.staleElems[k]; pending {
				// Wanted again before its cleanup: keep it if unchanged.
				delete(ct.staleElems, k)
				if reflect.DeepEqual(se.elem, want[k]) {
					continue
				}
				delElems = append(delElems, se.elem)
			}
			addElems = append(addElems, want[k])
		}
	}
	sort.Strings(addChains)
	for _, c := range addChains {
		b.AddChain(ref, nft.ChainSpec{Name: c})
	}
	sort.Strings(ruleChains)
	for _, c := range ruleChains {
		for _, r := range ct.chains[c] {
			b.AddRule(ref, c, r...)
		}
	}
	sort.Strings(insertChains)
	for _, c := range insertChains {
		rules := ct.chains[c]
		for i := len(rules) - 1; i >= 0; i-- {
			b.InsertRule(ref, c, rules[i]...)
		}
	}
	deleteElements(b, ref, delElems)
	addElements(b, ref, addElems)
	sort.Strings(goneChains)
	for _, c := range goneChains {
		b.FlushChain(ref, c)
		delete(ct.chains, c)
		delete(ct.dirty, c)
		delete(ct.blocks, c)
		ct.stale[c] = now
	}
}

// deleteStale deletes chains and affinity sets that have been unreferenced for at
// least StaleChainDelay.
func (ct *committedTable) deleteStale(b *nft.Batch, ref nft.TableRef, now time.Time) {
	var chains, sets []string
	for c, since := range ct.stale {
		if now.Sub(since) >= StaleChainDelay {
			chains = append(chains, c)
		}
	}
	for s, since := range ct.staleSets {
		if now.Sub(since) >= StaleChainDelay {
			sets = append(sets, s)
		}
	}
	sort.Strings(chains)
	sort.Strings(sets)
	// Replaced rules and old endpoint ranges are unreachable garbage: removing them
	// costs a deleting transaction (a wait in the kernel), so it is done in bulk, once
	// there is much of it or some of it is old, rather than on every sync.
	// A replaced rule may still jump to a chain that is due for deletion: then the
	// garbage goes now, before the chain.
	collect := len(chains) > 0 || len(ct.dirty)+len(ct.staleElems) >= garbageMaxCount
	for _, since := range ct.dirty {
		collect = collect || now.Sub(since) >= garbageMaxAge
	}
	for _, se := range ct.staleElems {
		collect = collect || now.Sub(se.since) >= garbageMaxAge
	}
	var compact []string
	for c, since := range ct.dirty {
		if collect && now.Sub(since) >= StaleChainDelay {
			compact = append(compact, c)
		}
	}
	sort.Strings(compact)
	for _, c := range compact {
		// Drop the unreachable old rules: refill with the live ones.
		b.FlushChain(ref, c)
		for _, r := range ct.chains[c] {
			b.AddRule(ref, c, r...)
		}
		delete(ct.dirty, c)
	}
	var elems []mapElem
	for k, se := range ct.staleElems {
		if collect && now.Sub(se.since) >= StaleChainDelay {
			elems = append(elems, se.elem)
			delete(ct.staleElems, k)
		}
	}
	sort.Slice(elems, func(i, j int) bool { return elems[i].key() < elems[j].key() })
	deleteElements(b, ref, elems)
	for _, c := range chains {
		b.DeleteChain(ref, c)
		delete(ct.stale, c)
	}
	for _, s := range sets {
		b.DeleteSet(ref, s)
		delete(ct.staleSets, s)
	}
}

func sortedChainNames(m map[string][]nft.Rule) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// addElements groups elements by set (keeping order) into one operation per set.
func addElements(b *nft.Batch, ref nft.TableRef, elems []mapElem) {
	for _, g := range groupBySet(elems) {
		b.AddElements(ref, g.set, g.elems...)
	}
}

func deleteElements(b *nft.Batch, ref nft.TableRef, elems []mapElem) {
	for _, g := range groupBySet(elems) {
		b.DeleteElements(ref, g.set, g.elems...)
	}
}

type setGroup struct {
	set   string
	elems []nft.Element
}

func groupBySet(elems []mapElem) []setGroup {
	idx := map[string]int{}
	var out []setGroup
	counts := map[string]int{}
	for _, e := range elems {
		counts[e.set]++
	}
	for _, e := range elems {
		i, ok := idx[e.set]
		if !ok {
			i = len(out)
			idx[e.set] = i
			out = append(out, setGroup{set: e.set, elems: make([]nft.Element, 0, counts[e.set])})
		}
		out[i].elems = append(out[i].elems, e.elem)
	}
	return out
}

// fixedSetContent is what the node-level sets hold for one family.
func fixedSetContent(fam desired.Family, snap *desired.Snapshot) map[string]map[string]nft.Element {
	out := map[string]map[string]nft.Element{setServiceCIDRs: {}, setClusterCIDRs: {}, setNodePortIPs: {}}
	put := func(set string, p netip.Prefix) {
		e := nft.Element{Prefix: p.Masked()}
		out[set][nft.ElementKey(nft.SetSpec{Interval: true}, e)] = e
	}
	for _, p := range prefixesOf(snap.ServiceCIDRs, fam) {
		put(setServiceCIDRs, p)
	}
	for _, p := range prefixesOf(snap.ClusterCIDRs, fam) {
		put(setClusterCIDRs, p)
	}
	if len(snap.NodePortAddresses) > 0 {
		for _, p := range prefixesOf(snap.NodePortAddresses, fam) {
			put(setNodePortIPs, p)
		}
	} else {
		for _, a := range snap.NodeIPs {
			a = a.Unmap()
			if a.IsValid() && desired.FamilyOf(a) == fam && !a.IsLoopback() {
				put(setNodePortIPs, netip.PrefixFrom(a, a.BitLen()))
			}
		}
	}
	return out
}

// prefixesOf keeps the valid prefixes of one family, without overlaps (an interval set
// refuses overlapping ranges).
func prefixesOf(ps []netip.Prefix, fam desired.Family) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		if !p.IsValid() || desired.FamilyOf(p.Addr()) != fam {
			continue
		}
		p = p.Masked()
		covered := false
		for i, q := range out {
			if q.Overlaps(p) {
				if p.Bits() < q.Bits() {
					out[i] = p
				}
				covered = true
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

func (ct *committedTable) syncFixedSetsFull(b *nft.Batch, fam desired.Family, snap *desired.Snapshot) {
	ct.fixedElems = fixedSetContent(fam, snap)
	ref := tableRef(fam)
	for _, set := range []string{setServiceCIDRs, setClusterCIDRs, setNodePortIPs} {
		b.AddElements(ref, set, sortedElements(ct.fixedElems[set])...)
	}
}

// syncFixedSets updates node-level sets on a partial sync (node addresses change rarely
// but do change: a DHCP lease, an added address).
func (ct *committedTable) syncFixedSets(b *nft.Batch, fam desired.Family, snap *desired.Snapshot) {
	want := fixedSetContent(fam, snap)
	ref := tableRef(fam)
	for _, set := range []string{setServiceCIDRs, setClusterCIDRs, setNodePortIPs} {
		var del, add []nft.Element
		for k, e := range ct.fixedElems[set] {
			if _, ok := want[set][k]; !ok {
				del = append(del, e)
			}
		}
		for k, e := range want[set] {
			if _, ok := ct.fixedElems[set][k]; !ok {
				add = append(add, e)
			}
		}
		b.DeleteElements(ref, set, del...)
		b.AddElements(ref, set, add...)
	}
	ct.fixedElems = want
}

func sortedElements(m map[string]nft.Element) []nft.Element {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]nft.Element, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// Cleanup removes both tables; it succeeds when they do not exist.
func (s *Syncer) Cleanup(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tables = map[desired.Family]*committedTable{}
	if err := s.prog.DeleteTables(ctx, tableRef(desired.IPv4), tableRef(desired.IPv6)); err != nil {
		return fmt.Errorf("nftrules: removing tables: %w", err)
	}
	return nil
}
