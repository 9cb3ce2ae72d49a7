package nft

import (
	"context"
	"fmt"
	"strings"
)

// Programmer applies batches to nftables and reads tables back.
type Programmer interface {
	// Apply applies every operation of b as one atomic transaction: all or nothing.
	Apply(ctx context.Context, b *Batch) error
	// List reads a table back; ok is false when the table does not exist.
	List(ctx context.Context, ref TableRef) (t *Table, ok bool, err error)
	// DeleteTables removes the tables that exist among refs in one transaction and
	// succeeds when none does.
	DeleteTables(ctx context.Context, refs ...TableRef) error
}

type opKind uint8

const (
	opAddTable opKind = iota + 1
	opDeleteTable
	opAddChain
	opFlushChain
	opDeleteChain
	opAddRule
	opInsertRule
	opAddSet
	opFlushSet
	opDeleteSet
	opAddElements
	opDeleteElements
)

type op struct {
	kind  opKind
	table TableRef
	chain ChainSpec // opAddChain
	name  string    // chain or set name for the other ops
	rule  Rule
	set   SetSpec
	elems []Element
}

// Batch is an ordered list of operations applied as one transaction. Operations on
// several tables may share a batch.
type Batch struct {
	ops []op
}

func (b *Batch) AddTable(t TableRef)    { b.ops = append(b.ops, op{kind: opAddTable, table: t}) }
func (b *Batch) DeleteTable(t TableRef) { b.ops = append(b.ops, op{kind: opDeleteTable, table: t}) }

// AddChain creates the chain unless it exists (with the same base spec).
func (b *Batch) AddChain(t TableRef, c ChainSpec) {
	b.ops = append(b.ops, op{kind: opAddChain, table: t, chain: c, name: c.Name})
}
func (b *Batch) FlushChain(t TableRef, name string) {
	b.ops = append(b.ops, op{kind: opFlushChain, table: t, name: name})
}
func (b *Batch) DeleteChain(t TableRef, name string) {
	b.ops = append(b.ops, op{kind: opDeleteChain, table: t, name: name})
}

// AddRule appends a rule to a chain.
func (b *Batch) AddRule(t TableRef, chain string, exprs ...Expr) {
	b.ops = append(b.ops, op{kind: opAddRule, table: t, name: chain, rule: Rule(exprs)})
}

// InsertRule puts a rule first in a chain. A chain whose new rules, inserted in
// reverse order, end in a verdict every packet takes, replaces its old rules without
// deleting them: they are never reached again and can go later.
func (b *Batch) InsertRule(t TableRef, chain string, exprs ...Expr) {
	b.ops = append(b.ops, op{kind: opInsertRule, table: t, name: chain, rule: Rule(exprs)})
}

// AddSet creates the set unless it exists (with the same spec).
func (b *Batch) AddSet(t TableRef, s SetSpec) {
	b.ops = append(b.ops, op{kind: opAddSet, table: t, set: s, name: s.Name})
}
func (b *Batch) FlushSet(t TableRef, name string) {
	b.ops = append(b.ops, op{kind: opFlushSet, table: t, name: name})
}
func (b *Batch) DeleteSet(t TableRef, name string) {
	b.ops = append(b.ops, op{kind: opDeleteSet, table: t, name: name})
}

// AddElements adds elements to a set or map; an element whose key exists must carry
// the same data.
func (b *Batch) AddElements(t TableRef, set string, elems ...Element) {
	if len(elems) > 0 {
		b.ops = append(b.ops, op{kind: opAddElements, table: t, name: set, elems: elems})
	}
}

// DeleteElements removes elements, which must exist, by key.
func (b *Batch) DeleteElements(t TableRef, set string, elems ...Element) {
	if len(elems) > 0 {
		b.ops = append(b.ops, op{kind: opDeleteElements, table: t, name: set, elems: elems})
	}
}

// sizeHint estimates the encoded size, so the buffer rarely grows.
func (b *Batch) sizeHint() int {
	n := 4 << 10
	for _, o := range b.ops {
		n += 128 + 64*len(o.elems) + 96*len(o.rule)
	}
	return n
}

// Len is the number of operations.
func (b *Batch) Len() int { return len(b.ops) }

// Empty reports whether the batch has no operations.
func (b *Batch) Empty() bool { return len(b.ops) == 0 }

// describe names an operation for errors.
func (o op) describe() string {
	switch o.kind {
	case opAddTable:
		return "add table " + o.table.String()
	case opDeleteTable:
		return "delete table " + o.table.String()
	case opAddChain:
		return fmt.Sprintf("add chain %s %s", o.table, o.name)
	case opFlushChain:
		return fmt.Sprintf("flush chain %s %s", o.table, o.name)
	case opDeleteChain:
		return fmt.Sprintf("delete chain %s %s", o.table, o.name)
	case opAddRule:
		return fmt.Sprintf("add rule %s %s %s", o.table, o.name, RuleText(o.table.Family, o.rule))
	case opInsertRule:
		return fmt.Sprintf("insert rule %s %s %s", o.table, o.name, RuleText(o.table.Family, o.rule))
	case opAddSet:
		return fmt.Sprintf("add set %s %s", o.table, o.name)
	case opFlushSet:
		return fmt.Sprintf("flush set %s %s", o.table, o.name)
	case opDeleteSet:
		return fmt.Sprintf("delete set %s %s", o.table, o.name)
	case opAddElements, opDeleteElements:
		verb := "add"
		if o.kind == opDeleteElements {
			verb = "delete"
		}
		first := ""
		if len(o.elems) > 0 {
			first = ", first " + elementText(o.set, o.elems[0])
		}
		return fmt.Sprintf("%s %d elements to set %s %s%s", verb, len(o.elems), o.table, o.name, first)
	}
	return fmt.Sprintf("op(%d)", o.kind)
}

// Ops renders the batch as nft-style commands, one per line (for logs and tests).
func (b *Batch) Ops() []string {
	out := make([]string, len(b.ops))
	for i, o := range b.ops {
		out[i] = o.describe()
	}
	return out
}

func elementText(spec SetSpec, e Element) string {
	k := ElementKey(spec, e)
	if e.Verdict != nil {
		return k + " : " + e.Verdict.String()
	}
	if len(e.Data) > 0 {
		parts := make([]string, len(e.Data))
		for i, v := range e.Data {
			t := TypeInteger
			if i < len(spec.Data) {
				t = spec.Data[i]
			} else if v.Addr.IsValid() {
				t = TypeIPv6Addr
			}
			parts[i] = formatValue(t, v)
		}
		return k + " : " + strings.Join(parts, " . ")
	}
	return k
}
