package nft

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// String renders the table as `nft list table` does (chains and sets sorted by name,
// elements sorted by key, one per line), so generated and live tables compare as text.
func (t *Table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table %s {\n", t.Ref)
	first := true
	sep := func() {
		if !first {
			b.WriteString("\n")
		}
		first = false
	}
	for _, name := range sortedKeys(t.Sets) {
		sep()
		writeSet(&b, t.Sets[name])
	}
	for _, name := range sortedKeys(t.Chains) {
		sep()
		c := t.Chains[name]
		fmt.Fprintf(&b, "\tchain %s {\n", c.Name)
		if c.Base != nil {
			fmt.Fprintf(&b, "\t\ttype %s hook %s priority %s; policy accept;\n", c.Base.Type, c.Base.Hook, priorityText(c.Base.Priority))
		}
		for _, r := range c.Rules {
			fmt.Fprintf(&b, "\t\t%s\n", RuleText(t.Ref.Family, r))
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func writeSet(b *strings.Builder, s *Set) {
	kind := "set"
	if s.IsMap {
		kind = "map"
	}
	fmt.Fprintf(b, "\t%s %s {\n", kind, s.Name)
	keys := make([]string, len(s.Key))
	for i, k := range s.Key {
		keys[i] = k.String()
	}
	typ := strings.Join(keys, " . ")
	switch {
	case len(s.Data) > 0:
		data := make([]string, len(s.Data))
		for i, d := range s.Data {
			data[i] = d.String()
		}
		typ += " : " + strings.Join(data, " . ")
	case s.IsMap:
		typ += " : verdict"
	}
	fmt.Fprintf(b, "\t\ttype %s\n", typ)
	var flags []string
	if s.Interval {
		flags = append(flags, "interval")
	}
	if s.Dynamic {
		flags = append(flags, "dynamic")
	}
	if s.Timeout > 0 {
		flags = append(flags, "timeout")
	}
	if len(flags) > 0 {
		fmt.Fprintf(b, "\t\tflags %s\n", strings.Join(flags, ","))
	}
	if s.Timeout > 0 {
		fmt.Fprintf(b, "\t\ttimeout %s\n", durationText(s.Timeout))
	}
	// Dynamic sets are filled by the packet path; their content is state, not rules.
	if len(s.Elements) > 0 && !s.Dynamic {
		elems := make([]string, 0, len(s.Elements))
		for _, e := range s.Elements {
			elems = append(elems, elementText(s.SetSpec, e))
		}
		sort.Strings(elems)
		b.WriteString("\t\telements = {\n")
		for _, e := range elems {
			fmt.Fprintf(b, "\t\t\t%s,\n", e)
		}
		b.WriteString("\t\t}\n")
	}
	b.WriteString("\t}\n")
}

// durationText prints a timeout as nft does: 3h, 10s, 1h30m.
func durationText(d time.Duration) string {
	s := int64(d / time.Second)
	var out string
	for _, u := range []struct {
		n    int64
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}} {
		if s >= u.n {
			out += fmt.Sprintf("%d%s", s/u.n, u.name)
			s %= u.n
		}
	}
	if out == "" {
		return "0s"
	}
	return out
}

func priorityText(p int32) string {
	named := []struct {
		p    int32
		name string
	}{{-300, "raw"}, {-150, "mangle"}, {-100, "dstnat"}, {0, "filter"}, {100, "srcnat"}}
	best := named[0]
	for _, n := range named {
		if abs(p-n.p) < abs(p-best.p) {
			best = n
		}
	}
	switch d := p - best.p; {
	case d == 0:
		return best.name
	case d > 0:
		return fmt.Sprintf("%s + %d", best.name, d)
	default:
		return fmt.Sprintf("%s - %d", best.name, -d)
	}
}

func abs(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
