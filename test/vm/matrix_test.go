package vm

import (
	"strings"
	"testing"
)

func TestMarkdownListsEveryCellSkipAndFailure(t *testing.T) {
	nft := TestBinary{Dir: "kernel/nft"}
	psiPkg := TestBinary{Dir: "kernel/psi"}
	m := Matrix{Runs: []KernelRun{
		{Kernel: Kernel{Release: "6.1.0-56-amd64"}, Seconds: 300, Packages: []PackageResult{
			{Binary: nft, Tests: []TestResult{{Name: "TestA", Outcome: Pass}, {Name: "TestB", Outcome: Pass}}},
			{Binary: psiPkg, Tests: []TestResult{{Name: "TestP", Outcome: Skip, Features: []string{"psi (off | at boot)"}}},
				Crashes: []string{"during TestP: RIP: 0010:f+0x1"}},
		}},
		{Kernel: Kernel{Release: "6.12.117+deb12-amd64"}, Seconds: 280, Problem: "qemu died", Packages: []PackageResult{
			{Binary: nft, Tests: []TestResult{{Name: "TestA", Outcome: Fail, Why: "boom"}, {Name: "TestB", Outcome: Pass}}},
			{Binary: psiPkg, Problem: "did not run"},
		}},
	}}
	md := m.Markdown()
	for _, want := range []string{
		"| package | 6.1.0-56 | 6.12.117+deb12 |",
		"| `kernel/nft` | 2 pass | **1 FAIL**, 1 pass |",
		"| `kernel/psi` | 0 pass, 1 skip | **1 FAIL**, 0 pass |",
		"| **wall time** | 300 s | 280 s |",
		"| 6.1.0-56 | `kernel/psi` | `TestP` | psi (off \\| at boot) |",
		"| 6.12.117+deb12 | `kernel/nft` | `TestA` | boom |",
		"| 6.12.117+deb12 | `kernel/psi` | | did not run |",
		"| 6.12.117+deb12 | (the VM) | | qemu died |",
		"| `kernel/nft` | `TestA` | pass | fail |",
		"| `kernel/psi` | `TestP` | skip | not run |",
		"| 6.1.0-56 | `kernel/psi` | during TestP: RIP: 0010:f+0x1 | ran again in a fresh boot: 0 pass, 1 skip |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if pass, fail, skip := m.Totals(); pass != 3 || fail != 3 || skip != 1 {
		t.Errorf("totals %d/%d/%d, want 3/3/1", pass, fail, skip)
	}
}

func TestReplaceBetweenMarkers(t *testing.T) {
	doc := "# T\n\nintro\n" + docBegin + "\nold\n" + docEnd + "\ntail\n"
	got, err := replaceBetweenMarkers(doc, "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# T\n\nintro\n" + docBegin + "\nnew\n" + docEnd + "\ntail\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := replaceBetweenMarkers("no markers", "x"); err == nil {
		t.Fatal("want an error without markers")
	}
}
