package nft

import (
	"fmt"
)

// Model is an in-memory set of tables that applies batches with the kernel's rules:
// objects must exist before they are used, referenced chains and sets cannot be
// deleted, an element's data cannot change in place, and a failing batch changes
// nothing. Recorder and the packet simulator build on it.
type Model struct {
	Tables map[TableRef]*Table
}

// NewModel returns an empty model.
func NewModel() *Model { return &Model{Tables: map[TableRef]*Table{}} }

// Apply applies b atomically.
func (m *Model) Apply(b *Batch) error {
	work := make(map[TableRef]*Table, len(m.Tables))
	touched := map[TableRef]bool{}
	get := func(ref TableRef) *Table {
		if !touched[ref] {
			touched[ref] = true
			if t, ok := m.Tables[ref]; ok {
				work[ref] = t.clone()
			}
		}
		return work[ref]
	}
	for i, o := range b.ops {
		if err := applyOp(o, get, work); err != nil {
			return fmt.Errorf("batch operation %d of %d (%s): %w", i+1, len(b.ops), o.describe(), err)
		}
	}
	for ref := range touched {
		if t, ok := work[ref]; ok {
			m.Tables[ref] = t
		} else {
			delete(m.Tables, ref)
		}
	}
	return nil
}

func applyOp(o op, get func(TableRef) *Table, work map[TableRef]*Table) error {
	t := get(o.table)
	switch o.kind {
	case opAddTable:
		if t == nil {
			work[o.table] = NewTable(o.table)
		}
		return nil
	case opDeleteTable:
		if t == nil {
			return errNotFound("table")
		}
		delete(work, o.table)
		return nil
	}
	if t == nil {
		return errNotFound("table")
	}
	switch o.kind {
	case opAddChain:
		if c, ok := t.Chains[o.name]; ok {
			if !sameBase(c.Base, o.chain.Base) {
				return fmt.Errorf("chain exists with another hook or priority")
			}
			return nil
		}
		t.Chains[o.name] = &Chain{ChainSpec: o.chain}
	case opFlushChain:
		c, ok := t.Chains[o.name]
		if !ok {
			return errNotFound("chain")
		}
		c.Rules = nil
	case opDeleteChain:
		if _, ok := t.Chains[o.name]; !ok {
			return errNotFound("chain")
		}
		if by := t.chainReferrer(o.name); by != "" {
			return fmt.Errorf("chain is still referenced by %s (EBUSY)", by)
		}
		delete(t.Chains, o.name)
	case opAddRule, opInsertRule:
		c, ok := t.Chains[o.name]
		if !ok {
			return errNotFound("chain")
		}
		if err := t.checkRule(o.rule); err != nil {
			return err
		}
		if o.kind == opInsertRule {
			c.Rules = append([]Rule{o.rule}, c.Rules...)
		} else {
			c.Rules = append(c.Rules, o.rule)
		}
	case opAddSet:
		if s, ok := t.Sets[o.name]; ok {
			if !sameSetSpec(s.SetSpec, o.set) {
				return fmt.Errorf("set exists with another type or flags")
			}
			return nil
		}
		if len(o.set.Key) == 0 {
			return fmt.Errorf("set has no key type")
		}
		if o.set.Interval && len(o.set.Key) != 1 {
			return fmt.Errorf("interval sets take a single address key")
		}
		t.Sets[o.name] = &Set{SetSpec: o.set, Elements: map[string]Element{}}
	case opFlushSet:
		s, ok := t.Sets[o.name]
		if !ok {
			return errNotFound("set")
		}
		s.Elements = map[string]Element{}
	case opDeleteSet:
		if _, ok := t.Sets[o.name]; !ok {
			return errNotFound("set")
		}
		if by := t.setReferrer(o.name); by != "" {
			return fmt.Errorf("set is still referenced by %s (EBUSY)", by)
		}
		delete(t.Sets, o.name)
	case opAddElements:
		s, ok := t.Sets[o.name]
		if !ok {
			return errNotFound("set")
		}
		for _, e := range o.elems {
			if err := t.checkElement(s.SetSpec, e); err != nil {
				return fmt.Errorf("element %s: %w", elementText(s.SetSpec, e), err)
			}
			k := ElementKey(s.SetSpec, e)
			if old, ok := s.Elements[k]; ok && (!sameVerdict(old.Verdict, e.Verdict) || !sameValues(old.Data, e.Data)) {
				return fmt.Errorf("element %s exists with other data: %s (EEXIST)", k, elementText(s.SetSpec, old))
			}
			s.Elements[k] = e
		}
	case opDeleteElements:
		s, ok := t.Sets[o.name]
		if !ok {
			return errNotFound("set")
		}
		for _, e := range o.elems {
			k := ElementKey(s.SetSpec, e)
			if _, ok := s.Elements[k]; !ok {
				return fmt.Errorf("element %s: %w", k, errNotFound("element"))
			}
			delete(s.Elements, k)
		}
	default:
		return fmt.Errorf("unknown operation %d", o.kind)
	}
	return nil
}

func errNotFound(what string) error { return fmt.Errorf("%s does not exist (ENOENT)", what) }

func sameBase(a, b *BaseChain) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func sameSetSpec(a, b SetSpec) bool {
	if len(a.Key) != len(b.Key) {
		return false
	}
	for i := range a.Key {
		if a.Key[i] != b.Key[i] {
			return false
		}
	}
	if len(a.Data) != len(b.Data) {
		return false
	}
	for i := range a.Data {
		if a.Data[i] != b.Data[i] {
			return false
		}
	}
	return a.Name == b.Name && a.IsMap == b.IsMap && a.Interval == b.Interval && a.Dynamic == b.Dynamic && a.Timeout == b.Timeout
}

