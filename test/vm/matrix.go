package vm

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// KernelRun is everything one kernel's VM produced.
type KernelRun struct {
	Kernel   Kernel
	Seconds  int    // wall time of the VM, boot to power-off
	Problem  string // the VM did not finish (qemu failed, timed out)
	Packages []PackageResult
}

// Matrix is a whole run: every kernel × package.
type Matrix struct {
	Runs []KernelRun
}

// Totals adds up every kernel's packages.
func (m Matrix) Totals() (pass, fail, skip int) {
	for _, r := range m.Runs {
		if r.Problem != "" {
			fail++
		}
		for _, p := range r.Packages {
			a, b, c := p.Counts()
			pass, fail, skip = pass+a, fail+b, skip+c
		}
	}
	return pass, fail, skip
}

// Markdown renders the matrix: one row per package and a column per kernel, then the
// skipped tests with the kernel feature they named, then the failures.
func (m Matrix) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| package |")
	for _, r := range m.Runs {
		fmt.Fprintf(&b, " %s |", r.Kernel.Label())
	}
	b.WriteString("\n| --- |")
	for range m.Runs {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, dir := range m.packageDirs() {
		fmt.Fprintf(&b, "| `%s` |", dir)
		for _, r := range m.Runs {
			fmt.Fprintf(&b, " %s |", cell(r, dir))
		}
		b.WriteString("\n")
	}
	b.WriteString("| **wall time** |")
	for _, r := range m.Runs {
		fmt.Fprintf(&b, " %d s |", r.Seconds)
	}
	b.WriteString("\n")

	var skips, fails []string
	for _, r := range m.Runs {
		if r.Problem != "" {
			fails = append(fails, fmt.Sprintf("| %s | (the VM) | | %s |", r.Kernel.Label(), escapeCell(r.Problem)))
		}
		for _, p := range r.Packages {
			if p.Problem != "" {
				fails = append(fails, fmt.Sprintf("| %s | `%s` | | %s |", r.Kernel.Label(), p.Binary.Dir, escapeCell(p.Problem)))
			}
			for _, t := range p.Tests {
				switch t.Outcome {
				case Skip:
					skips = append(skips, fmt.Sprintf("| %s | `%s` | `%s` | %s |", r.Kernel.Label(), p.Binary.Dir, t.Name, escapeCell(strings.Join(t.Features, "; "))))
				case Fail:
					fails = append(fails, fmt.Sprintf("| %s | `%s` | `%s` | %s |", r.Kernel.Label(), p.Binary.Dir, t.Name, escapeCell(t.Why)))
				}
			}
		}
	}
	b.WriteString("\nSkipped, naming the missing kernel feature:\n\n")
	if len(skips) == 0 {
		b.WriteString("none.\n")
	} else {
		b.WriteString("| kernel | package | test | missing feature (reason) |\n| --- | --- | --- | --- |\n")
		b.WriteString(strings.Join(skips, "\n") + "\n")
	}
	b.WriteString("\nFailed:\n\n")
	if len(fails) == 0 {
		b.WriteString("none.\n")
	} else {
		b.WriteString("| kernel | package | test | last output |\n| --- | --- | --- | --- |\n")
		b.WriteString(strings.Join(fails, "\n") + "\n")
	}
	var crashes []string
	for _, r := range m.Runs {
		for _, p := range r.Packages {
			for i, c := range p.Crashes {
				after := "ran again in a fresh boot"
				if i == 1 {
					after = "failed: crashed twice"
				} else if len(p.Crashes) == 1 && p.Problem == "" {
					after = "ran again in a fresh boot: " + cell(r, p.Binary.Dir)
				}
				crashes = append(crashes, fmt.Sprintf("| %s | `%s` | %s | %s |", r.Kernel.Label(), p.Binary.Dir, escapeCell(c), after))
			}
		}
	}
	if len(crashes) > 0 {
		b.WriteString("\nKernel crashes and hangs (the guest kernel died, or its console went silent for longer than a test binary may run; the package then ran again in a fresh boot):\n\n")
		b.WriteString("| kernel | package | what the kernel said | then |\n| --- | --- | --- | --- |\n")
		b.WriteString(strings.Join(crashes, "\n") + "\n")
	}
	m.writeTestByTest(&b)
	return b.String()
}

