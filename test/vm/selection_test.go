package vm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestKernelTestNamesFollowsHelpersAndVariables(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a_test.go", `package a

import (
	"testing"

	kt "github.com/plinth/plinth/internal/kerneltest"
)

var loop = kt.Feature{Name: "loop"}

func needsLoop(t *testing.T) { kt.Require(t, loop) }

func TestDirect(t *testing.T) { kt.Require(t, kt.Root) }
func TestThroughHelper(t *testing.T) { t.Run("x", func(t *testing.T) { needsLoop(t) }) }
func TestPure(t *testing.T) { _ = 1 + 1 }
func TestMain(m *testing.M) { needsLoop(nil) }
`)
	write("b_test.go", `package a_test

import (
	"testing"

	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

func newCgroup(t *testing.T) { cgrouptest.New(t, cgrouptest.Options{}) }

func TestViaHelperPackage(t *testing.T) { newCgroup(t) }
func TestAlsoPure(t *testing.T) {}
`)
	write("c.go", `package a

func TestNotATestFile() {}
`)
	got, err := kernelTestNames(dir, map[string]bool{kerneltestImport: true, "github.com/plinth/plinth/kernel/cgroup/cgrouptest": true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"TestDirect", "TestThroughHelper", "TestViaHelperPackage"}; !slices.Equal(got, want) {
		t.Fatalf("kernel tests %v, want %v", got, want)
	}
	if p := runPattern(got); p != "^(TestDirect|TestThroughHelper|TestViaHelperPackage)$" {
		t.Fatalf("pattern %s", p)
	}
}
