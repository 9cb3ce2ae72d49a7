//go:build linux

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/daemon/pods/podtest"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// benchBinaries makes PLINTH_BIN_DIR hold plinth-control, plinthd, plinth-shim and
// plinthctl for the rest of the benchmark, building them into a temporary directory
// when it is unset.
func benchBinaries(b *testing.B) {
	b.Helper()
	if os.Getenv("PLINTH_BIN_DIR") != "" {
		return
	}
	out := b.TempDir()
	cmd := exec.Command("go", "build", "-o", out+"/", "github.com/plinth/plinth/cmd/...")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/...: %v\n%s", err, msg)
	}
	b.Setenv("PLINTH_BIN_DIR", out)
}

// podBenchNode is one plinthd that runs pods, as its own process so its CPU time and
// memory can be read from /proc. As in the end-to-end tests (test/e2e, newPodNode),
// its pod bridge, masquerade table and the pods' network namespaces live in a fresh
// network namespace (pods.networkNamespace) while plinthd itself stays in the
// machine's namespace to reach plinth-control and the registry on loopback; its
// containers run under a uniquely named cgroup parent and its directories are the
// benchmark's own. All of it is removed at cleanup, even when the benchmark fails.
type podBenchNode struct {
	name                         string
	cmd                          *exec.Cmd
	done                         chan struct{}
	log                          string
	runtimeDir, stateDir, logDir string
	cgroupParent                 string
	healthz, profiling           string // host:port
}

func startPodNode(b *testing.B, control *controlProcess, name string) *podBenchNode {
	b.Helper()
	kerneltest.Require(b, kerneltest.Root, kerneltest.Runc, kerneltest.Veth, kerneltest.NFTables, cgrouptest.Cgroups, podtest.Busybox)
	parent := podtest.CgroupParent(b) // removed last, once the containers are gone
	ns := kerneltest.NewNetNS(b)
	dir := b.TempDir()
	// A short runtime directory: runc and the shims put sockets under it.
	runtimeDir, err := os.MkdirTemp("", "plbench")
	if err != nil {
		b.Fatal(err)
	}
	n := &podBenchNode{name: name, done: make(chan struct{}), log: filepath.Join(dir, "plinthd.log"),
		runtimeDir: runtimeDir, stateDir: filepath.Join(dir, "state"), logDir: filepath.Join(dir, "logs"), cgroupParent: parent,
		healthz: fmt.Sprintf("127.0.0.1:%d", freePort(b)), profiling: fmt.Sprintf("127.0.0.1:%d", freePort(b))}
	b.Cleanup(func() { n.removeLeftovers(b) })

	kubeconfig := filepath.Join(dir, "node.kubeconfig")
	bin := os.Getenv("PLINTH_BIN_DIR")
	if out, err := exec.Command(filepath.Join(bin, "plinth-control"), "issue-node-credentials", "--data-dir", control.dataDir,
		"--server", control.server, "--out", kubeconfig, name).CombinedOutput(); err != nil {
		b.Fatalf("issue-node-credentials %s: %v: %s", name, err, out)
	}
	config := filepath.Join(dir, "plinthd.yaml")
	cfg := fmt.Sprintf(`healthzBindAddress: %s
profilingAddress: %s
nodeIP: 127.0.0.1
nodeAPIBindAddress: 127.0.0.1:%d
staticPodPath: %s
podLogsDir: %s
proxy:
  enabled: false
pods:
  enabled: true
  runtimeDir: %s
  cgroupParent: %s
  networkNamespace: %s
`, n.healthz, n.profiling, freePort(b), filepath.Join(dir, "manifests"), n.logDir, runtimeDir, parent, ns.Path)
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(n.log)
	if err != nil {
		b.Fatal(err)
	}
	n.cmd = exec.Command(filepath.Join(bin, "plinthd"), "--config", config, "--config-dir", "", "--kubeconfig", kubeconfig,
		"--hostname-override", name, "--lock-file", filepath.Join(dir, "plinthd.lock"), "--state-dir", n.stateDir)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	if err := n.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		_ = n.cmd.Wait()
		logFile.Close()
		close(n.done)
	}()
	b.Cleanup(func() {
		n.stop()
		if dir := os.Getenv("PLINTH_BENCH_PROFILE_DIR"); dir != "" {
			if data, err := os.ReadFile(n.log); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "plinthd-"+name+".log"), data, 0o644)
			}
		}
		if b.Failed() {
			b.Logf("plinthd %s log (%s):\n%s", name, n.log, tailFile(n.log, 40))
		}
	})
	return n
}

func (n *podBenchNode) pid() int { return n.cmd.Process.Pid }

