//go:build linux

package nft

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"

	gnft "github.com/google/nftables"
)

// Netlink is the kernel Programmer: it speaks nftables netlink through
// github.com/google/nftables in one network namespace.
type Netlink struct {
	netnsPath string // "" for the caller's namespace
}

// NewNetlink returns a Programmer for the network namespace at netnsPath (for example
// /run/netns/NAME), or for the calling process's namespace when netnsPath is "".
func NewNetlink(netnsPath string) *Netlink { return &Netlink{netnsPath: netnsPath} }

func (n *Netlink) conn(lasting bool) (*gnft.Conn, func(), error) {
	var opts []gnft.ConnOption
	closeNS := func() {}
	if n.netnsPath != "" {
		f, err := os.Open(n.netnsPath)
		if err != nil {
			return nil, nil, fmt.Errorf("opening network namespace: %w", err)
		}
		opts = append(opts, gnft.WithNetNSFd(int(f.Fd())))
		closeNS = func() { f.Close() }
	}
	if lasting {
		opts = append(opts, gnft.AsLasting())
	}
	c, err := gnft.New(opts...)
	if err != nil {
		closeNS()
		return nil, nil, fmt.Errorf("opening nftables netlink socket: %w", err)
	}
	return c, func() {
		if lasting {
			_ = c.CloseLasting()
		}
		closeNS()
	}, nil
}

