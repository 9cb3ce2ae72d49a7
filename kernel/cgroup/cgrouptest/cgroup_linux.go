//go:build linux

package cgrouptest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/psi"
)

// Cgroups is the kernel feature New needs: a cgroup v2 tree, hybrid or unified, since
// per-cgroup PSI exists only there.
var Cgroups = kerneltest.Feature{Name: "cgroups", Probe: func() error {
	h, err := cgroup.DetectHost()
	if err != nil {
		return err
	}
	if h.Mode == cgroup.Legacy {
		return fmt.Errorf("cgroup v1 only (legacy mode): no unified tree for per-cgroup PSI")
	}
	return nil
}}

// Options sets the limits of a test cgroup. Zero means no limit.
type Options struct {
	// MemoryLimit in bytes (memory.limit_in_bytes on v1, memory.max on v2).
	MemoryLimit int64
	// PidsLimit in tasks. Start's forking thread counts against it while it forks, so a
	// limit of 1 lets nothing start.
	PidsLimit int64
	// CPUQuota is the CPU time the cgroup may use per CPUPeriod (100 ms if zero).
	CPUQuota  time.Duration
	CPUPeriod time.Duration
}

// v1Controllers are the hierarchies a test cgroup joins on hybrid hosts.
var v1Controllers = []string{"memory", "pids", "cpu"}

// seq numbers the cgroups of one test binary so parallel tests get distinct names.
var seq atomic.Int64

// Cgroup is a test's cgroup, present in every hierarchy a limit or a reading needs.
type Cgroup struct {
	t       testing.TB
	host    cgroup.Host
	path    string            // "/plinth-test-<pid>-<n>" in every hierarchy
	v1      map[string]string // controller → directory (hybrid)
	unified string            // the v2 directory
	dirs    []string          // every directory made, in creation order

	mu      sync.Mutex
	started []int // pids Start forked, reaped at cleanup
}

// New creates a uniquely named cgroup with opts' limits in every hierarchy it needs and
// registers its removal with t.Cleanup: every process in it is killed and every
// directory removed, even when the test fails. It needs root and a cgroup v2 tree.
func New(t testing.TB, opts Options) *Cgroup {
	t.Helper()
	kerneltest.Require(t, kerneltest.Root, Cgroups)
	if opts.MemoryLimit < 0 || opts.PidsLimit < 0 || opts.CPUQuota < 0 || opts.CPUPeriod < 0 {
		t.Fatalf("cgrouptest.New: negative limit in %+v", opts)
	}
	if opts.CPUPeriod == 0 {
		opts.CPUPeriod = 100 * time.Millisecond
	}
	host, err := cgroup.DetectHost()
	if err != nil {
		t.Fatalf("cgrouptest.New: %v", err)
	}
	c := &Cgroup{t: t, host: host, v1: map[string]string{}}
	// Registered first, so whatever part was made before a failure is removed.
	t.Cleanup(c.cleanup)

	var bases []string // hierarchy roots the cgroup goes under
	switch host.Mode {
	case cgroup.Hybrid:
		for _, ctrl := range v1Controllers {
			base, err := host.ControllerDir(ctrl)
			if err != nil {
				t.Fatalf("cgrouptest.New: %v", err)
			}
			if base == host.UnifiedDir() {
				t.Fatalf("cgrouptest.New: hybrid host without a v1 %s hierarchy is not supported", ctrl)
			}
			bases = append(bases, base)
		}
		bases = append(bases, host.UnifiedDir())
	case cgroup.Unified:
		if err := enableControllers(host.Root, opts); err != nil {
			t.Fatalf("cgrouptest.New: %v", err)
		}
		bases = []string{host.Root}
	default:
		t.Fatalf("cgrouptest.New: cgroup mode %v is not supported", host.Mode)
	}
	c.path = freeName(bases)

	for i, base := range bases {
		dir := filepath.Join(base, c.path)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("cgrouptest.New: %v", err)
		}
		c.dirs = append(c.dirs, dir)
		if host.Mode == cgroup.Hybrid && i < len(v1Controllers) {
			c.v1[v1Controllers[i]] = dir
		} else {
			c.unified = dir
		}
	}
	if err := c.setLimits(opts); err != nil {
		t.Fatalf("cgrouptest.New: %v", err)
	}
	return c
}

