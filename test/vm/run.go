package vm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/utils/clock"
)

// Options configure a run.
type Options struct {
	Repo      string   // repository root
	CacheDir  string   // kernel packages, kept between runs
	WorkDir   string   // parent of the run's temporary directory ("" for the default)
	Kernels   []string // Debian meta-packages, e.g. linux-image-amd64 (6.1 on bookworm)
	Exclude   []string // package directories (relative to Repo) left out
	Only      []string // when set, only these package directories
	CPUs      int      // per VM
	MemoryMB  int      // per VM
	Parallel  int      // VMs at once
	VMTimeout time.Duration
	// TestTimeout is each binary's -test.timeout inside the guest.
	TestTimeout time.Duration
	KeepWork    bool // keep the temporary directory (initramfs, consoles, raw outputs)
	// Host runs the binaries on this machine's own kernel instead of booting VMs.
	Host  bool
	Log   io.Writer
	Clock clock.PassiveClock
}

// Run builds the kernel tests, boots every kernel with them and returns the matrix. An
// error means the run itself could not be made (no kernel, a build failure); test
// failures and VMs that did not finish are in the matrix.
func Run(ctx context.Context, o Options) (Matrix, error) {
	work, err := os.MkdirTemp(o.WorkDir, "plinth-vm-")
	if err != nil {
		return Matrix{}, err
	}
	if o.KeepWork {
		fmt.Fprintf(o.Log, "vm: keeping %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}

	bins, err := DiscoverKernelPackages(ctx, o.Repo, o.Exclude)
	if err != nil {
		return Matrix{}, err
	}
	if len(o.Only) > 0 {
		bins = slices.DeleteFunc(bins, func(b TestBinary) bool { return !slices.Contains(o.Only, b.Dir) })
	}
	binDir := filepath.Join(work, "bins")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return Matrix{}, err
	}
	start := o.Clock.Now()
	if err := BuildTestBinaries(ctx, o.Repo, binDir, bins, o.Log); err != nil {
		return Matrix{}, err
	}
	fmt.Fprintf(o.Log, "vm: built %d test binaries in %.0f s\n", len(bins), o.Clock.Since(start).Seconds())

	if o.Host {
		return Matrix{Runs: []KernelRun{runOnHost(ctx, o, bins, binDir, filepath.Join(work, "host"))}}, nil
	}

	var kernels []Kernel
	for _, meta := range o.Kernels {
		k, err := PrepareKernel(ctx, o.CacheDir, meta, o.Log)
		if err != nil {
			return Matrix{}, fmt.Errorf("kernel %s: %w", meta, err)
		}
		fmt.Fprintf(o.Log, "vm: %s is %s (%s)\n", meta, k.Package, k.Release)
		kernels = append(kernels, k)
	}

	runs := make([]KernelRun, len(kernels))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(o.Parallel, 1))
	for i, k := range kernels {
		g.Go(func() error {
			runs[i] = runKernel(gctx, o, k, bins, binDir, filepath.Join(work, k.Label()))
			return nil
		})
	}
	_ = g.Wait() // runKernel reports its problems in its KernelRun
	return Matrix{Runs: runs}, nil
}

// runKernel boots one kernel with the test binaries and collects what they printed.
func runKernel(ctx context.Context, o Options, k Kernel, bins []TestBinary, binDir, dir string) KernelRun {
	kr := KernelRun{Kernel: k}
	results := filepath.Join(dir, "results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		kr.Problem = err.Error()
		return kr
	}
	initramfs := filepath.Join(dir, "initramfs.cpio")
	cfg := guestConfig{Repo: o.Repo, TestTimeout: o.TestTimeout.String(), Binaries: bins}
	if err := buildInitramfs(ctx, k, cfg, binDir, initramfs); err != nil {
		kr.Problem = "building the initramfs: " + err.Error()
		return kr
	}
	m := machine{
		label: k.Label(), kernel: k.Vmlinuz(), initramfs: initramfs,
		shares: []share{
			{tag: "modules", dir: k.ModulesDir(), readOnly: true},
			{tag: "bins", dir: binDir, readOnly: true},
			{tag: "repo", dir: o.Repo, readOnly: true},
			{tag: "results", dir: results},
		},
		cpus: o.CPUs, memoryMB: o.MemoryMB, console: filepath.Join(dir, "console.log"),
		// Every binary ends within its -test.timeout, and the guest says so.
		silence: o.TestTimeout + 2*time.Minute,
	}
	start := o.Clock.Now()
	crashes, problem := bootAll(ctx, o, m, bins, results)
	kr.Seconds = int(o.Clock.Since(start).Seconds())
	kr.Problem = problem
	for _, b := range bins {
		p := collectPackage(ctx, b, results)
		if p.Crashes = crashes[b.Name]; len(p.Crashes) > 1 {
			p.Problem = "the kernel died running it, twice: " + p.Crashes[1]
		}
		kr.Packages = append(kr.Packages, p)
	}
	if kr.Problem != "" {
		fmt.Fprintf(o.Log, "vm %s: %s\n", k.Label(), lastConsoleLines(m.console, 30))
	}
	return kr
}

// collectPackage reads one binary's output and exit status from the results share. A
// binary that started but left no exit status was cut short (the VM stopped or timed
// out): what it printed is still parsed.
func collectPackage(ctx context.Context, b TestBinary, results string) PackageResult {
	// Parsing is quick and bounded; it still runs when the run was interrupted, so the
	// matrix shows how far each kernel got.
	ctx = context.WithoutCancel(ctx)
	p := PackageResult{Binary: b}
	raw, err := os.ReadFile(filepath.Join(results, b.Name+".out"))
	if err != nil {
		p.Problem = "did not run"
		return p
	}
	p.Ran = true
	rc, err := os.ReadFile(filepath.Join(results, b.Name+".rc"))
	if err != nil {
		p.Problem = "did not finish (the VM stopped)"
	} else if f := strings.Fields(string(rc)); len(f) == 2 {
		p.ExitCode, _ = strconv.Atoi(f[0])
		p.Seconds, _ = strconv.Atoi(f[1])
	}
	events, err := convertTestOutput(ctx, b.ImportPath, raw)
	if err != nil {
		p.Problem = err.Error()
		return p
	}
	if p.Tests, err = parseTestEvents(strings.NewReader(string(events))); err != nil {
		p.Problem = err.Error()
		return p
	}
	if _, fail, _ := p.Counts(); p.ExitCode != 0 && fail == 0 {
		p.Problem = fmt.Sprintf("exit status %d with no failing test: %s", p.ExitCode, lastLines(strings.Split(string(raw), "\n"), 6))
	}
	return p
}

func lastConsoleLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "last console lines:\n" + strings.Join(lines, "\n")
}
