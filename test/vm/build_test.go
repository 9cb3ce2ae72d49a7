package vm

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSelectKernelPackagesFollowsHelpers(t *testing.T) {
	const mod = "github.com/plinth/plinth/"
	repo := t.TempDir()
	writeTest := func(dir, src string) string {
		full := filepath.Join(repo, dir)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(full, "x_test.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return full
	}
	nft := writeTest("kernel/nft", `package nft
import ("testing"; "github.com/plinth/plinth/internal/kerneltest")
func TestKernel(t *testing.T) { kerneltest.Require(t, kerneltest.NFTables) }
func TestUnit(t *testing.T) {}
`)
	cg := writeTest("kernel/cgroup", `package cgroup_test
import ("testing"; "github.com/plinth/plinth/kernel/cgroup/cgrouptest")
func TestLimits(t *testing.T) { cgrouptest.New(t, cgrouptest.Options{}) }
`)
	unitOnly := writeTest("kernel/sysinfo", `package sysinfo
import ("testing"; "github.com/plinth/plinth/internal/kerneltest")
var _ = kerneltest.Root
func TestParse(t *testing.T) {}
`)
	e2e := writeTest("test/e2e", `package e2e
import ("testing"; "github.com/plinth/plinth/internal/kerneltest")
func TestCluster(t *testing.T) { kerneltest.Require(t, kerneltest.Root) }
`)
	pkgs := []listedPackage{
		{ImportPath: kerneltestImport, Dir: filepath.Join(repo, "internal/kerneltest")},
		{ImportPath: mod + "kernel/cgroup/cgrouptest", Dir: filepath.Join(repo, "kernel/cgroup/cgrouptest"), Deps: []string{kerneltestImport}},
		{ImportPath: mod + "kernel/nft", Dir: nft, TestImports: []string{"testing", kerneltestImport}},
		{ImportPath: mod + "kernel/cgroup", Dir: cg, XTestImports: []string{mod + "kernel/cgroup/cgrouptest"}},
		{ImportPath: mod + "kernel/sysinfo", Dir: unitOnly, TestImports: []string{kerneltestImport}},
		{ImportPath: mod + "control/apiserver", Dir: filepath.Join(repo, "control/apiserver"), TestImports: []string{"testing"}},
		{ImportPath: mod + "test/e2e", Dir: e2e, TestImports: []string{kerneltestImport}},
	}
	got, err := selectKernelPackages(repo, pkgs, []string{"test"})
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, b := range got {
		desc = append(desc, b.Dir+" "+b.Name+" "+runPattern(b.Tests))
	}
	want := []string{
		"kernel/nft kernel_nft.test ^(TestKernel)$",
		"kernel/cgroup kernel_cgroup.test ^(TestLimits)$",
	}
	if !slices.Equal(desc, want) {
		t.Fatalf("got %q\nwant %q", desc, want)
	}
}

func TestSelectKernelPackagesWantsOne(t *testing.T) {
	if _, err := selectKernelPackages("/r", []listedPackage{{ImportPath: "x", Dir: "/r/x"}}, nil); err == nil {
		t.Fatal("no kernel package found, want an error")
	}
}

// Two packages share their last path element (go test -c would name both x.test): each
// must still get its own binary, under its directory's name.
func TestBuildTestBinariesNamesEachPackage(t *testing.T) {
	repo := t.TempDir()
	files := map[string]string{
		"go.mod":        "module example.com/m\n\ngo 1.22\n",
		"a/x/x_test.go": "package x\nimport \"testing\"\nfunc TestA(t *testing.T) {}\n",
		"b/x/x_test.go": "package x\nimport \"testing\"\nfunc TestB(t *testing.T) {}\n",
		"c/y/y_test.go": "package y\nimport \"testing\"\nfunc TestC(t *testing.T) {}\n",
		"d/z/z_test.go": "package z\nimport \"testing\"\nfunc TestD(t *testing.T) {}\n",
	}
	for name, src := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var bins []TestBinary
	for _, dir := range []string{"a/x", "b/x", "c/y", "d/z"} {
		bins = append(bins, TestBinary{ImportPath: "example.com/m/" + dir, Dir: dir, Name: filepath.Base(filepath.Dir(dir)) + "_" + filepath.Base(dir) + ".test"})
	}
	out := t.TempDir()
	if err := BuildTestBinaries(t.Context(), repo, out, bins, io.Discard); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"a_x.test", "b_x.test", "c_y.test", "d_z.test"}; !slices.Equal(names, want) {
		t.Fatalf("binaries %v, want %v", names, want)
	}
	got, err := exec.Command(filepath.Join(out, "b_x.test"), "-test.v", "-test.run=.").CombinedOutput()
	if err != nil || !strings.Contains(string(got), "TestB") {
		t.Fatalf("b_x.test: %v: %s", err, got)
	}
}
