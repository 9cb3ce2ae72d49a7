// Command vmtest runs Plinth's kernel tests inside qemu on Debian's kernels and prints
// the kernel × package matrix (package test/vm does the work). `make test-vm` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/test/vm"
)

func main() {
	wd, _ := os.Getwd()
	o := vm.Options{Log: os.Stderr, Clock: clock.RealClock{}}
	var kernels, exclude, only, doc, out string
	var list bool
	flag.StringVar(&o.Repo, "repo", wd, "repository root")
	flag.StringVar(&o.CacheDir, "cache", "/var/cache/plinth/vm", "where kernel packages are downloaded and unpacked, kept between runs")
	flag.StringVar(&o.WorkDir, "work", "", "parent of the run's temporary directory (default: $TMPDIR)")
	flag.StringVar(&kernels, "kernels", "linux-image-amd64,linux-image-6.12-amd64", "Debian kernel meta-packages to boot, comma-separated")
	flag.StringVar(&exclude, "exclude", "test", "package directories left out, comma-separated (test/: end-to-end suites needing the built daemons)")
	flag.StringVar(&only, "only", "", "run only these package directories, comma-separated")
	flag.IntVar(&o.CPUs, "cpus", 2, "vCPUs per VM")
	flag.IntVar(&o.MemoryMB, "memory", 2048, "MiB of memory per VM")
	flag.IntVar(&o.Parallel, "parallel", 2, "VMs at once")
	flag.DurationVar(&o.VMTimeout, "vm-timeout", 15*time.Minute, "longest one VM may run")
	flag.DurationVar(&o.TestTimeout, "test-timeout", 5*time.Minute, "-test.timeout of each test binary in the guest")
	flag.BoolVar(&o.Host, "host", false, "run the kernel tests on this machine's kernel instead of in VMs (the Vagrant and lima machines do)")
	flag.BoolVar(&list, "list", false, "list the kernel tests of each package and exit")
	flag.BoolVar(&o.KeepWork, "keep", false, "keep the work directory (initramfs, consoles, raw test output)")
	flag.StringVar(&doc, "doc", "", "Markdown file whose kernel-matrix section is rewritten with the results")
	flag.StringVar(&out, "out", "", "file the matrix is also written to")
	flag.Parse()
	o.Kernels = splitList(kernels)
	o.Exclude = splitList(exclude)
	o.Only = splitList(only)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if list {
		bins, err := vm.DiscoverKernelPackages(ctx, o.Repo, o.Exclude)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vmtest:", err)
			os.Exit(2)
		}
		for _, b := range bins {
			fmt.Printf("%s\t%s\n", b.Dir, strings.Join(b.Tests, " "))
		}
		return
	}
	m, err := vm.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmtest:", err)
		os.Exit(2)
	}
	section := vm.DocSection(m, o, time.Now())
	fmt.Print(section)
	if out != "" {
		if err := os.WriteFile(out, []byte(section), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "vmtest:", err)
			os.Exit(2)
		}
	}
	if doc != "" {
		if err := vm.UpdateDoc(doc, section); err != nil {
			fmt.Fprintln(os.Stderr, "vmtest:", err)
			os.Exit(2)
		}
	}
	pass, fail, skip := m.Totals()
	fmt.Printf("vm: %d passed, %d failed, %d skipped\n", pass, fail, skip)
	if fail > 0 {
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
