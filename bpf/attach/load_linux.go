package attach

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// Set is a loaded collection whose programs are attached. Close detaches and frees it.
type Set struct {
	// Collection holds the maps and the programs of the chosen variant.
	Collection *ebpf.Collection
	// Mode is the variant that was loaded: BTF or Tracepoints, never Auto.
	Mode  Mode
	links []link.Link
}

// Map returns the named map of the collection, or an error naming it when missing.
func (s *Set) Map(name string) (*ebpf.Map, error) {
	m := s.Collection.Maps[name]
	if m == nil {
		return nil, fmt.Errorf("BPF collection has no map %q", name)
	}
	return m, nil
}

// Close detaches every program and frees the collection. Safe to call twice.
func (s *Set) Close() error {
	var errs []error
	for _, l := range s.links {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.links = nil
	if s.Collection != nil {
		s.Collection.Close()
		s.Collection = nil
	}
	return errors.Join(errs...)
}

// Load loads the variant of spec's programs that mode asks for, with all of spec's
// maps, and attaches each program to the tracepoint its ELF section names
// ("tp_btf/NAME" or "tracepoint/GROUP/NAME"). Set global constants on spec before.
// In Auto mode it tries the tp_btf programs first when the kernel has BTF, and falls
// back to plain tracepoints when the kernel refuses them (for example because a
// tracepoint's arguments changed), logging why.
func Load(spec *ebpf.CollectionSpec, mode Mode, log *slog.Logger) (*Set, error) {
	// A no-op from 5.11 on, where BPF memory is charged to the memory cgroup.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raise RLIMIT_MEMLOCK for BPF maps: %w", err)
	}
	switch mode {
	case BTF, Tracepoints:
		return loadVariant(spec, mode)
	case Auto:
	default:
		return nil, fmt.Errorf("BPF attach mode %v: want auto, tp_btf or tracepoint", mode)
	}

	if _, err := btf.LoadKernelSpec(); err != nil {
		log.Info("kernel has no BTF; using plain tracepoints", "error", err)
		return loadVariant(spec, Tracepoints)
	}
	set, btfErr := loadVariant(spec, BTF)
	if btfErr == nil {
		return set, nil
	}
	set, tpErr := loadVariant(spec, Tracepoints)
	if tpErr != nil {
		return nil, errors.Join(btfErr, tpErr)
	}
	log.Warn("tp_btf programs refused; using plain tracepoints", "error", btfErr)
	return set, nil
}

func loadVariant(spec *ebpf.CollectionSpec, mode Mode) (*Set, error) {
	want := ebpf.Tracing
	if mode == Tracepoints {
		want = ebpf.TracePoint
		if err := EnsureTracefs(); err != nil {
			return nil, err
		}
	}
	spec = spec.Copy()
	for name, p := range spec.Programs {
		if p.Type != want {
			delete(spec.Programs, name)
		}
	}
	if len(spec.Programs) == 0 {
		return nil, fmt.Errorf("BPF object has no %s programs", mode)
	}

	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load %s programs: %w", mode, err)
	}
	set := &Set{Collection: coll, Mode: mode}
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		l, err := attachProgram(coll.Programs[name], spec.Programs[name].SectionName)
		if err != nil {
			set.Close()
			return nil, fmt.Errorf("attach %s program %s: %w", mode, name, err)
		}
		set.links = append(set.links, l)
	}
	return set, nil
}

func attachProgram(prog *ebpf.Program, section string) (link.Link, error) {
	kind, target, _ := strings.Cut(section, "/")
	switch kind {
	case "tp_btf":
		return link.AttachTracing(link.TracingOptions{Program: prog})
	case "tracepoint", "tp":
		group, name, ok := strings.Cut(target, "/")
		if !ok {
			return nil, fmt.Errorf("section %q: want tracepoint/GROUP/NAME", section)
		}
		return link.Tracepoint(group, name, prog, nil)
	}
	return nil, fmt.Errorf("section %q: want tp_btf/NAME or tracepoint/GROUP/NAME", section)
}
