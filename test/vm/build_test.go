package vm

import (
	"slices"
	"testing"
)

func TestSelectKernelPackagesFollowsHelpers(t *testing.T) {
	const mod = "github.com/plinth/plinth/"
	pkgs := []listedPackage{
		{ImportPath: kerneltestImport, Dir: "/r/internal/kerneltest"},
		{ImportPath: mod + "kernel/cgroup/cgrouptest", Dir: "/r/kernel/cgroup/cgrouptest", Deps: []string{kerneltestImport}},
		{ImportPath: mod + "kernel/nft", Dir: "/r/kernel/nft", TestImports: []string{"testing", kerneltestImport}},
		{ImportPath: mod + "kernel/cgroup", Dir: "/r/kernel/cgroup", XTestImports: []string{mod + "kernel/cgroup/cgrouptest"}},
		{ImportPath: mod + "control/apiserver", Dir: "/r/control/apiserver", TestImports: []string{"testing"}},
		{ImportPath: mod + "test/e2e", Dir: "/r/test/e2e", TestImports: []string{kerneltestImport}},
	}
	got, err := selectKernelPackages("/r", pkgs, []string{"test"})
	if err != nil {
		t.Fatal(err)
	}
	want := []TestBinary{
		{ImportPath: mod + "kernel/nft", Dir: "kernel/nft", Name: "kernel_nft.test"},
		{ImportPath: mod + "kernel/cgroup", Dir: "kernel/cgroup", Name: "kernel_cgroup.test"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestSelectKernelPackagesWantsOne(t *testing.T) {
	if _, err := selectKernelPackages("/r", []listedPackage{{ImportPath: "x", Dir: "/r/x"}}, nil); err == nil {
		t.Fatal("no kernel package found, want an error")
	}
}
