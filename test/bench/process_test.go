package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on Linux.
const clockTicks = 100

// controlBinary returns plinth-control from PLINTH_BIN_DIR (as `make build` leaves it),
// or builds it into a temporary directory.
func controlBinary(b *testing.B) string {
	b.Helper()
	if dir := os.Getenv("PLINTH_BIN_DIR"); dir != "" {
		return filepath.Join(dir, "plinth-control")
	}
	out := b.TempDir()
	cmd := exec.Command("go", "build", "-o", out+"/", "github.com/plinth/plinth/cmd/plinth-control")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build plinth-control: %v\n%s", err, msg)
	}
	return filepath.Join(out, "plinth-control")
}

func freePort(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// controlProcess is plinth-control running as its own process, so its CPU time and
// memory can be read from /proc apart from the benchmark's.
type controlProcess struct {
	cmd        *exec.Cmd
	done       chan struct{}
	dataDir    string
	server     string
	kubeconfig string
	profiling  string // host:port of /debug/pprof/
	log        string
}

func startControlProcess(b *testing.B, extra ...string) *controlProcess {
	b.Helper()
	dir := b.TempDir()
	port, pport := freePort(b), freePort(b)
	p := &controlProcess{
		dataDir:    dir,
		server:     fmt.Sprintf("https://127.0.0.1:%d", port),
		kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		profiling:  fmt.Sprintf("127.0.0.1:%d", pport),
		log:        filepath.Join(dir, "plinth-control.log"),
	}
	args := append([]string{"--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--profiling-address", p.profiling}, extra...)
	started := startLogged(b, controlBinary(b), args, p.log)
	p.cmd, p.done = started.cmd, started.done
	waitUntil(b, started, time.Minute, func() bool {
		c, err := p.client()
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		raw, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(raw) == "ok"
	})
	return p
}

// loggedProcess is a child process writing stdout and stderr to one log file.
type loggedProcess struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	log  string
}

// startLogged starts binary with args, its output going to log. On cleanup it is sent
// SIGTERM and, after 20 s, killed; if the benchmark failed, its log's tail is printed.
func startLogged(b *testing.B, binary string, args []string, log string) *loggedProcess {
	b.Helper()
	logFile, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	p := &loggedProcess{cmd: exec.Command(binary, args...), done: make(chan struct{}), log: log}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		b.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	b.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if b.Failed() {
			b.Logf("%s log (%s):\n%s", filepath.Base(binary), log, tailFile(log, 30))
		}
	})
	return p
}

// waitUntil polls ready every 200 ms until it holds, failing the benchmark if p exits or
// timeout passes first (p's log is printed then by startLogged's cleanup).
func waitUntil(b *testing.B, p *loggedProcess, timeout time.Duration, ready func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !ready() {
		if p.exited() {
			b.Fatalf("%s exited", p.cmd.Path)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not ready after %s", p.cmd.Path, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exited reports whether the process has ended.
func (p *loggedProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// client is an administrator's client without client-side rate limits.
func (p *controlProcess) client() (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	return kubernetes.NewForConfig(cfg)
}

func tailFile(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cpuTime is the user plus system CPU time pid has used (pid 0: this process).
func cpuTime(pid int) (time.Duration, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces; utime and
	// stime are fields 14 and 15, the 12th and 13th after it.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no ')' in %q", path, data)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command, want at least 13", path, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%s: utime %q stime %q: %w", path, f[11], f[12], err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// memoryKiB reads a field of /proc/PID/status given in kB (VmRSS, VmHWM).
func memoryKiB(pid int, field string) (int64, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, field)
}

// loadAverage is the 1-minute load average.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}

// runQueueWait sums, over pid's threads, the time they spent runnable but waiting for a
// CPU (the second field of /proc/PID/task/TID/schedstat). Threads that exited are not
// counted, so a difference over a window is a lower bound.
func runQueueWait(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var total int64
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				total += ns
			}
		}
	}
	return time.Duration(total)
}