// freeName picks plinth-test-<pid>-<n> unused in every hierarchy: a crashed earlier run
// with a reused pid may have left one behind.
func freeName(bases []string) string {
	for {
		name := fmt.Sprintf("/plinth-test-%d-%d", os.Getpid(), seq.Add(1))
		taken := false
		for _, b := range bases {
			if _, err := os.Lstat(filepath.Join(b, name)); !errors.Is(err, fs.ErrNotExist) {
				taken = true
			}
		}
		if !taken {
			return name
		}
	}
}

// enableControllers makes memory, pids and cpu available to the root's children on a
// unified host. It never disables anything.
func enableControllers(root string, opts Options) error {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(b))
	need := map[string]bool{"memory": opts.MemoryLimit > 0, "pids": opts.PidsLimit > 0, "cpu": opts.CPUQuota > 0}
	var enable []string
	for _, ctrl := range v1Controllers {
		if slices.Contains(have, ctrl) {
			enable = append(enable, "+"+ctrl)
		} else if need[ctrl] {
			return fmt.Errorf("%s/cgroup.controllers %q lacks %s, which a limit needs", root, strings.TrimSpace(string(b)), ctrl)
		}
	}
	if len(enable) == 0 {
		return nil
	}
	return writeFile(filepath.Join(root, "cgroup.subtree_control"), strings.Join(enable, " "))
}

