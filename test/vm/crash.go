package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// bootAll boots m until the guest has run every binary. When the guest kernel dies
// mid-package (a panic: qemu exits through panic=-1 and -no-reboot; the console says
// why) or the guest hangs (its console silent for longer than any test binary may
// run; qemu is killed), the package is run once more in a fresh boot, its first
// output kept aside, and the following packages after it. A package that crashes or
// hangs the kernel twice is failed and skipped. Returns the crashes per binary name, and a problem with the VM
// itself (qemu failed, timed out, or the guest died before running anything).
func bootAll(ctx context.Context, o Options, m machine, bins []TestBinary, results string) (map[string][]string, string) {
	crashes := map[string][]string{}
	from := 0
	consoleBase := strings.TrimSuffix(m.console, ".log")
	for boot := 1; ; boot++ {
		m.cmdline = fmt.Sprintf("plinth.from=%d", from)
		if boot > 1 {
			m.console = fmt.Sprintf("%s-%d.log", consoleBase, boot)
		}
		vmCtx, cancel := context.WithTimeout(ctx, o.VMTimeout)
		err := m.run(vmCtx, o.Log)
		cancel()
		hung := errors.Is(err, errGuestHung)
		if err != nil && !hung {
			return crashes, err.Error()
		}
		if _, err := os.Stat(filepath.Join(results, "DONE")); err == nil && !hung {
			return crashes, ""
		}
		crashed := -1
		for i := from; i < len(bins); i++ {
			if _, err := os.Stat(filepath.Join(results, bins[i].Name+".rc")); err != nil {
				crashed = i
				break
			}
		}
		out := filepath.Join(results, bins[max(crashed, 0)].Name+".out")
		if _, err := os.Stat(out); crashed < 0 || err != nil {
			return crashes, fmt.Sprintf("the guest stopped before running anything (console: %s)", m.console)
		}
		b := bins[crashed]
		why := panicSummary(m.console)
		if hung {
			why = err.Error()
		}
		if test := lastStartedTest(out); test != "" {
			why = "during " + test + ": " + why
		}
		crashes[b.Name] = append(crashes[b.Name], why)
		fmt.Fprintf(o.Log, "vm %s: the kernel died or hung running %s: %s\n", m.label, b.Name, why)
		if len(crashes[b.Name]) == 1 {
			// Keep what the crashed run printed; the retry writes the .out afresh.
			if err := os.Rename(out, filepath.Join(results, b.Name+".crashed")); err != nil {
				return crashes, err.Error()
			}
			from = crashed
		} else {
			from = crashed + 1
		}
		if from >= len(bins) {
			return crashes, ""
		}
	}
}

var consoleTimestamp = regexp.MustCompile(`^\[\s*[0-9.]+\]\s*`)

// panicSummary picks from a console log what the kernel said when it died: the first
// BUG/Oops/fault line, the faulting RIP, and the panic reason.
func panicSummary(consolePath string) string {
	data, err := os.ReadFile(consolePath)
	if err != nil {
		return err.Error()
	}
	var first, rip, reason string
	for _, line := range strings.Split(string(data), "\n") {
		line = consoleTimestamp.ReplaceAllString(strings.TrimSpace(line), "")
		switch {
		case first == "" && (strings.HasPrefix(line, "BUG:") || strings.HasPrefix(line, "Oops") ||
			strings.Contains(line, "general protection fault") || strings.HasPrefix(line, "kernel BUG")):
			first = line
		case rip == "" && strings.HasPrefix(line, "RIP:"):
			rip = line
		case strings.HasPrefix(line, "Kernel panic"):
			reason = line
		}
	}
	var parts []string
	for _, p := range []string{first, rip, reason} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "the guest stopped without a panic message (console: " + consolePath + ")"
	}
	return strings.Join(parts, "; ")
}

// lastStartedTest is the test a binary's -test.v output last started.
func lastStartedTest(outPath string) string {
	data, err := os.ReadFile(outPath)
	if err != nil {
		return ""
	}
	test := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimLeft(line, "\x16") // test2json framing
		if name, ok := strings.CutPrefix(line, "=== RUN   "); ok {
			test = strings.TrimSpace(name)
		}
	}
	return test
}