// stop asks plinthd to exit (its containers would keep running: pods outlive the
// daemon) and kills it after 20 s.
func (n *podBenchNode) stop() {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
}

func (n *podBenchNode) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// runcRoot is where plinthd's runc keeps its containers' state.
func (n *podBenchNode) runcRoot() string { return filepath.Join(n.runtimeDir, "runc") }

// containers lists the containers plinthd's runc knows.
func (n *podBenchNode) containers() ([]string, error) {
	if _, err := os.Stat(n.runcRoot()); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	out, err := exec.Command("runc", "--root", n.runcRoot(), "list", "-q").Output()
	return strings.Fields(string(out)), err
}

// removeLeftovers runs after plinthd stopped: any container still known to runc is a
// pod the benchmark failed to delete, so it is reported and force-deleted; then every
// mount under the node's directories (root filesystems, namespace files) is detached.
func (n *podBenchNode) removeLeftovers(b *testing.B) {
	n.stop()
	ids, err := n.containers()
	if err != nil {
		b.Errorf("cleanup: runc list: %v", err)
	}
	for _, id := range ids {
		b.Errorf("cleanup: container %s was left running; deleting it", id)
		if out, err := exec.Command("runc", "--root", n.runcRoot(), "delete", "--force", id).CombinedOutput(); err != nil {
			b.Errorf("cleanup: runc delete %s: %v: %s", id, err, out)
		}
	}
	for _, dir := range []string{n.runtimeDir, n.stateDir, n.logDir} {
		for _, m := range mountsUnder(b, dir) {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
				b.Errorf("cleanup: unmount %s: %v", m, err)
			}
		}
	}
	if err := os.RemoveAll(n.runtimeDir); err != nil {
		b.Errorf("cleanup: %v", err)
	}
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(b *testing.B, dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		b.Errorf("mountinfo: %v", err)
		return nil
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			points = append(points, fields[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points
}

// podCgroups lists the cgroups under the node's cgroup parent, in every hierarchy.
func (n *podBenchNode) podCgroups() []string {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	var out []string
	for _, root := range roots {
		entries, err := os.ReadDir(filepath.Join(root, n.cgroupParent))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(root, n.cgroupParent, e.Name()))
			}
		}
	}
	return out
}

// waitReady waits until the Node is Ready with a pod CIDR (the pod runtime builds
// its network from it).
func (n *podBenchNode) waitReady(ctx context.Context, b *testing.B, client kubernetes.Interface) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if n.exited() {
			b.Fatalf("plinthd %s exited:\n%s", n.name, tailFile(n.log, 30))
		}
		node, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && readyStatus(node) == corev1.ConditionTrue && node.Spec.PodCIDR != "" {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("node %s not Ready with a pod CIDR after a minute (%v):\n%s", n.name, err, tailFile(n.log, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metrics reads the named unlabelled samples from plinthd's /metrics, formatted for
// the log (bytes in MiB).
func (n *podBenchNode) metrics(names ...string) string {
	resp, err := http.Get("http://" + n.healthz + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return pickMetrics(string(raw), names...)
}

// histogramTotals are the _sum and _count of one histogram series.
type histogramTotals struct {
	sum   float64
	count float64
}

// histograms reads the _sum and _count of every series of the named histograms from
// plinthd's /metrics, keyed by the series' name and labels as exposed (such as
// `plinth_runtime_operations_duration_seconds{operation_type="start_container"}`).
func (n *podBenchNode) histograms(b *testing.B, names ...string) map[string]histogramTotals {
	b.Helper()
	resp, err := http.Get("http://" + n.healthz + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]histogramTotals{}
	for _, line := range strings.Split(string(raw), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		for _, name := range names {
			rest, isSum := strings.CutPrefix(series, name+"_sum")
			if !isSum {
				var isCount bool
				if rest, isCount = strings.CutPrefix(series, name+"_count"); !isCount {
					continue
				}
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				continue
			}
			t := out[name+rest]
			if isSum {
				t.sum = v
			} else {
				t.count = v
			}
			out[name+rest] = t
		}
	}
	return out
}

// shimMemory sums, over the node's running plinth-shim processes (found by the
// runc root on their command line), the resident and the proportional set sizes
// (shared pages split between the processes sharing them), from smaps_rollup.
func (n *podBenchNode) shimMemory() (count int, rssKiB, pssKiB int64) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if filepath.Base(args[0]) != "plinth-shim" || !strings.Contains(string(cmdline), "\x00"+n.runcRoot()+"\x00") {
			continue
		}
		rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		count++
		for _, line := range strings.Split(string(rollup), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			v, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "Rss:":
				rssKiB += v
			case "Pss:":
				pssKiB += v
			}
		}
	}
	return count, rssKiB, pssKiB
}
