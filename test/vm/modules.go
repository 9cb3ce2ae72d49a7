package vm

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// moduleIndex is a kernel's modules.dep (and modules.builtin): for each loadable module,
// its path relative to lib/modules/<release> and the paths it depends on.
type moduleIndex struct {
	paths   map[string]string   // module name → relative path
	deps    map[string][]string // relative path → relative paths of its dependencies
	builtin map[string]bool     // module names built into the kernel image
}

// moduleName is the name modprobe uses for a path: the base name without .ko[.xz],
// with dashes read as underscores, as the kernel does.
func moduleName(p string) string {
	base := path.Base(p)
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".xz"), ".ko")
	return strings.ReplaceAll(base, "-", "_")
}

// parseModuleIndex reads modules.dep and modules.builtin.
func parseModuleIndex(dep, builtin io.Reader) (*moduleIndex, error) {
	idx := &moduleIndex{paths: map[string]string{}, deps: map[string][]string{}, builtin: map[string]bool{}}
	sc := bufio.NewScanner(dep)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		mod, deps, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("modules.dep line %d: no colon in %q", n, line)
		}
		idx.paths[moduleName(mod)] = mod
		idx.deps[mod] = strings.Fields(deps)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if builtin != nil {
		sc = bufio.NewScanner(builtin)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				idx.builtin[moduleName(line)] = true
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

// loadOrder returns the relative paths to insmod, dependencies first, each once, for the
// named modules. Built-in modules need nothing; a name that is neither is an error.
func (idx *moduleIndex) loadOrder(names ...string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(p string, chain []string) error
	visit = func(p string, chain []string) error {
		if seen[p] {
			return nil
		}
		for _, c := range chain {
			if c == p {
				return fmt.Errorf("module dependency cycle: %s", strings.Join(append(chain, p), " -> "))
			}
		}
		for _, d := range idx.deps[p] {
			if err := visit(d, append(chain, p)); err != nil {
				return err
			}
		}
		seen[p] = true
		order = append(order, p)
		return nil
	}
	for _, name := range names {
		name = strings.ReplaceAll(name, "-", "_")
		p, ok := idx.paths[name]
		if !ok {
			if idx.builtin[name] {
				continue
			}
			return nil, fmt.Errorf("module %s: neither in modules.dep nor built in", name)
		}
		if err := visit(p, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}
