package system

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostname is every machine's hostname, and so the Node name plinthd registers.
const hostname = "systest"

// BootOptions adds to what Boot gives every machine.
type BootOptions struct {
	// BindRO maps host paths to paths in the machine, read only (HOST:MACHINE or HOST).
	BindRO []string
	// WritableCgroups remounts the machine's v1 controller hierarchies read-write. nspawn
	// mounts them read-only on a hybrid host (only name=systemd and the v2 tree are
	// writable), which leaves plinthd no memory, pids or cpu cgroups for pods. The
	// machine's cgroup namespace is rooted at its own unique cgroups (machineCgroups),
	// so what it writes stays below them.
	WritableCgroups bool
}

// Machine is a booted systemd-nspawn container.
type Machine struct {
	Name string
	// dir holds the overlay's upper, work and merged directories and the console log.
	dir     string
	merged  string
	cmd     *exec.Cmd
	exited  chan struct{}
	leader  int
	cgroups *machineCgroups
}

// Boot boots root (see Root) as a fresh machine: an overlay on root (so root stays as
// it is), a unique name, a private network namespace with loopback only, and unique
// cgroups. It returns once the machine's systemd reports the system running (or
// degraded). The test's cleanup powers it off and removes all of it.
func Boot(t testing.TB, root string, opts BootOptions) *Machine {
	t.Helper()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	m := &Machine{Name: "plinth-systest-" + hex.EncodeToString(suffix), exited: make(chan struct{})}
	var err error
	if m.dir, err = os.MkdirTemp("/var/tmp", m.Name+"-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.teardown(t) })
	upper, work := filepath.Join(m.dir, "upper"), filepath.Join(m.dir, "work")
	m.merged = filepath.Join(m.dir, "merged")
	for _, d := range []string{upper, work, m.merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount("overlay", m.merged, "overlay", 0,
		fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", root, upper, work)); err != nil {
		t.Fatalf("overlay on %s: %v", root, err)
	}
	// The root carries the host's /etc/hostname from debootstrap, which the machine's
	// systemd would set over nspawn's --hostname.
	if err := os.WriteFile(filepath.Join(m.merged, "etc/hostname"), []byte(hostname+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A persistent journal, so a test can read it on the host after the machine has
	// powered off (HostJournal).
	if err := os.MkdirAll(filepath.Join(m.merged, "var/log/journal"), 0o755); err != nil {
		t.Fatal(err)
	}
	if m.cgroups, err = newMachineCgroups(m.Name); err != nil {
		t.Fatal(err)
	}

	args := []string{"--quiet", "--directory", m.merged, "--machine", m.Name, "--hostname", hostname,
		// No systemd runs on the host to register with or to give a scope.
		"--register=no", "--keep-unit",
		"--private-network",
		// nspawn's seccomp filter refuses the keyring calls (keyrings are not
		// namespaced); runc gives each container a new session keyring and fails
		// without them, as on a real host it would not.
		"--system-call-filter=add_key keyctl request_key",
		"--boot"}
	for _, b := range opts.BindRO {
		args = append(args, "--bind-ro="+b)
	}
	console, err := os.Create(filepath.Join(m.dir, "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close()
	// A shell joins the machine's cgroups, then becomes systemd-nspawn.
	m.cmd = exec.Command("/bin/sh", append([]string{"-c",
		`for f in $PLINTH_CGROUP_PROCS; do echo $$ >"$f" || exit 1; done; exec systemd-nspawn "$@"`, "sh"}, args...)...)
	m.cmd.Env = append(os.Environ(), "PLINTH_CGROUP_PROCS="+strings.Join(m.cgroups.procsFiles(), " "))
	m.cmd.Stdout, m.cmd.Stderr = console, console
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("systemd-nspawn: %v", err)
	}
	go func() { _ = m.cmd.Wait(); close(m.exited) }()

	start := time.Now()
	m.waitFor(t, 60*time.Second, "the machine's init process", func() (bool, string) {
		select {
		case <-m.exited:
			t.Fatalf("systemd-nspawn exited while booting:\n%s", m.consoleTail(30))
		default:
		}
		// nspawn's only child is the machine's init once the container is set up.
		m.leader = childOf(m.cmd.Process.Pid)
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", m.leader))
		return m.leader != 0 && strings.TrimSpace(string(comm)) == "systemd", fmt.Sprintf("child %d (%s)", m.leader, strings.TrimSpace(string(comm)))
	})
	m.waitFor(t, 60*time.Second, "the machine's system running", func() (bool, string) {
		out, _ := m.Exec("systemctl", "is-system-running")
		state := strings.TrimSpace(out)
		return state == "running" || state == "degraded", state
	})
	if opts.WritableCgroups {
		m.Run(t, "sh", "-c", `for d in /sys/fs/cgroup/*/; do
			[ "$(stat -fc %T "$d")" = cgroupfs ] || continue
			findmnt -n -o OPTIONS "$d" | grep -q '^ro' && mount -o remount,bind,rw "$d"
		done; true`)
	}
	t.Logf("machine %s booted in %s (root %s)", m.Name, time.Since(start).Round(100*time.Millisecond), root)
	return m
}

// Exec runs a command in the machine (all of its namespaces, its root) with a clean
// environment and returns its combined output.
func (m *Machine) Exec(args ...string) (string, error) {
	full := append([]string{"-t", strconv.Itoa(m.leader), "-m", "-u", "-i", "-n", "-p", "-C", "-r", "-w", "--",
		"env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}, args...)
	var out bytes.Buffer
	cmd := exec.Command("nsenter", full...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("in %s: %s: %w", m.Name, strings.Join(args, " "), err)
	}
	return out.String(), err
}

// Run is Exec that fails the test on error.
func (m *Machine) Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := m.Exec(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, tail([]byte(out), 40))
	}
	return out
}

// WriteFile writes a file in the machine, creating its directory.
func (m *Machine) WriteFile(t testing.TB, path, content string) {
	t.Helper()
	host := m.HostPath(path)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// CopyIn copies a host file into the machine.
func (m *Machine) CopyIn(t testing.TB, hostFile, path string) {
	t.Helper()
	data, err := os.ReadFile(hostFile)
	if err != nil {
		t.Fatal(err)
	}
	m.WriteFile(t, path, string(data))
}

// HostPath is where a path of the machine's root is on the host. It stays readable
// after the machine powered off, until the test's cleanup.
func (m *Machine) HostPath(path string) string { return filepath.Join(m.merged, path) }

// Unit is what systemctl show says about a unit.
type Unit map[string]string

// Show returns a unit's properties (systemctl show).
func (m *Machine) Show(t testing.TB, unit string) Unit {
	t.Helper()
	out := m.Run(t, "systemctl", "show", unit)
	u := Unit{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			u[k] = v
		}
	}
	return u
}

// Journal returns the last lines of a unit's journal, for failure messages.
func (m *Machine) Journal(unit string, lines int) string {
	out, _ := m.Exec("journalctl", "--no-pager", "-o", "cat", "-n", strconv.Itoa(lines), "-u", unit)
	return out
}

// JournalSince returns a unit's journal from since on.
func (m *Machine) JournalSince(unit string, since time.Time) string {
	out, _ := m.Exec("journalctl", "--no-pager", "-o", "cat", "--since", fmt.Sprintf("@%d", since.Unix()), "-u", unit)
	return out
}

// HostJournal reads a unit's journal from the machine's files with the host's
// journalctl; it works after the machine powered off (Poweroff), when Exec no longer can.
func (m *Machine) HostJournal(unit string) (string, error) {
	out, err := exec.Command("journalctl", "--no-pager", "-o", "cat", "--directory", m.HostPath("/var/log/journal"),
		"-u", unit).CombinedOutput()
	return string(out), err
}

// Poweroff powers the machine off with systemctl poweroff, as an operator would, and
// waits for systemd-nspawn to exit.
func (m *Machine) Poweroff(t testing.TB, timeout time.Duration) {
	t.Helper()
	m.StartPoweroff(t)
	m.WaitHalted(t, timeout)
}

// StartPoweroff queues a poweroff and returns at once, so a test can watch the shutdown
// (inhibitor locks, the node's status) with Exec while it runs; WaitHalted ends it.
func (m *Machine) StartPoweroff(t testing.TB) {
	t.Helper()
	m.Run(t, "systemctl", "poweroff", "--no-block")
}

// WaitHalted waits for the machine to finish halting.
func (m *Machine) WaitHalted(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-m.exited:
	case <-time.After(timeout):
		t.Fatalf("machine %s still running %s after systemctl poweroff:\n%s", m.Name, timeout, m.consoleTail(30))
	}
}

// WaitFor polls cond every 200 ms until it holds, failing the test after timeout with
// the last thing cond saw.
func (m *Machine) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	return m.waitFor(t, timeout, what, cond)
}

func (m *Machine) waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < timeout {
		ok, seen := cond()
		if ok {
			return time.Since(start)
		}
		last = seen
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s; last seen: %s", what, timeout, last)
	return 0
}

// teardown stops the machine (a clean poweroff through SIGTERM to nspawn, which asks
// the machine's systemd to halt; SIGKILL to everything in its cgroups when that takes
// too long) and removes its overlay and cgroups.
func (m *Machine) teardown(t testing.TB) {
	if m.cmd != nil && m.cmd.Process != nil {
		select {
		case <-m.exited:
		default:
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-m.exited:
			case <-time.After(20 * time.Second):
				t.Logf("machine %s did not halt within 20s of SIGTERM; killing it", m.Name)
				m.cgroups.kill()
				_ = m.cmd.Process.Kill()
				<-m.exited
			}
		}
	}
	if t.Failed() {
		t.Logf("machine %s console (last lines):\n%s", m.Name, m.consoleTail(40))
	}
	if m.cgroups != nil {
		m.cgroups.kill()
		if err := m.cgroups.remove(); err != nil {
			t.Errorf("removing machine cgroups: %v", err)
		}
	}
	if m.merged != "" {
		if err := syscall.Unmount(m.merged, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL {
			t.Errorf("unmounting %s: %v", m.merged, err)
		}
	}
	if err := os.RemoveAll(m.dir); err != nil {
		t.Errorf("removing %s: %v", m.dir, err)
	}
}

func (m *Machine) consoleTail(n int) string {
	data, _ := os.ReadFile(filepath.Join(m.dir, "console.log"))
	return tail(data, n)
}

// childOf returns a child of pid (nspawn has exactly one once the machine's init runs),
// or 0.
func childOf(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) != 1 {
		return 0
	}
	child, _ := strconv.Atoi(f[0])
	return child
}
