package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Outcome is what one test did on one kernel.
type Outcome string

const (
	Pass Outcome = "pass"
	Fail Outcome = "fail"
	// Skip means the test skipped naming a missing kernel feature: the only skip
	// allowed (kerneltest.Require).
	Skip Outcome = "skip"
)

// TestResult is one test (a leaf: a test with no subtests, or a subtest).
type TestResult struct {
	Name     string
	Outcome  Outcome
	Features []string // for Skip: the kernel features named as missing, with the reason
	Why      string   // for Fail: the last lines the test printed
}

// PackageResult is one package's test binary on one kernel.
type PackageResult struct {
	Binary   TestBinary
	Ran      bool
	ExitCode int
	Seconds  int
	Tests    []TestResult
	Problem  string // a failure not tied to one test: did not run, crashed, timed out
	// Crashes are what the kernel said each time it died running this binary; after
	// the first the binary ran again in a fresh boot (its Tests are from that run).
	Crashes []string
}

// Counts adds up the package's leaves; a Problem counts as one failure.
func (p PackageResult) Counts() (pass, fail, skip int) {
	for _, t := range p.Tests {
		switch t.Outcome {
		case Pass:
			pass++
		case Fail:
			fail++
		case Skip:
			skip++
		}
	}
	if p.Problem != "" {
		fail++
	}
	return pass, fail, skip
}

// harnessFeatures are kerneltest features the VM image itself supplies (tools and
// privileges, not kernel features): a skip naming one of them is the harness's fault,
// so it is counted as a failure rather than as a missing kernel feature.
var harnessFeatures = []string{"root", "runc", "nft binary", "busybox-static"}

// testEvent is one line of `go tool test2json` output.
type testEvent struct {
	Action string
	Test   string
	Output string
}

// convertTestOutput turns a test binary's -test.v=test2json output into JSON events
// with the Go toolchain's own converter.
func convertTestOutput(ctx context.Context, importPath string, raw []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", "tool", "test2json", "-p", importPath)
	cmd.Stdin = bytes.NewReader(raw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool test2json: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// parseTestEvents reads test2json events and returns the leaf tests in the order they
// started, each with its outcome, the features a skip named, and a failure's last lines.
func parseTestEvents(r io.Reader) ([]TestResult, error) {
	type state struct {
		outcome Outcome
		output  []string
		parent  bool
	}
	tests := map[string]*state{}
	var order []string
	dec := json.NewDecoder(r)
	for {
		var ev testEvent
		if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("test2json event: %w", err)
		}
		if ev.Test == "" {
			continue
		}
		s, ok := tests[ev.Test]
		if !ok {
			s = &state{}
			tests[ev.Test] = s
			order = append(order, ev.Test)
			for p := ev.Test; ; {
				i := strings.LastIndex(p, "/")
				if i < 0 {
					break
				}
				p = p[:i]
				if ps, ok := tests[p]; ok {
					ps.parent = true
				}
			}
		}
		switch ev.Action {
		case "output":
			s.output = append(s.output, ev.Output)
		case "pass":
			s.outcome = Pass
		case "fail":
			s.outcome = Fail
		case "skip":
			s.outcome = Skip
		}
	}
	var results []TestResult
	for _, name := range order {
		s := tests[name]
		if s.parent {
			continue
		}
		r := TestResult{Name: name, Outcome: s.outcome}
		switch s.outcome {
		case "":
			// Still running when the binary died (a panic or timeout elsewhere).
			r.Outcome, r.Why = Fail, "did not finish: "+lastLines(s.output, 8)
		case Fail:
			r.Why = lastLines(s.output, 8)
		case Skip:
			r.Features = skipFeatures(strings.Join(s.output, ""))
			switch {
			case len(r.Features) == 0:
				r.Outcome, r.Why = Fail, "skipped without naming a kernel feature: "+lastLines(s.output, 4)
			case slices.ContainsFunc(r.Features, isHarnessFeature):
				r.Outcome, r.Why = Fail, "the VM image lacks what the test needs: "+strings.Join(r.Features, "; ")
			}
		}
		results = append(results, r)
	}
	return results, nil
}

func isHarnessFeature(f string) bool {
	name, _, _ := strings.Cut(f, " (")
	return slices.Contains(harnessFeatures, name)
}

// lastLines joins the last n non-empty lines of a test's output, without the
// "=== RUN"/"--- FAIL" framing.
func lastLines(output []string, n int) string {
	var lines []string
	for _, o := range output {
		for _, l := range strings.Split(o, "\n") {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
				continue
			}
			lines = append(lines, t)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// skipMarker starts kerneltest.Require's skip message: "kernel test needs: NAME
// (REASON); NAME (REASON)".
const skipMarker = "kernel test needs: "

// skipFeatures returns each "NAME (REASON)" that a kerneltest.Require skip message
// names, or nil when the output holds no such message. Reasons may themselves hold
// parentheses and semicolons; only a "; " outside parentheses separates features.
func skipFeatures(output string) []string {
	i := strings.Index(output, skipMarker)
	if i < 0 {
		return nil
	}
	msg := output[i+len(skipMarker):]
	if j := strings.IndexByte(msg, '\n'); j >= 0 {
		msg = msg[:j]
	}
	var features []string
	depth, start := 0, 0
	for k := 0; k < len(msg); k++ {
		switch msg[k] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ';':
			if depth == 0 {
				if f := strings.TrimSpace(msg[start:k]); f != "" {
					features = append(features, f)
				}
				start = k + 1
			}
		}
	}
	if f := strings.TrimSpace(msg[start:]); f != "" {
		features = append(features, f)
	}
	return features
}