func (c *Cgroup) setLimits(opts Options) error {
	period, quota := opts.CPUPeriod.Microseconds(), opts.CPUQuota.Microseconds()
	if opts.CPUQuota > 0 && quota < 1000 {
		return fmt.Errorf("CPUQuota %v: the kernel wants at least 1ms", opts.CPUQuota)
	}
	type setting struct{ file, value string }
	var settings []setting
	if c.host.Mode == cgroup.Hybrid {
		if opts.MemoryLimit > 0 {
			settings = append(settings, setting{filepath.Join(c.v1["memory"], "memory.limit_in_bytes"), strconv.FormatInt(opts.MemoryLimit, 10)})
		}
		if opts.PidsLimit > 0 {
			settings = append(settings, setting{filepath.Join(c.v1["pids"], "pids.max"), strconv.FormatInt(opts.PidsLimit, 10)})
		}
		if opts.CPUQuota > 0 {
			settings = append(settings,
				setting{filepath.Join(c.v1["cpu"], "cpu.cfs_period_us"), strconv.FormatInt(period, 10)},
				setting{filepath.Join(c.v1["cpu"], "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)})
		}
	} else {
		if opts.MemoryLimit > 0 {
			settings = append(settings, setting{filepath.Join(c.unified, "memory.max"), strconv.FormatInt(opts.MemoryLimit, 10)})
			// With swap on, the limit would push pages to swap instead of stalling.
			if _, err := os.Stat(filepath.Join(c.unified, "memory.swap.max")); err == nil {
				settings = append(settings, setting{filepath.Join(c.unified, "memory.swap.max"), "0"})
			}
		}
		if opts.PidsLimit > 0 {
			settings = append(settings, setting{filepath.Join(c.unified, "pids.max"), strconv.FormatInt(opts.PidsLimit, 10)})
		}
		if opts.CPUQuota > 0 {
			settings = append(settings, setting{filepath.Join(c.unified, "cpu.max"), fmt.Sprintf("%d %d", quota, period)})
		}
	}
	for _, s := range settings {
		if err := writeFile(s.file, s.value); err != nil {
			return err
		}
	}
	return nil
}

// Path is the cgroup's path inside each hierarchy, as /proc/<pid>/cgroup prints it and
// as cgroup.Host's readers take it.
func (c *Cgroup) Path() string { return c.path }

// Host is the host the cgroup was made on.
func (c *Cgroup) Host() cgroup.Host { return c.host }

// UnifiedDir is the cgroup's directory in the v2 tree (where its *.pressure files are).
func (c *Cgroup) UnifiedDir() string { return c.unified }

// Dir is the cgroup's directory in the hierarchy carrying controller.
func (c *Cgroup) Dir(controller string) string {
	if d, ok := c.v1[controller]; ok {
		return d
	}
	return c.unified
}

// Dirs lists every directory of the cgroup, for tests that check they are gone.
func (c *Cgroup) Dirs() []string { return slices.Clone(c.dirs) }

// PressurePath is the cgroup's pressure file for res, where PSI triggers are armed.
func (c *Cgroup) PressurePath(res psi.Resource) string { return psi.CgroupPath(c.unified, res) }

// Start starts cmd inside the cgroup in every hierarchy before it runs its first
// instruction, so everything it allocates is charged there. The v2 placement is atomic
// (clone3 with CLONE_INTO_CGROUP). On hybrid hosts the process first runs /bin/sh as a
// gate, which waits on a pipe until its pid is in the v1 cgroups and then execs cmd's
// program (with argv[0] set to cmd.Path); the test process itself never joins the
// cgroups, so neither their OOM killer nor their CPU quota can reach it. Processes
// started here are killed and reaped at cleanup; a test may still cmd.Wait for them.
func (c *Cgroup) Start(cmd *exec.Cmd) error {
	c.t.Helper()
	if cmd.Err != nil {
		return cmd.Err
	}
	dirFD, err := unix.Open(c.unified, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cgrouptest: open %s: %w", c.unified, err)
	}
	defer unix.Close(dirFD)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = dirFD

	var gate *os.File // written once the v1 placement is done
	if len(c.v1) > 0 {
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("cgrouptest: %w", err)
		}
		defer r.Close() // the child has its own copy once started
		gate = w
		defer gate.Close()
		fd := 3 + len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, r)
		// Without the go-ahead (the parent failed or died) the gate exits instead.
		script := fmt.Sprintf(`read -r go <&%d && [ "$go" = go ] || exit 125; exec "$@" %d<&-`, fd, fd)
		prog, args := cmd.Path, []string(nil)
		if len(cmd.Args) > 1 {
			args = cmd.Args[1:]
		}
		cmd.Path = "/bin/sh"
		cmd.Args = append([]string{"sh", "-c", script, "cgrouptest-gate", prog}, args...)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cgrouptest: start %s in %s: %w", cmd.Path, c.path, err)
	}
	pid := cmd.Process.Pid
	c.mu.Lock()
	c.started = append(c.started, pid)
	c.mu.Unlock()
	if err := c.placeV1(pid); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	if err := c.checkPlaced(pid); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	if gate != nil {
		if _, err := gate.WriteString("go\n"); err != nil {
			_ = cmd.Process.Kill()
			return fmt.Errorf("cgrouptest: release pid %d: %w", pid, err)
		}
	}
	return nil
}

// placeV1 writes pid into the cgroup of every v1 hierarchy.
func (c *Cgroup) placeV1(pid int) error {
	for _, ctrl := range v1Controllers {
		if dir, ok := c.v1[ctrl]; ok {
			if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
				return fmt.Errorf("cgrouptest: %w", err)
			}
		}
	}
	return nil
}

// checkPlaced confirms from /proc/<pid>/cgroup that pid is in the cgroup everywhere.
func (c *Cgroup) checkPlaced(pid int) error {
	pc, err := c.host.ProcessCgroups(pid)
	if err != nil {
		return fmt.Errorf("cgrouptest: %w", err)
	}
	if !pc.HasUnified || pc.Unified != c.path {
		return fmt.Errorf("cgrouptest: pid %d is in v2 cgroup %q, want %q", pid, pc.Unified, c.path)
	}
	for ctrl := range c.v1 {
		if got := pc.V1[ctrl]; got != c.path {
			return fmt.Errorf("cgrouptest: pid %d is in %s cgroup %q, want %q", pid, ctrl, got, c.path)
		}
	}
	return nil
}