// writeTestByTest lists every test with its outcome on each kernel, folded away.
func (m Matrix) writeTestByTest(b *strings.Builder) {
	type key struct{ dir, test string }
	outcomes := map[key][]string{}
	var keys []key
	for i, r := range m.Runs {
		for _, p := range r.Packages {
			for _, t := range p.Tests {
				k := key{p.Binary.Dir, t.Name}
				if _, ok := outcomes[k]; !ok {
					outcomes[k] = make([]string, len(m.Runs))
					keys = append(keys, k)
				}
				outcomes[k][i] = string(t.Outcome)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].dir != keys[j].dir {
			return keys[i].dir < keys[j].dir
		}
		return keys[i].test < keys[j].test
	})
	b.WriteString("\n<details><summary>Test by test</summary>\n\n| package | test |")
	for _, r := range m.Runs {
		fmt.Fprintf(b, " %s |", r.Kernel.Label())
	}
	b.WriteString("\n| --- | --- |")
	for range m.Runs {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, k := range keys {
		fmt.Fprintf(b, "| `%s` | `%s` |", k.dir, k.test)
		for _, o := range outcomes[k] {
			if o == "" {
				o = "not run"
			}
			fmt.Fprintf(b, " %s |", o)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n</details>\n")
}

func (m Matrix) packageDirs() []string {
	seen := map[string]bool{}
	var dirs []string
	for _, r := range m.Runs {
		for _, p := range r.Packages {
			if !seen[p.Binary.Dir] {
				seen[p.Binary.Dir] = true
				dirs = append(dirs, p.Binary.Dir)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

// cell is one kernel's summary of one package: "12 pass", "10 pass, 2 skip", "1 FAIL, 11 pass".
func cell(r KernelRun, dir string) string {
	for _, p := range r.Packages {
		if p.Binary.Dir != dir {
			continue
		}
		pass, fail, skip := p.Counts()
		var parts []string
		if fail > 0 {
			parts = append(parts, fmt.Sprintf("**%d FAIL**", fail))
		}
		parts = append(parts, fmt.Sprintf("%d pass", pass))
		if skip > 0 {
			parts = append(parts, fmt.Sprintf("%d skip", skip))
		}
		return strings.Join(parts, ", ")
	}
	return "not run"
}

func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// Doc markers: UpdateDoc replaces what lies between them.
const (
	docBegin = "<!-- kernel-matrix:begin (written by make kernel-matrix) -->"
	docEnd   = "<!-- kernel-matrix:end -->"
)

// UpdateDoc writes section between the markers of the Markdown file at path.
func UpdateDoc(path, section string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := replaceBetweenMarkers(string(data), section)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(updated), 0o644)
}

func replaceBetweenMarkers(doc, section string) (string, error) {
	i := strings.Index(doc, docBegin)
	j := strings.Index(doc, docEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("want the markers %q and %q, in that order", docBegin, docEnd)
	}
	return doc[:i+len(docBegin)] + "\n" + section + doc[j:], nil
}

// DocSection is what docs/kernel-matrix.md carries between its markers: how the run was
// made, then the matrix.
func DocSection(m Matrix, o Options, when time.Time) string {
	var b strings.Builder
	pass, fail, skip := m.Totals()
	if o.Host {
		fmt.Fprintf(&b, "\nLast run: %s, `make test-host`, on the machine's own kernel.\n", when.UTC().Format("2006-01-02 15:04 MST"))
	} else {
		fmt.Fprintf(&b, "\nLast run: %s, `make kernel-matrix` (qemu TCG, %d vCPU and %d MiB per VM, %d VMs at once).\n",
			when.UTC().Format("2006-01-02 15:04 MST"), o.CPUs, o.MemoryMB, max(o.Parallel, 1))
	}
	fmt.Fprintf(&b, "Totals: %d passed, %d failed, %d skipped.\n\n", pass, fail, skip)
	b.WriteString("| kernel | package or distribution |\n| --- | --- |\n")
	for _, r := range m.Runs {
		fmt.Fprintf(&b, "| %s | `%s` (from `%s`) |\n", r.Kernel.Label(), r.Kernel.Package, r.Kernel.Meta)
	}
	b.WriteString("\n" + m.Markdown() + "\n")
	return b.String()
}
