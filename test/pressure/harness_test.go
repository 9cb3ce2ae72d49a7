package pressure

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	// builtBinaries is the temporary directory binaries built, removed by TestMain.
	builtBinaries string
)

// binaries returns the directory holding plinthd and plinth-control: PLINTH_BIN_DIR,
// or a fresh go build.
func binaries(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		if d := os.Getenv("PLINTH_BIN_DIR"); d != "" {
			binDir = d
			return
		}
		dir, err := os.MkdirTemp("", "plinth-pressure-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBinaries = dir
		cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/plinth/plinth/cmd/...")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
		binDir = dir
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binDir
}

func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// process is a started binary whose output goes to a log file; it is killed when the
// test ends.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func startProcess(tb testing.TB, name string, args ...string) *process {
	tb.Helper()
	logPath := filepath.Join(tb.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binaries(tb), name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.stop()
		if tb.Failed() {
			tb.Logf("--- %s log (%s):\n%s", name, logPath, tail(logPath, 40))
		}
	})
	return p
}

// stop sends SIGTERM, then SIGKILL after 5 s, and waits for the process.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// eventually polls cond every interval until it holds or timeout passes.
func eventually(tb testing.TB, timeout, interval time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s; last seen: %s", what, timeout, last)
		}
		time.Sleep(interval)
	}
}

// cluster is a running plinth-control.
type cluster struct {
	dataDir, kubeconfig, server string
	admin                       kubernetes.Interface
	control                     *process
}

func startControl(tb testing.TB) *cluster {
	tb.Helper()
	port := freePort(tb)
	dir := tb.TempDir()
	c := &cluster{dataDir: dir, kubeconfig: filepath.Join(dir, "admin.kubeconfig"), server: fmt.Sprintf("https://127.0.0.1:%d", port)}
	c.control = startProcess(tb, "plinth-control", "--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port))
	eventually(tb, 60*time.Second, 100*time.Millisecond, "plinth-control serving", func() (bool, string) {
		if c.control.exited() {
			tb.Fatalf("plinth-control exited: %v\n%s", c.control.err, tail(c.control.log, 20))
		}
		if _, err := os.Stat(c.kubeconfig); err != nil {
			return false, err.Error()
		}
		if c.admin == nil {
			c.admin = clientFor(tb, c.kubeconfig)
		}
		_, err := c.admin.Discovery().ServerVersion()
		return err == nil, fmt.Sprint(err)
	})
	return c
}

func clientFor(tb testing.TB, kubeconfig string) kubernetes.Interface {
	tb.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // the watchers poll fast; no client-side throttling
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// nodeKubeconfig issues node credentials through the plinth-control command.
func (c *cluster) nodeKubeconfig(tb testing.TB, node string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), node+".kubeconfig")
	cmd := exec.Command(filepath.Join(binaries(tb), "plinth-control"), "issue-node-credentials",
		"--data-dir", c.dataDir, "--server", c.server, "--out", out, node)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("issue-node-credentials: %v: %s", err, b)
	}
	return out
}

// plinthd is a running plinthd registered as node.
type plinthd struct {
	node    string
	healthz string
	proc    *process
}

// startPlinthd runs plinthd as node against c with the given extra configuration
// (YAML lines) and waits until its Node reports MemoryPressure.
func startPlinthd(tb testing.TB, c *cluster, node, extraConfig string) *plinthd {
	tb.Helper()
	dir := tb.TempDir()
	healthz := fmt.Sprintf("127.0.0.1:%d", freePort(tb))
	config := filepath.Join(dir, "plinthd.yaml")
	// The Service proxy stays off: it would program nftables in the machine's own
	// network namespace. The node API takes a free loopback port, never the shared
	// :10250.
	nodeAPI := fmt.Sprintf("127.0.0.1:%d", freePort(tb))
	if err := os.WriteFile(config, []byte("healthzBindAddress: "+healthz+"\nnodeAPIBindAddress: "+nodeAPI+"\nproxy:\n  enabled: false\n"+extraConfig), 0o600); err != nil {
		tb.Fatal(err)
	}
	p := &plinthd{node: node, healthz: healthz}
	p.proc = startProcess(tb, "plinthd", "--config", config, "--config-dir", "", "--kubeconfig", c.nodeKubeconfig(tb, node),
		"--hostname-override", node, "--lock-file", filepath.Join(dir, "plinthd.lock"), "--state-dir", filepath.Join(dir, "state"))
	eventually(tb, 30*time.Second, 100*time.Millisecond, "node "+node+" reports MemoryPressure", func() (bool, string) {
		if p.proc.exited() {
			tb.Fatalf("plinthd exited: %v\n%s", p.proc.err, tail(p.proc.log, 20))
		}
		n, err := c.admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := findCondition(n, corev1.NodeMemoryPressure)
		return cond != nil, fmt.Sprint(n.Status.Conditions)
	})
	return p
}

func findCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// conditionWatcher polls a Node every 20 ms and records when a condition was first
// seen with each status; 20 ms is the resolution of every time measured through it.
type conditionWatcher struct {
	mu   sync.Mutex
	seen map[corev1.ConditionStatus]time.Time
	last *corev1.NodeCondition
	err  error
}

const watchInterval = 20 * time.Millisecond

func watchCondition(ctx context.Context, client kubernetes.Interface, node string, typ corev1.NodeConditionType) *conditionWatcher {
	w := &conditionWatcher{seen: map[corev1.ConditionStatus]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			now := time.Now()
			w.mu.Lock()
			w.err = err
			if err == nil {
				if c := findCondition(n, typ); c != nil {
					cc := *c
					w.last = &cc
					if _, ok := w.seen[c.Status]; !ok {
						w.seen[c.Status] = now
					}
				}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(watchInterval):
			}
		}
	}()
	return w
}

// reset forgets what was seen, so the next change can be timed.
func (w *conditionWatcher) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = map[corev1.ConditionStatus]time.Time{}
}

// waitFor returns when status was first seen, waiting up to timeout for it.
func (w *conditionWatcher) waitFor(status corev1.ConditionStatus, timeout time.Duration) (time.Time, *corev1.NodeCondition, bool) {
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		at, ok := w.seen[status]
		last := w.last
		w.mu.Unlock()
		if ok {
			return at, last, true
		}
		if time.Now().After(deadline) {
			return time.Time{}, last, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
