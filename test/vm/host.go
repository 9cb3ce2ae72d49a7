package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// runOnHost runs the test binaries directly on this machine, as the guest's init does in
// a VM: each in its package directory, with skips allowed so that a missing feature is
// named rather than failed. The Vagrant and lima machines under test/vm use it to put
// their distribution's kernel in the same matrix.
func runOnHost(ctx context.Context, o Options, bins []TestBinary, binDir, results string) KernelRun {
	kr := KernelRun{Kernel: hostKernel()}
	if err := os.MkdirAll(results, 0o755); err != nil {
		kr.Problem = err.Error()
		return kr
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PLINTH_REQUIRE_KERNEL=") {
			env = append(env, e)
		}
	}
	start := o.Clock.Now()
	for _, b := range bins {
		fmt.Fprintf(o.Log, "vm host: running %s\n", b.Name)
		binStart := o.Clock.Now()
		out, err := os.Create(filepath.Join(results, b.Name+".out"))
		if err != nil {
			kr.Problem = err.Error()
			break
		}
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, b.Name), "-test.v=test2json", "-test.timeout="+o.TestTimeout.String(), "-test.run="+runPattern(b.Tests))
		cmd.Dir = filepath.Join(o.Repo, b.Dir)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = out, out
		err = cmd.Run()
		out.Close()
		code := 0
		if err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				kr.Problem = err.Error()
				break
			}
			code = exit.ExitCode()
		}
		secs := int(o.Clock.Since(binStart).Seconds())
		if err := os.WriteFile(filepath.Join(results, b.Name+".rc"), fmt.Appendf(nil, "%d %d\n", code, secs), 0o644); err != nil {
			kr.Problem = err.Error()
			break
		}
		fmt.Fprintf(o.Log, "vm host: %s exit %d after %d s\n", b.Name, code, secs)
	}
	kr.Seconds = int(o.Clock.Since(start).Seconds())
	for _, b := range bins {
		kr.Packages = append(kr.Packages, collectPackage(ctx, b, results))
	}
	return kr
}

// hostKernel describes the running kernel: its release, and the distribution (from
// os-release) in place of a package name.
func hostKernel() Kernel {
	var uts unix.Utsname
	release := "unknown"
	if err := unix.Uname(&uts); err == nil {
		release = unix.ByteSliceToString(uts.Release[:])
	}
	distro := "this machine"
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				distro = strings.Trim(v, `"`)
			}
		}
	}
	return Kernel{Meta: "host", Package: distro, Release: release}
}
