package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// kerneltestImport is the package every kernel test goes through to name its features.
const kerneltestImport = "github.com/plinth/plinth/internal/kerneltest"

// TestBinary is one package's compiled tests.
type TestBinary struct {
	ImportPath string
	Dir        string // relative to the repository; the binary runs there, as go test does
	Name       string // file name in the binaries directory, unique per package
	// Tests are the package's kernel tests (kernelTestNames), the only ones run.
	Tests []string
}

// listedPackage is the part of `go list -json` that discovery reads.
type listedPackage struct {
	ImportPath   string
	Dir          string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// DiscoverKernelPackages lists the packages under repo whose tests are kernel tests:
// those whose test files import internal/kerneltest, directly or through a helper
// package that does (kernel/cgroup/cgrouptest, daemon/pods/podtest...), each with the
// names of its tests that reach the kernel (the rest are unit tests, which do not
// depend on the kernel and run in make test). Packages whose directory relative to
// repo starts with one of exclude are left out.
func DiscoverKernelPackages(ctx context.Context, repo string, exclude []string) ([]TestBinary, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-json", "./...")
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return selectKernelPackages(repo, pkgs, exclude)
}

func selectKernelPackages(repo string, pkgs []listedPackage, exclude []string) ([]TestBinary, error) {
	// Helpers: non-test packages that depend on kerneltest.
	helpers := map[string]bool{kerneltestImport: true}
	for _, p := range pkgs {
		if slices.Contains(p.Deps, kerneltestImport) {
			helpers[p.ImportPath] = true
		}
	}
	var bins []TestBinary
	for _, p := range pkgs {
		imports := append(append([]string{}, p.TestImports...), p.XTestImports...)
		if !slices.ContainsFunc(imports, func(i string) bool { return helpers[i] }) {
			continue
		}
		rel, err := filepath.Rel(repo, p.Dir)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		if slices.ContainsFunc(exclude, func(e string) bool { return rel == e || strings.HasPrefix(rel, e+"/") }) {
			continue
		}
		tests, err := kernelTestNames(p.Dir, helpers)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.ImportPath, err)
		}
		if len(tests) == 0 {
			continue
		}
		bins = append(bins, TestBinary{ImportPath: p.ImportPath, Dir: rel, Name: strings.ReplaceAll(rel, "/", "_") + ".test", Tests: tests})
	}
	if len(bins) == 0 {
		return nil, fmt.Errorf("no package under %s has kernel tests (none imports %s)", repo, kerneltestImport)
	}
	return bins, nil
}

// BuildTestBinaries compiles each package's tests into outDir (go test -c), stripped
// of symbols to keep what the guest reads over 9p small. One go command builds every
// package whose last path element is unique (go names those binaries <element>.test),
// so that the links run in parallel; the rest are built one by one.
func BuildTestBinaries(ctx context.Context, repo, outDir string, bins []TestBinary, log io.Writer) error {
	byElem := map[string][]TestBinary{}
	for _, b := range bins {
		elem := path.Base(b.ImportPath)
		byElem[elem] = append(byElem[elem], b)
	}
	var together, alone []TestBinary
	for _, b := range bins {
		if len(byElem[path.Base(b.ImportPath)]) == 1 {
			together = append(together, b)
		} else {
			alone = append(alone, b)
		}
	}
	if len(together) > 0 {
		fmt.Fprintf(log, "vm: building %d test binaries\n", len(together))
		tmp := filepath.Join(outDir, ".together")
		args := []string{"test", "-c", "-ldflags=-s -w", "-o", tmp + "/"}
		for _, b := range together {
			args = append(args, "./"+b.Dir)
		}
		if err := goCommand(ctx, repo, args...); err != nil {
			return err
		}
		for _, b := range together {
			if err := os.Rename(filepath.Join(tmp, path.Base(b.ImportPath)+".test"), filepath.Join(outDir, b.Name)); err != nil {
				return fmt.Errorf("test binary of %s: %w", b.ImportPath, err)
			}
		}
		if err := os.Remove(tmp); err != nil {
			return err
		}
	}
	for _, b := range alone {
		fmt.Fprintf(log, "vm: building %s\n", b.ImportPath)
		if err := goCommand(ctx, repo, "test", "-c", "-ldflags=-s -w", "-o", filepath.Join(outDir, b.Name), "./"+b.Dir); err != nil {
			return err
		}
	}
	return nil
}

func goCommand(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