func sameValues(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameVerdict(a, b *Verdict) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func (t *Table) checkVerdict(v Verdict) error {
	if v.Kind == VerdictJump || v.Kind == VerdictGoto {
		if _, ok := t.Chains[v.Chain]; !ok {
			return fmt.Errorf("%s: %w", v, errNotFound("chain "+v.Chain))
		}
	}
	return nil
}

func (t *Table) checkRule(r Rule) error {
	for _, e := range r {
		switch e := e.(type) {
		case Verdict:
			if err := t.checkVerdict(e); err != nil {
				return err
			}
		case NumgenVMap:
			if len(e.Targets) == 0 {
				return fmt.Errorf("numgen vmap without targets")
			}
			for _, v := range e.Targets {
				if err := t.checkVerdict(v); err != nil {
					return err
				}
			}
		case Lookup:
			if err := t.checkSetUse(e.Set, e.Fields, false); err != nil {
				return err
			}
		case VMap:
			if err := t.checkSetUse(e.Map, e.Fields, true); err != nil {
				return err
			}
		case NumgenDNAT:
			s, ok := t.Sets[e.Map]
			if !ok {
				return errNotFound("map " + e.Map)
			}
			if len(s.Data) != 2 || len(s.Key) != 1 || s.Key[0] != TypeMark {
				return fmt.Errorf("map %s is not mark : address . inet_service", e.Map)
			}
			if e.Mod == 0 {
				return fmt.Errorf("numgen modulus 0")
			}
		case UpdateSet:
			s, ok := t.Sets[e.Set]
			if !ok {
				return errNotFound("set " + e.Set)
			}
			if !s.Dynamic {
				return fmt.Errorf("set %s is not dynamic", e.Set)
			}
			if err := t.checkSetUse(e.Set, []Field{e.Field}, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *Table) checkSetUse(name string, fields []Field, isMap bool) error {
	s, ok := t.Sets[name]
	if !ok {
		return errNotFound("set " + name)
	}
	if s.IsMap != isMap {
		return fmt.Errorf("set %s: map flag is %v, rule wants %v", name, s.IsMap, isMap)
	}
	if len(fields) != len(s.Key) {
		return fmt.Errorf("set %s has %d key parts, rule gives %d", name, len(s.Key), len(fields))
	}
	for i, f := range fields {
		if f.Type(t.Ref.Family) != s.Key[i] {
			return fmt.Errorf("set %s key part %d is %s, rule gives %s", name, i, s.Key[i], f.Type(t.Ref.Family))
		}
	}
	return nil
}

func (t *Table) checkElement(spec SetSpec, e Element) error {
	if spec.Interval {
		if !e.Prefix.IsValid() {
			return fmt.Errorf("interval set element without a prefix")
		}
		if (spec.Key[0] == TypeIPv4Addr) != e.Prefix.Addr().Is4() {
			return fmt.Errorf("prefix %s is not %s", e.Prefix, spec.Key[0])
		}
	} else {
		if len(e.Key) != len(spec.Key) {
			return fmt.Errorf("key has %d parts, set has %d", len(e.Key), len(spec.Key))
		}
		for i, kt := range spec.Key {
			if kt == TypeIPv4Addr && !e.Key[i].Addr.Is4() || kt == TypeIPv6Addr && !e.Key[i].Addr.Is6() {
				return fmt.Errorf("key part %d is not %s", i, kt)
			}
		}
	}
	if len(spec.Data) > 0 {
		if e.Verdict != nil || len(e.Data) != len(spec.Data) {
			return fmt.Errorf("data does not match the map's %d data parts", len(spec.Data))
		}
		return nil
	}
	if spec.IsMap != (e.Verdict != nil) || len(e.Data) > 0 {
		return fmt.Errorf("data does not match the set (map: %v)", spec.IsMap)
	}
	if e.Verdict != nil {
		return t.checkVerdict(*e.Verdict)
	}
	return nil
}

// chainReferrer names a rule or map element that jumps to chain, or "".
func (t *Table) chainReferrer(chain string) string {
	for _, c := range t.Chains {
		for _, r := range c.Rules {
			for _, e := range r {
				switch e := e.(type) {
				case Verdict:
					if e.Chain == chain {
						return "a rule in chain " + c.Name
					}
				case NumgenVMap:
					for _, v := range e.Targets {
						if v.Chain == chain {
							return "a rule in chain " + c.Name
						}
					}
				}
			}
		}
	}
	for _, s := range t.Sets {
		for k, e := range s.Elements {
			if e.Verdict != nil && e.Verdict.Chain == chain {
				return fmt.Sprintf("element %s of map %s", k, s.Name)
			}
		}
	}
	return ""
}

func (t *Table) setReferrer(set string) string {
	for _, c := range t.Chains {
		for _, r := range c.Rules {
			for _, e := range r {
				switch e := e.(type) {
				case Lookup:
					if e.Set == set {
						return "a rule in chain " + c.Name
					}
				case VMap:
					if e.Map == set {
						return "a rule in chain " + c.Name
					}
				case UpdateSet:
					if e.Set == set {
						return "a rule in chain " + c.Name
					}
				case NumgenDNAT:
					if e.Map == set {
						return "a rule in chain " + c.Name
					}
				}
			}
		}
	}
	return ""
}
