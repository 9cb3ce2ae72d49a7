package vm

import (
	"os"
	"path/filepath"
	"slices"
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
