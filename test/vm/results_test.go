package vm

import (
	"slices"
	"strings"
	"testing"
)

// events is test2json output as `go tool test2json` writes it for a binary whose tests
// pass, fail, skip through kerneltest.Require, skip without naming anything, skip for a
// tool the VM should have shipped, and one still running when the binary died.
const events = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestPass"}
{"Action":"output","Package":"p","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"pass","Package":"p","Test":"TestPass","Elapsed":0.1}
{"Action":"run","Package":"p","Test":"TestParent"}
{"Action":"run","Package":"p","Test":"TestParent/btf"}
{"Action":"output","Package":"p","Test":"TestParent/btf","Output":"    x_test.go:9: kernel test needs: btf (stat /sys/kernel/btf/vmlinux: no such file or directory); psi (PSI unavailable (kernel without CONFIG_PSI; or psi=0): open: no such file)\n"}
{"Action":"skip","Package":"p","Test":"TestParent/btf"}
{"Action":"run","Package":"p","Test":"TestParent/fails"}
{"Action":"output","Package":"p","Test":"TestParent/fails","Output":"    x_test.go:12: got 1, want 2\n"}
{"Action":"output","Package":"p","Test":"TestParent/fails","Output":"--- FAIL: TestParent/fails (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestParent/fails"}
{"Action":"fail","Package":"p","Test":"TestParent"}
{"Action":"run","Package":"p","Test":"TestBareSkip"}
{"Action":"output","Package":"p","Test":"TestBareSkip","Output":"    x_test.go:20: not today\n"}
{"Action":"skip","Package":"p","Test":"TestBareSkip"}
{"Action":"run","Package":"p","Test":"TestNeedsRunc"}
{"Action":"output","Package":"p","Test":"TestNeedsRunc","Output":"    x_test.go:30: kernel test needs: runc (no runc in PATH)\n"}
{"Action":"skip","Package":"p","Test":"TestNeedsRunc"}
{"Action":"run","Package":"p","Test":"TestHangs"}
{"Action":"output","Package":"p","Test":"TestHangs","Output":"panic: test timed out after 8m0s\n"}
`

func TestParseTestEventsClassifiesLeaves(t *testing.T) {
	got, err := parseTestEvents(strings.NewReader(events))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]TestResult{}
	var names []string
	for _, r := range got {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	if want := []string{"TestPass", "TestParent/btf", "TestParent/fails", "TestBareSkip", "TestNeedsRunc", "TestHangs"}; !slices.Equal(names, want) {
		t.Fatalf("leaves %v, want %v (parents are not counted)", names, want)
	}
	check := func(name string, want Outcome, whyHas string) {
		t.Helper()
		r := byName[name]
		if r.Outcome != want || !strings.Contains(r.Why, whyHas) {
			t.Errorf("%s: %s %q, want %s with %q", name, r.Outcome, r.Why, want, whyHas)
		}
	}
	check("TestPass", Pass, "")
	check("TestParent/btf", Skip, "")
	check("TestParent/fails", Fail, "got 1, want 2")
	check("TestBareSkip", Fail, "skipped without naming a kernel feature")
	check("TestNeedsRunc", Fail, "the VM image lacks")
	check("TestHangs", Fail, "did not finish: panic: test timed out")
	if f := byName["TestParent/btf"].Features; len(f) != 2 || !strings.HasPrefix(f[0], "btf (") || !strings.HasPrefix(f[1], "psi (PSI unavailable (kernel without CONFIG_PSI; or psi=0)") {
		t.Errorf("features %q", f)
	}
	if strings.Contains(byName["TestParent/fails"].Why, "--- FAIL") {
		t.Errorf("why keeps the framing: %q", byName["TestParent/fails"].Why)
	}
}

func TestPackageCountsAProblemAsAFailure(t *testing.T) {
	p := PackageResult{Tests: []TestResult{{Outcome: Pass}, {Outcome: Skip}}, Problem: "did not run"}
	if pass, fail, skip := p.Counts(); pass != 1 || fail != 1 || skip != 1 {
		t.Fatalf("counts %d/%d/%d, want 1/1/1", pass, fail, skip)
	}
}

func TestSkipFeatures(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"nothing here", nil},
		{"    a.go:1: kernel test needs: veth (ip link add: exit 2: RTNETLINK answers: Operation not supported)\n",
			[]string{"veth (ip link add: exit 2: RTNETLINK answers: Operation not supported)"}},
		{"kernel test needs: memory cgroup (x; y); cgroup v2 tree (z)", []string{"memory cgroup (x; y)", "cgroup v2 tree (z)"}},
		{"kernel test needs: unbalanced (a (b); c", []string{"unbalanced (a (b); c"}},
		{"kernel test needs: ", nil},
	} {
		if got := skipFeatures(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("skipFeatures(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The guest's output reaches the parser unfiltered: whatever a test printed, parsing
// must not panic, and every feature it returns is non-empty and comes from the message.
func FuzzSkipFeatures(f *testing.F) {
	f.Add("kernel test needs: btf (stat: no such file); psi (x)")
	f.Add("kernel test needs: a ((b); c)); d")
	f.Add("kernel test needs: ;;; ((")
	f.Add("plain output\nkernel test needs: x\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, feat := range skipFeatures(s) {
			if feat == "" || strings.TrimSpace(feat) != feat {
				t.Fatalf("feature %q from %q", feat, s)
			}
			if !strings.Contains(s, feat) {
				t.Fatalf("feature %q not in %q", feat, s)
			}
		}
	})
}

func FuzzParseTestEvents(f *testing.F) {
	f.Add(events)
	f.Add(`{"Action":"run","Test":"A/B/C"}` + "\n" + `{"Action":"skip","Test":"A/B/C"}`)
	f.Add(`{"Action":"pass","Test":"/"}{"Action":"fail"`)
	f.Fuzz(func(t *testing.T, s string) {
		results, err := parseTestEvents(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, r := range results {
			if r.Outcome != Pass && r.Outcome != Fail && r.Outcome != Skip {
				t.Fatalf("%s: outcome %q", r.Name, r.Outcome)
			}
			if r.Outcome == Skip && len(r.Features) == 0 {
				t.Fatalf("%s: a skip with no feature named", r.Name)
			}
		}
	})
}
