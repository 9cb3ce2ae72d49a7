package e2e

import (
	"bytes"
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

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries returns the directory holding plinthd and plinth-control.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if d := os.Getenv("PLINTH_BIN_DIR"); d != "" {
			binDir = d
			return
		}
		dir, err := os.MkdirTemp("", "plinth-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", dir+"/", "github.com/plinth/plinth/cmd/...")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
		binDir = dir
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// process is a started binary whose output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func start(t *testing.T, name string, env []string, args ...string) *process {
	t.Helper()
	return startIn(t, "", name, env, args...)
}

// startIn starts the binary in the network namespace at netnsPath (through nsenter,
// which execs it: the process is the binary itself); "" is the test's own namespace.
func startIn(t *testing.T, netnsPath, name string, env []string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binaries(t), strings.Fields(name)[0])
	cmd := exec.Command(bin, args...)
	if netnsPath != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + netnsPath, bin}, args...)...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("--- %s log (%s):\n%s", name, logPath, tail(logPath, 40))
		}
	})
	return p
}

func (p *process) kill(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	<-p.done
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

// eventually polls cond until it holds or timeout passes; cond says what it saw.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
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

// kubectl runs the installed kubectl, unmodified.
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	return kubectlIn(t, "", kubeconfig, args...)
}

// kubectlIn runs the installed kubectl in the network namespace at netnsPath ("" is
// the test's own).
func kubectlIn(t *testing.T, netnsPath, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("the end-to-end tests need the installed kubectl: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := append([]string{path, "--kubeconfig", kubeconfig}, args...)
	if netnsPath != "" {
		argv = append([]string{"nsenter", "--net=" + netnsPath}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cluster is a running plinth-control with its data directory.
type cluster struct {
	dataDir, kubeconfig, server string
	control                     *process
	// netns is the network namespace it runs in ("" for the test's own).
	netns string
}

// kubectl runs kubectl as admin in the cluster's network namespace.
func (c *cluster) kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return kubectlIn(t, c.netns, c.kubeconfig, args...)
}

func startControl(t *testing.T, extra ...string) *cluster {
	t.Helper()
	return startControlOnPort(t, freePort(t), extra...)
}

// startControlOnPort starts plinth-control on port; a --data-dir in extra replaces the
// fresh temporary one (to restart on the same data).
func startControlOnPort(t *testing.T, port int, extra ...string) *cluster {
	t.Helper()
	return startControlIn(t, "", port, extra...)
}

// startControlIn starts plinth-control in the network namespace at netnsPath.
func startControlIn(t *testing.T, netnsPath string, port int, extra ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i+1 < len(extra); i++ {
		if extra[i] == "--data-dir" {
			dir = extra[i+1]
		}
	}
	args := append([]string{"--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port)}, extra...)
	c := &cluster{
		dataDir:    dir,
		kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		server:     fmt.Sprintf("https://127.0.0.1:%d", port),
		netns:      netnsPath,
	}
	c.control = startIn(t, netnsPath, "plinth-control", nil, args...)
	eventually(t, 60*time.Second, "plinth-control serving", func() (bool, string) {
		if c.control.exited() {
			t.Fatalf("plinth-control exited: %v\n%s", c.control.err, tail(c.control.log, 20))
		}
		out, err := c.kubectl(t, "get", "--raw", "/readyz")
		return err == nil && out == "ok", fmt.Sprint(out, err)
	})
	return c
}

// nodeKubeconfig issues node credentials through the plinth-control command.
func (c *cluster) nodeKubeconfig(t *testing.T, node string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), node+".kubeconfig")
	cmd := exec.Command(filepath.Join(binaries(t), "plinth-control"), "issue-node-credentials",
		"--data-dir", c.dataDir, "--server", c.server, "--out", out, node)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("issue-node-credentials: %v: %s", err, b)
	}
	return out
}