// Apply queues every operation and sends them as one batch: the kernel commits all of
// them or none. google/nftables splits large element lists over several messages and
// sizes the socket buffers to the batch, so tens of thousands of services fit in one
// transaction.
func (n *Netlink) Apply(ctx context.Context, b *Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	c, done, err := n.conn(false)
	if err != nil {
		return err
	}
	defer done()
	tables := map[TableRef]*gnft.Table{}
	table := func(ref TableRef) *gnft.Table {
		if t, ok := tables[ref]; ok {
			return t
		}
		t := &gnft.Table{Name: ref.Name, Family: gnft.TableFamily(ref.Family)}
		tables[ref] = t
		return t
	}
	// Element ops need each set's spec to encode keys: from AddSet in this batch, or
	// learned from the kernel for sets created earlier.
	specs := map[TableRef]map[string]SetSpec{}
	specOf := func(ref TableRef, name string) (SetSpec, error) {
		if s, ok := specs[ref][name]; ok {
			return s, nil
		}
		return SetSpec{}, fmt.Errorf("set %s %s: its type is unknown to this batch (add the set in the same batch)", ref, name)
	}
	for i, o := range b.ops {
		if err := n.queue(c, table(o.table), o, specs, specOf); err != nil {
			return fmt.Errorf("nftables batch operation %d of %d (%s): %w", i+1, len(b.ops), o.describe(), err)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables transaction of %d operations (first: %s) failed, nothing applied: %w", len(b.ops), b.ops[0].describe(), err)
	}
	return nil
}

func (n *Netlink) queue(c *gnft.Conn, t *gnft.Table, o op, specs map[TableRef]map[string]SetSpec, specOf func(TableRef, string) (SetSpec, error)) error {
	switch o.kind {
	case opAddTable:
		c.AddTable(t)
	case opDeleteTable:
		c.DelTable(t)
	case opAddChain:
		ch := &gnft.Chain{Name: o.chain.Name, Table: t}
		if bc := o.chain.Base; bc != nil {
			hook := gnft.ChainHook(bc.Hook)
			prio := gnft.ChainPriority(bc.Priority)
			policy := gnft.ChainPolicyAccept
			ch.Hooknum, ch.Priority, ch.Type, ch.Policy = &hook, &prio, gnft.ChainType(bc.Type), &policy
		}
		c.AddChain(ch)
	case opFlushChain:
		c.FlushChain(&gnft.Chain{Name: o.name, Table: t})
	case opDeleteChain:
		c.DelChain(&gnft.Chain{Name: o.name, Table: t})
	case opAddRule:
		exprs, err := compileRule(o.table.Family, o.rule, func(elems []gnft.SetElement) (*gnft.Set, error) {
			s := &gnft.Set{Table: t, Anonymous: true, Constant: true, IsMap: true,
				KeyType: gnft.TypeInteger, DataType: gnft.TypeVerdict, KeyByteOrder: nativeEndian()}
			return s, c.AddSet(s, elems)
		})
		if err != nil {
			return err
		}
		c.AddRule(&gnft.Rule{Table: t, Chain: &gnft.Chain{Name: o.name, Table: t}, Exprs: exprs})
	case opAddSet:
		s, err := gnftSet(t, o.set)
		if err != nil {
			return err
		}
		if err := c.AddSet(s, nil); err != nil {
			return err
		}
		if specs[o.table] == nil {
			specs[o.table] = map[string]SetSpec{}
		}
		specs[o.table][o.name] = o.set
	case opFlushSet:
		c.FlushSet(&gnft.Set{Table: t, Name: o.name})
	case opDeleteSet:
		c.DelSet(&gnft.Set{Table: t, Name: o.name})
	case opAddElements, opDeleteElements:
		spec, err := specOf(o.table, o.name)
		if err != nil {
			return err
		}
		elems, err := gnftElements(spec, o.elems)
		if err != nil {
			return err
		}
		s, err := gnftSet(t, spec)
		if err != nil {
			return err
		}
		if o.kind == opAddElements {
			return c.SetAddElements(s, elems)
		}
		return c.SetDeleteElements(s, elems)
	default:
		return fmt.Errorf("unknown operation %d", o.kind)
	}
	return nil
}

// List reads the table back: chains with their rules, sets and maps with their
// elements (anonymous maps folded back into the rules that use them).
func (n *Netlink) List(ctx context.Context, ref TableRef) (*Table, bool, error) {
	c, done, err := n.conn(true)
	if err != nil {
		return nil, false, err
	}
	defer done()
	tables, err := c.ListTablesOfFamily(gnft.TableFamily(ref.Family))
	if err != nil {
		return nil, false, fmt.Errorf("listing %s tables: %w", ref.Family, err)
	}
	var gt *gnft.Table
	for _, t := range tables {
		if t.Name == ref.Name {
			gt = t
		}
	}
	if gt == nil {
		return nil, false, nil
	}
	out := NewTable(ref)
	sets, err := c.GetSets(gt)
	if err != nil {
		return nil, false, fmt.Errorf("listing sets of table %s: %w", ref, err)
	}
	anon := map[string][]gnft.SetElement{}
	for _, s := range sets {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		elems, err := c.GetSetElements(s)
		if err != nil {
			return nil, false, fmt.Errorf("listing elements of set %s in table %s: %w", s.Name, ref, err)
		}
		if s.Anonymous {
			anon[s.Name] = elems
			continue
		}
		spec, err := decodeSetSpec(s)
		if err != nil {
			return nil, false, fmt.Errorf("table %s: %w", ref, err)
		}
		set := &Set{SetSpec: spec, Elements: map[string]Element{}}
		decoded, err := decodeElements(spec, elems)
		if err != nil {
			return nil, false, fmt.Errorf("table %s set %s: %w", ref, s.Name, err)
		}
		for _, e := range decoded {
			set.Elements[ElementKey(spec, e)] = e
		}
		out.Sets[s.Name] = set
	}
	chains, err := c.ListChainsOfTableFamily(gnft.TableFamily(ref.Family))
	if err != nil {
		return nil, false, fmt.Errorf("listing chains of table %s: %w", ref, err)
	}
	for _, ch := range chains {
		if ch.Table.Name != ref.Name {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		spec := ChainSpec{Name: ch.Name}
		if ch.Hooknum != nil && ch.Priority != nil {
			spec.Base = &BaseChain{Type: ChainType(ch.Type), Hook: Hook(*ch.Hooknum), Priority: int32(*ch.Priority)}
		}
		rules, err := c.GetRules(gt, ch)
		if err != nil {
			return nil, false, fmt.Errorf("listing rules of chain %s in table %s: %w", ch.Name, ref, err)
		}
		chain := &Chain{ChainSpec: spec}
		for _, r := range rules {
			ir, err := decodeRule(ref.Family, r.Exprs, anon)
			if err != nil {
				return nil, false, fmt.Errorf("table %s chain %s rule handle %d: %w", ref, ch.Name, r.Handle, err)
			}
			chain.Rules = append(chain.Rules, ir)
		}
		out.Chains[ch.Name] = chain
	}
	return out, true, nil
}

// DeleteTables removes the given tables in one transaction; tables that do not exist
// are skipped, so it succeeds on a clean system.
func (n *Netlink) DeleteTables(ctx context.Context, refs ...TableRef) error {
	c, done, err := n.conn(true)
	if err != nil {
		return err
	}
	existing := map[TableRef]bool{}
	for _, fam := range uniqueFamilies(refs) {
		ts, err := c.ListTablesOfFamily(gnft.TableFamily(fam))
		if err != nil {
			done()
			return fmt.Errorf("listing %s tables: %w", fam, err)
		}
		for _, t := range ts {
			existing[TableRef{Family: fam, Name: t.Name}] = true
		}
	}
	done()
	var b Batch
	for _, ref := range refs {
		if existing[ref] {
			b.DeleteTable(ref)
		}
	}
	err = n.Apply(ctx, &b)
	if errors.Is(err, syscall.ENOENT) {
		// Removed by someone else between listing and deleting.
		return nil
	}
	return err
}

func uniqueFamilies(refs []TableRef) []Family {
	seen := map[Family]bool{}
	var out []Family
	for _, r := range refs {
		if !seen[r.Family] {
			seen[r.Family] = true
			out = append(out, r.Family)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
