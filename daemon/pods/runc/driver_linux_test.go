//go:build linux

package runc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/pods/bundle"
	"github.com/plinth/plinth/daemon/pods/crilog"
	"github.com/plinth/plinth/daemon/pods/podtest"
	"github.com/plinth/plinth/daemon/pods/sandbox"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// testEnv is one test's driver, state directories, netns and cgroup parent.
type testEnv struct {
	t       testing.TB
	dir     string
	cfg     Config
	d       *Driver
	netns   kerneltest.NetNSHandle
	cgroups string
}

func newTestEnv(t testing.TB) *testEnv {
	kerneltest.Require(t, kerneltest.Root, kerneltest.Runc, cgrouptest.Cgroups, podtest.Busybox)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, dir: t.TempDir()}
	e.cgroups = podtest.CgroupParent(t) // removed after the containers (cleanups run last-first)
	e.netns = kerneltest.NewNetNS(t)
	e.cfg = Config{
		Root:        filepath.Join(e.dir, "runc"),
		StateDir:    filepath.Join(e.dir, "checkpoints"),
		ShimCommand: []string{"/usr/bin/env", testShimEnv + "=1", exe, "-test.run=^$", "--"},
	}
	e.d = e.newDriver()
	return e
}

func (e *testEnv) newDriver() *Driver {
	d, err := New(e.cfg, clock.RealClock{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// container writes a bundle for a one-container pod and returns its ID and log path.
func (e *testEnv) container(name string, c corev1.Container) (id, logPath string) {
	return e.containerIn(name, c, bundle.Sandbox{NetNSPath: e.netns.Path, Hostname: "p-" + name})
}

func (e *testEnv) containerIn(name string, c corev1.Container, sb bundle.Sandbox) (id, logPath string) {
	return e.containerWith(name, c, sb, nil)
}

func (e *testEnv) containerWith(name string, c corev1.Container, sb bundle.Sandbox, seccomp *specs.LinuxSeccomp) (id, logPath string) {
	t := e.t
	c.Name, c.Image = name, "busybox"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + name, Namespace: "test", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	id = fmt.Sprintf("plinth-test-%d-%s", os.Getpid(), name)
	bdir := filepath.Join(e.dir, "pods", name)
	podtest.BusyboxRootfs(t, filepath.Join(bdir, "rootfs"))
	users, err := bundle.LookupUsers(filepath.Join(bdir, "rootfs"))
	if err != nil {
		t.Fatal(err)
	}
	term := filepath.Join(bdir, "termination-log")
	// World-writable as kubelet makes it: the container may run as any user.
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(term, 0o666); err != nil {
		t.Fatal(err)
	}
	limits, err := RuntimeLimits()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := bundle.Build(bundle.Input{
		MaxNOFILE: limits.MaxNOFILE, MinOOMScoreAdj: limits.MinOOMScoreAdj,
		Pod: pod, Container: &pod.Spec.Containers[0], ContainerID: id, Users: users,
		RootfsPath: "rootfs", Sandbox: sb, Seccomp: seccomp,
		TerminationLogPath: term, CgroupParent: e.cgroups + "/pod" + string(pod.UID),
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(spec, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bdir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	logPath = filepath.Join(e.dir, "logs", "test_p-"+name+"_uid-"+name, name, "0.log")
	t.Cleanup(func() {
		if err := e.d.Delete(context.Background(), id); err != nil {
			t.Errorf("delete %s: %v", id, err)
		}
	})
	return id, logPath
}

func (e *testEnv) run(name string, c corev1.Container) (id, logPath string) {
	return e.start(name)(e.container(name, c))
}

// start returns a function that creates and starts the container whose bundle
// container or containerIn wrote.
func (e *testEnv) start(name string) func(id, logPath string) (string, string) {
	return func(id, logPath string) (string, string) {
		e.createAndStart(name, id, logPath)
		return id, logPath
	}
}

func (e *testEnv) createAndStart(name, id, logPath string) {
	ctx := context.Background()
	if _, err := e.d.Create(ctx, CreateOptions{ID: id, Bundle: filepath.Join(e.dir, "pods", name), LogPath: logPath}); err != nil {
		e.t.Fatalf("create: %v", err)
	}
	if err := e.d.Start(ctx, id); err != nil {
		e.t.Fatalf("start: %v", err)
	}
}

func (e *testEnv) wait(id string, within time.Duration) ExitStatus {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	st, err := e.d.Wait(ctx, id)
	if err != nil {
		e.t.Fatalf("wait %s: %v", id, err)
	}
	return st
}

func readLog(t *testing.T, path string) []crilog.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []crilog.Record
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		r, err := crilog.ParseRecord(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func hasRecord(recs []crilog.Record, stream, content string) bool {
	for _, r := range recs {
		if r.Stream == stream && r.Content == content && !r.Partial {
			return true
		}
	}
	return false
}

func TestContainerRunsLogsAndExits(t *testing.T) {
	e := newTestEnv(t)
	id, logPath := e.run("hello", corev1.Container{
		Command:         []string{"sh", "-c", `echo "hello $(id -u):$(id -g) $(hostname)"; echo oops >&2; echo done > /dev/termination-log; exit 3`},
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr(int64(1000))},
		Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
	})
	st := e.wait(id, 30*time.Second)
	if st.Code != 3 || st.Signal != 0 || st.OOMKilled || st.Unknown {
		t.Errorf("exit = %+v, want code 3", st)
	}
	recs := readLog(t, logPath)
	if !hasRecord(recs, crilog.Stdout, "hello 1000:1000 p-hello") || !hasRecord(recs, crilog.Stderr, "oops") {
		t.Errorf("log records %+v lack the container's stdout and stderr lines", recs)
	}
	term, err := os.ReadFile(filepath.Join(e.dir, "pods", "hello", "termination-log"))
	if err != nil || strings.TrimSpace(string(term)) != "done" {
		t.Errorf("termination log = %q, %v", term, err)
	}
	// The memory limit reached the container's cgroup.
	cp, err := e.d.Checkpoint(id)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := e.d.host.Memory(cp.CgroupPath); err != nil || m.LimitBytes != 64<<20 {
		t.Errorf("container cgroup %s memory limit = %d, %v; want 64 MiB", cp.CgroupPath, m.LimitBytes, err)
	}
}

func TestCreateErrorNamesTheProblem(t *testing.T) {
	e := newTestEnv(t)
	id, logPath := e.container("missing", corev1.Container{Command: []string{"/no/such/program"}})
	ctx := context.Background()
	_, err := e.d.Create(ctx, CreateOptions{ID: id, Bundle: filepath.Join(e.dir, "pods", "missing"), LogPath: logPath})
	if err == nil {
		err = e.d.Start(ctx, id)
	}
	if err == nil || !strings.Contains(err.Error(), "/no/such/program") {
		t.Fatalf("create/start of a missing program: %v, want an error naming it", err)
	}
}

func TestOOMKilled(t *testing.T) {
	e := newTestEnv(t)
	id, _ := e.run("oom", corev1.Container{
		// dd allocates its 64 MiB block and fills it from /dev/zero.
		Command:   []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}},
	})
	st := e.wait(id, 30*time.Second)
	if !st.OOMKilled || st.Signal != int(unix.SIGKILL) || st.Code != 137 {
		t.Errorf("exit = %+v, want OOMKilled by SIGKILL (137)", st)
	}
}

func TestStopHonoursGrace(t *testing.T) {
	e := newTestEnv(t)
	polite, politeLog := e.run("polite", corev1.Container{
		Command: []string{"sh", "-c", `trap 'echo term; exit 7' TERM; echo up; while true; do sleep 0.1; done`}})
	stubborn, _ := e.run("stubborn", corev1.Container{
		Command: []string{"sh", "-c", `trap '' TERM; echo up; while true; do sleep 0.1; done`}})
	waitForLog(t, politeLog, "up")

	ctx := context.Background()
	st, err := e.d.Stop(ctx, polite, unix.SIGTERM, 30*time.Second)
	if err != nil || st.Code != 7 {
		t.Errorf("stop of a container handling SIGTERM = %+v, %v; want exit 7", st, err)
	}
	if !hasRecord(readLog(t, politeLog), crilog.Stdout, "term") {
		t.Error("the container's SIGTERM handler did not run")
	}
	start := time.Now()
	st, err = e.d.Stop(ctx, stubborn, unix.SIGTERM, time.Second)
	if err != nil || st.Signal != int(unix.SIGKILL) {
		t.Errorf("stop of a container ignoring SIGTERM = %+v, %v; want SIGKILL after the grace period", st, err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("SIGKILL came after %v, before the 1s grace period", took)
	}
}

func TestAdoptAfterRestart(t *testing.T) {
	e := newTestEnv(t)
	id, logPath := e.run("adopt", corev1.Container{
		Command: []string{"sh", "-c", `trap 'exit 0' TERM; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done`}})
	waitForLog(t, logPath, "tick 1")
	before, err := e.d.State(context.Background(), id)
	if err != nil || before.Status != "running" {
		t.Fatalf("state = %+v, %v", before, err)
	}
	cp, err := e.d.Checkpoint(id)
	if err != nil {
		t.Fatal(err)
	}
	if ppid := parentOf(t, cp.ShimPID); ppid == os.Getpid() {
		t.Errorf("shim %d is a child of plinthd (the test), so it would die with it", cp.ShimPID)
	}

	// A new driver, as after a plinthd restart, finds the container by its checkpoint.
	e.d = e.newDriver()
	list, err := e.d.List()
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("List = %+v, %v; want the running container", list, err)
	}
	after, err := e.d.State(context.Background(), id)
	if err != nil || after.Pid != before.Pid || after.Status != "running" || list[0].InitPID != before.Pid {
		t.Fatalf("adopted state = %+v (checkpoint pid %d), %v; want running with pid %d", after, list[0].InitPID, err, before.Pid)
	}
	// The log keeps flowing and the exit is still observed.
	n := len(readLog(t, logPath))
	waitForLog(t, logPath, "tick "+strconv.Itoa(n+1))
	st, err := e.d.Stop(context.Background(), id, unix.SIGTERM, 30*time.Second)
	if err != nil || st.Code != 0 || st.Signal != 0 {
		t.Errorf("stop of the adopted container = %+v, %v; want exit 0", st, err)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	e := newTestEnv(t)
	id, _ := e.run("sleeper", corev1.Container{Command: []string{"sleep", "1000"}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.d.Wait(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait on a running container with an expiring context = %v, want DeadlineExceeded", err)
	}
	if exited, err := e.d.Exited(id); err != nil || exited {
		t.Errorf("Exited of a running container = %v, %v; want false", exited, err)
	}
	if out, code, err := e.d.Exec(context.Background(), id, []string{"sh", "-c", "echo in; exit 4"}); err != nil || code != 4 || strings.TrimSpace(string(out)) != "in" {
		t.Errorf("exec = %q, %d, %v; want \"in\", 4", out, code, err)
	}
	if err := e.d.Kill(context.Background(), id, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(id, 30*time.Second); st.Signal != int(unix.SIGKILL) {
		t.Errorf("exit after SIGKILL = %+v", st)
	}
	if exited, err := e.d.Exited(id); err != nil || !exited {
		t.Errorf("Exited after the exit was recorded = %v, %v; want true", exited, err)
	}
	if _, err := e.d.Exited("no-such-container"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Exited of an unknown container = %v, want ErrNotFound", err)
	}
}

func TestPodContainersShareSandboxNamespaces(t *testing.T) {
	e := newTestEnv(t)
	sb, err := sandbox.Create(sandbox.Options{Dir: filepath.Join(e.dir, "sandbox"), Hostname: "shared-pod",
		NetNSPath: e.netns.Path, Hosts: []byte("127.0.0.1 localhost\n"), ResolvConf: []byte("nameserver 10.96.0.10\n")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sandbox.Remove(filepath.Join(e.dir, "sandbox")); err != nil {
			t.Error(err)
		}
	})
	show := `echo "$(hostname) $(readlink /proc/self/ns/ipc) $(readlink /proc/self/ns/uts) $(cat /etc/resolv.conf)"`
	a, aLog := e.start("a")(e.containerIn("a", corev1.Container{Command: []string{"sh", "-c", show}}, sb))
	e.wait(a, 30*time.Second)
	b, bLog := e.start("b")(e.containerIn("b", corev1.Container{Command: []string{"sh", "-c", show}}, sb))
	e.wait(b, 30*time.Second)
	aRecs, bRecs := readLog(t, aLog), readLog(t, bLog)
	if len(aRecs) != 1 || len(bRecs) != 1 {
		t.Fatalf("logs: a %+v, b %+v", aRecs, bRecs)
	}
	if aRecs[0].Content != bRecs[0].Content || !strings.HasPrefix(aRecs[0].Content, "shared-pod ipc:[") || !strings.HasSuffix(aRecs[0].Content, "nameserver 10.96.0.10") {
		t.Errorf("containers of one pod see %q and %q, want the same hostname, IPC and UTS namespaces and resolv.conf", aRecs[0].Content, bRecs[0].Content)
	}
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(aRecs[0].Content, hostIPC) {
		t.Errorf("the pod's containers share the node's IPC namespace %s", hostIPC)
	}
}

func TestLogsRotateBySize(t *testing.T) {
	e := newTestEnv(t)
	e.cfg.LogMaxBytes, e.cfg.LogMaxFiles = 4096, 2
	e.d = e.newDriver()
	id, logPath := e.run("chatty", corev1.Container{Command: []string{"sh", "-c", `i=0; while [ $i -lt 500 ]; do echo "line $i"; i=$((i+1)); done`}})
	if st := e.wait(id, 30*time.Second); st.Code != 0 {
		t.Fatalf("exit %+v", st)
	}
	files, _ := filepath.Glob(logPath + "*")
	if len(files) != 2 {
		t.Errorf("log files %q, want the live one and one rotated", files)
	}
	recs := readLog(t, logPath)
	if len(recs) == 0 || recs[len(recs)-1].Content != "line 499" {
		t.Errorf("live log ends with %+v, want line 499", recs[len(recs)-1:])
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() > 4096 {
			t.Errorf("%s: %v bytes, %v; want at most 4096", f, st.Size(), err)
		}
	}
}

func TestSeccompProfileApplies(t *testing.T) {
	e := newTestEnv(t)
	// A Localhost-style profile as daemon/seccomp resolves it: everything allowed but
	// mkdir, which fails with EPERM.
	profile := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64},
		Syscalls:      []specs.LinuxSyscall{{Names: []string{"mkdir", "mkdirat"}, Action: specs.ActErrno, ErrnoRet: ptr(uint(1))}},
	}
	id, logPath := e.start("seccomp")(e.containerWith("seccomp", corev1.Container{
		Command: []string{"sh", "-c", `mkdir /tmp/denied 2>&1 || echo mkdir-failed; touch /tmp/file && echo touch-ok`}},
		bundle.Sandbox{NetNSPath: e.netns.Path, Hostname: "p"}, profile))
	if st := e.wait(id, 30*time.Second); st.Code != 0 {
		t.Errorf("exit %+v", st)
	}
	recs := readLog(t, logPath)
	if !hasRecord(recs, crilog.Stdout, "mkdir-failed") || !hasRecord(recs, crilog.Stdout, "touch-ok") {
		t.Errorf("log %+v: want mkdir denied and other syscalls working", recs)
	}
	if !hasRecord(recs, crilog.Stdout, "mkdir: can't create directory '/tmp/denied': Operation not permitted") {
		t.Errorf("log %+v: want mkdir's EPERM message", recs)
	}
}

// waitForLog polls the CRI log until a stdout line equals want (10 s at most).
func waitForLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil && hasRecord(readLog(t, path), crilog.Stdout, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %q in %s after 10s", want, path)
}

func parentOf(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func ptr[T any](v T) *T { return &v }

func TestCreateReplacesAnInterruptedCreate(t *testing.T) {
	e := newTestEnv(t)
	id, logPath := e.container("again", corev1.Container{Command: []string{"sh", "-c", "echo second"}})
	// What a plinthd killed between the shim's start and the checkpoint leaves behind.
	if err := os.MkdirAll(filepath.Join(e.cfg.StateDir, id), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.d.Create(ctx, CreateOptions{ID: id, Bundle: filepath.Join(e.dir, "pods", "again"), LogPath: logPath}); err != nil {
		t.Fatalf("create over an interrupted create: %v", err)
	}
	if _, err := e.d.Create(ctx, CreateOptions{ID: id, Bundle: filepath.Join(e.dir, "pods", "again"), LogPath: logPath}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second create of a recorded container: %v, want already exists", err)
	}
}

// Under systemd's Type=notify plinthd has NOTIFY_SOCKET; runc must not see it, or `runc
// start` waits for the container to notify readiness, which busybox never does.
func TestStartUnderNotifySocketReturns(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "plinth-notify-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(sockDir, "notify"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	t.Setenv("NOTIFY_SOCKET", sock.LocalAddr().String())
	e := newTestEnv(t)
	id, logPath := e.container("notify", corev1.Container{Command: []string{"sleep", "300"}})
	if _, err := e.d.Create(context.Background(), CreateOptions{ID: id, Bundle: filepath.Join(e.dir, "pods", "notify"), LogPath: logPath}); err != nil {
		t.Fatalf("create: %v", err)
	}
	// Far beyond a start's few milliseconds; were NOTIFY_SOCKET passed on, runc start
	// would never return.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.d.Start(ctx, id); err != nil {
		t.Fatalf("start with NOTIFY_SOCKET set: %v", err)
	}
	if s, err := e.d.State(context.Background(), id); err != nil || s.Status != "running" {
		t.Errorf("state = %+v, %v; want running", s, err)
	}
}