// Add moves an already running process into the cgroup in every hierarchy. Cleanup
// kills it but cannot reap it unless it is this process's child.
func (c *Cgroup) Add(pid int) error {
	for _, dir := range c.dirs {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgrouptest: %w", err)
		}
	}
	return nil
}

// Procs lists the processes in the cgroup (from its v2 directory).
func (c *Cgroup) Procs() ([]int, error) { return readProcs(c.unified) }

// StartHelper starts a HelperCommand in the cgroup and waits until it prints "ready"
// (its memory allocated, its loop running), failing the test if it does not within
// 10 s. The package's TestMain must call HelperMain.
func (c *Cgroup) StartHelper(mode string, args ...string) *exec.Cmd {
	c.t.Helper()
	cmd, err := HelperCommand(mode, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := c.Start(cmd); err != nil {
		c.t.Fatal(err)
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != readyLine {
			err = fmt.Errorf("printed %q, want %q", line, readyLine)
		}
		ready <- err
		// Keep draining so the helper never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case err := <-ready:
		if err != nil {
			// The helper died before it was ready: its exit says why (killed by the
			// cgroup's OOM killer, or exited because TestMain lacks HelperMain).
			werr := cmd.Wait()
			c.t.Fatalf("cgrouptest helper %s %v (pid %d): %v; exit: %v; stderr %q (does TestMain call cgrouptest.HelperMain? is the memory limit too small for the helper?)", mode, args, cmd.Process.Pid, err, werr, stderr.String())
		}
	case <-time.After(10 * time.Second):
		c.t.Fatalf("cgrouptest helper %s %v (pid %d) not ready after 10s", mode, args, cmd.Process.Pid)
	}
	return cmd
}

// cleanup kills everything in the cgroup, reaps what Start forked and removes every
// directory, reporting what it could not do.
func (c *Cgroup) cleanup() {
	t := c.t
	if c.unified != "" {
		// cgroup.kill (5.14+) kills the whole v2 cgroup at once; the loop below is the
		// fallback and the check.
		if err := writeFile(filepath.Join(c.unified, "cgroup.kill"), "1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Logf("cgrouptest cleanup: %v", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, dir := range c.dirs {
		for {
			pids, err := readProcs(dir)
			if errors.Is(err, fs.ErrNotExist) {
				break // the test removed it itself
			}
			if err != nil {
				t.Errorf("cgrouptest cleanup: %v", err)
				break
			}
			if len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("cgrouptest cleanup: %s still holds pids %v after 10s", dir, pids)
				break
			}
			for _, pid := range pids {
				if pid == os.Getpid() {
					// Never kill the test binary, whatever put it there.
					t.Errorf("cgrouptest cleanup: the test process itself is in %s", dir)
					continue
				}
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	c.reap(deadline)
	for i := len(c.dirs) - 1; i >= 0; i-- {
		dir := c.dirs[i]
		for {
			err := unix.Rmdir(dir)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				t.Errorf("cgrouptest cleanup: rmdir %s: %v", dir, err)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// reap collects the exit status of the processes Start forked, so none stays a zombie.
// One the test already waited for is gone (ECHILD) and skipped.
func (c *Cgroup) reap(deadline time.Time) {
	c.mu.Lock()
	pids := slices.Clone(c.started)
	c.mu.Unlock()
	for _, pid := range pids {
		for {
			got, err := unix.Wait4(pid, nil, unix.WNOHANG, nil)
			if got == pid || errors.Is(err, unix.ECHILD) {
				break
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				c.t.Errorf("cgrouptest cleanup: wait for pid %d: %v", pid, err)
				break
			}
			if time.Now().After(deadline) {
				c.t.Errorf("cgrouptest cleanup: pid %d did not exit after SIGKILL", pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func readProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s/cgroup.procs: %q is not a pid", dir, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// writeFile writes a cgroup control file, naming the file and value on failure.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, werr)
	}
	return cerr
}
