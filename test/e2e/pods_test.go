package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/daemon/pods/podtest"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// podNode is a plinthd that runs pods. Its pod bridge, masquerade table and the pods'
// network namespaces live in a fresh network namespace (pods.networkNamespace), so
// nothing of the pod network touches the machine's own; plinthd itself stays in the
// machine's namespace to reach plinth-control and the test's registry on loopback.
// Its containers, mounts and cgroups are under the test's own directories and a
// uniquely named cgroup, removed at cleanup even when the test fails.
type podNode struct {
	*node
	runtimeDir, logDir, seccompRoot, manifests string
	proc                                       *process
}

func newPodNode(t *testing.T, c *cluster) *podNode {
	t.Helper()
	return newPodNodeWith(t, c, podNodeOptions{})
}

// podNodeOptions change what newPodNodeWith makes.
type podNodeOptions struct {
	// cgroupBase is the cgroup under which the pods' cgroup parent is made ("" is the
	// root).
	cgroupBase string
	// extraConfig is YAML appended to plinthd's configuration.
	extraConfig string
}

func newPodNodeWith(t *testing.T, c *cluster, opts podNodeOptions) *podNode {
	t.Helper()
	kerneltest.Require(t, kerneltest.Root, kerneltest.Runc, kerneltest.Veth, kerneltest.NFTables, cgrouptest.Cgroups, podtest.Busybox)
	parent := podtest.CgroupParentUnder(t, opts.cgroupBase) // removed last, once the containers are gone
	ns := kerneltest.NewNetNS(t)
	n := newNode(t, c)
	// A short runtime directory: runc and the shims put sockets under it.
	runtimeDir, err := os.MkdirTemp("", "plpod")
	if err != nil {
		t.Fatal(err)
	}
	p := &podNode{node: n, runtimeDir: runtimeDir, logDir: filepath.Join(t.TempDir(), "logs"), seccompRoot: t.TempDir(), manifests: t.TempDir()}
	t.Cleanup(func() { p.removeContainers(t) })
	cfg := fmt.Sprintf(`nodeLeaseDurationSeconds: 4
nodeStatusUpdateFrequency: 1s
healthzBindAddress: 127.0.0.1:%d
nodeIP: 127.0.0.1
nodeAPIBindAddress: 127.0.0.1:%d
staticPodPath: %s
podLogsDir: %s
proxy:
  enabled: false
pods:
  enabled: true
  runtimeDir: %s
  seccompRoot: %s
  cgroupParent: %s
  networkNamespace: %s
%s`, n.healthz, freePort(t), p.manifests, p.logDir, runtimeDir, p.seccompRoot, parent, ns.Path, opts.extraConfig)
	if err := os.WriteFile(n.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *podNode) start(t *testing.T) {
	t.Helper()
	p.proc = p.node.start(t)
}

// removeContainers deletes every container plinthd's runc knows, then unmounts what
// is still mounted under the node's directories (root filesystems, namespace files).
func (p *podNode) removeContainers(t *testing.T) {
	if p.proc != nil {
		p.proc.kill(syscall.SIGKILL)
	}
	root := filepath.Join(p.runtimeDir, "runc")
	out, _ := exec.Command("runc", "--root", root, "list", "-q").Output()
	for _, id := range strings.Fields(string(out)) {
		if b, err := exec.Command("runc", "--root", root, "delete", "--force", id).CombinedOutput(); err != nil {
			t.Errorf("cleanup: runc delete %s: %v: %s", id, err, b)
		}
	}
	for _, dir := range []string{p.runtimeDir, p.stateDir, p.logDir} {
		unmountUnder(t, dir)
	}
	if err := os.RemoveAll(p.runtimeDir); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
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
	for _, m := range points {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			t.Errorf("cleanup: unmount %s: %v", m, err)
		}
	}
}

// containerPID is the host PID of a container's init process, from runc.
func (p *podNode) containerPID(t *testing.T, containerID string) int {
	t.Helper()
	id := strings.TrimPrefix(containerID, "plinth://")
	out, err := exec.Command("runc", "--root", filepath.Join(p.runtimeDir, "runc"), "state", id).Output()
	if err != nil {
		t.Fatalf("runc state %s: %v", id, err)
	}
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st.Pid
}

// apply writes a manifest and runs kubectl apply on it.
func apply(t *testing.T, kubeconfig, manifest string) {
	t.Helper()
	(&cluster{kubeconfig: kubeconfig}).apply(t, manifest)
}

// apply writes a manifest and runs kubectl apply on it in the cluster's network
// namespace.
func (c *cluster) apply(t *testing.T, manifest string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := c.kubectl(t, "apply", "-f", path); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// podStatus is the part of a pod's status the tests read.
type podStatus struct {
	Metadata struct {
		UID string `json:"uid"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		Reason     string `json:"reason"`
		Message    string `json:"message"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type, Status string
		} `json:"conditions"`
		ContainerStatuses []struct {
			Name         string `json:"name"`
			ContainerID  string `json:"containerID"`
			RestartCount int    `json:"restartCount"`
			Ready        bool   `json:"ready"`
			State        struct {
				Waiting *struct {
					Reason, Message string
				} `json:"waiting"`
				Running    *struct{} `json:"running"`
				Terminated *struct {
					Reason   string
					ExitCode int
				} `json:"terminated"`
			} `json:"state"`
			LastState struct {
				Terminated *struct {
					Reason   string
					ExitCode int
				} `json:"terminated"`
			} `json:"lastState"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func getPod(t *testing.T, kubeconfig, name string) (podStatus, string) {
	t.Helper()
	return (&cluster{kubeconfig: kubeconfig}).getPod(t, name)
}

// getPod reads a pod with kubectl in the cluster's network namespace, and its status
// as JSON for failure messages.
func (c *cluster) getPod(t *testing.T, name string) (podStatus, string) {
	t.Helper()
	var p podStatus
	out, err := c.kubectl(t, "get", "pod", name, "-o", "json")
	if err != nil {
		return p, err.Error()
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		return p, err.Error()
	}
	b, _ := json.Marshal(p.Status)
	return p, string(b)
}

func (p podStatus) condition(typ string) string {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func podManifest(name, image, extra, containerExtra string, command ...string) string {
	cmd, _ := json.Marshal(command)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: %s}
spec:
%s  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: %s
%s`, name, name, extra, image, cmd, containerExtra)
}

// A pod applied with kubectl runs on the node with an address from its pod CIDR and
// its output in its CRI log and in kubectl logs; an image imported with plinthctl runs with
// imagePullPolicy Never; a crashing pod backs off and counts restarts; restarting
// plinthd leaves the containers' processes alone; deleting a pod waits out its grace
// period when the container ignores SIGTERM, and the pod is gone once it is over.
func TestPodsRunLogCrashLoopSurviveRestartAndDeleteWithGrace(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	image := reg.PushBusybox(t, "e2e/busybox:v1", "/bin/sh")
	c := startControl(t, "--cluster-cidr", "10.244.0.0/16")
	n := newPodNode(t, c)
	// An image imported with plinthctl (as make run users do, with no registry) runs
	// with imagePullPolicy Never.
	archive := filepath.Join(t.TempDir(), "local.tar")
	tag, err := name.NewTag("example.com/local/busybox:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(archive, tag, imagetest.Busybox(t, "/bin/sh")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(binaries(t), "plinthctl"), "image", "import", "--root",
		filepath.Join(n.stateDir, "images"), archive).CombinedOutput(); err != nil {
		t.Fatalf("plinthctl image import: %v: %s", err, out)
	}
	n.start(t)
	apply(t, c.kubeconfig, strings.Replace(podManifest("imported", "example.com/local/busybox:v1", "  restartPolicy: Never\n", "",
		"sh", "-c", "echo from-an-imported-image"), "IfNotPresent", "Never", 1))

	apply(t, c.kubeconfig, podManifest("hello", image, "  terminationGracePeriodSeconds: 3\n", "",
		"sh", "-c", "trap '' TERM; echo hello-from-the-pod; while true; do sleep 1; done"))
	apply(t, c.kubeconfig, podManifest("crasher", image, "", "", "sh", "-c", "echo crashing; exit 3"))

	var hello podStatus
	eventually(t, 60*time.Second, "pod hello Running with a pod IP", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "hello")
		hello = p
		return p.Status.Phase == "Running" && p.Status.PodIP != "" && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Running != nil, seen
	})
	eventually(t, 30*time.Second, "pod imported Succeeded", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "imported")
		return p.Status.Phase == "Succeeded", seen
	})
	cidr, err := kubectl(t, c.kubeconfig, "get", "node", nodeName, "-o", "jsonpath={.spec.podCIDR}")
	if err != nil {
		t.Fatal(err)
	}
	if pfx, err := netip.ParsePrefix(cidr); err != nil || !pfx.Contains(netip.MustParseAddr(hello.Status.PodIP)) {
		t.Errorf("pod IP %s is not in the node's pod CIDR %q (%v)", hello.Status.PodIP, cidr, err)
	}
	logPath := filepath.Join(n.logDir, "default_hello_"+hello.Metadata.UID, "main", "0.log")
	eventually(t, 10*time.Second, "the pod's output in its CRI log", func() (bool, string) {
		b, err := os.ReadFile(logPath)
		return err == nil && strings.Contains(string(b), " stdout F hello-from-the-pod"), fmt.Sprint(string(b), err)
	})

	// kubectl logs, through the control service's pods/log proxy to the node API.
	eventually(t, 20*time.Second, "kubectl logs hello", func() (bool, string) {
		out, err := kubectl(t, c.kubeconfig, "logs", "hello")
		return err == nil && strings.Contains(out, "hello-from-the-pod"), fmt.Sprint(out, err)
	})

	eventually(t, 75*time.Second, "crasher in CrashLoopBackOff after 2 restarts", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "crasher")
		if len(p.Status.ContainerStatuses) != 1 {
			return false, seen
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" &&
			cs.LastState.Terminated != nil && cs.LastState.Terminated.ExitCode == 3, seen
	})

	// plinthd restarts; the container keeps its process.
	containerID := hello.Status.ContainerStatuses[0].ContainerID
	pid := n.containerPID(t, containerID)
	n.proc.kill(syscall.SIGTERM)
	if n.proc.err != nil {
		t.Errorf("plinthd on SIGTERM: %v", n.proc.err)
	}
	n.start(t)
	eventually(t, 30*time.Second, "plinthd healthy again", func() (bool, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.healthz))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	p, seen := getPod(t, c.kubeconfig, "hello")
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].ContainerID != containerID || cs[0].RestartCount != 0 || cs[0].State.Running == nil {
		t.Errorf("after the restart of plinthd the pod's status is %s", seen)
	}
	if after := n.containerPID(t, containerID); after != pid {
		t.Errorf("container PID %d before the restart of plinthd, %d after", pid, after)
	}

	// Deletion: SIGTERM is ignored, so the pod goes after its 3 s grace period.
	began := time.Now()
	if out, err := kubectl(t, c.kubeconfig, "delete", "pod", "hello", "--wait=false"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	took := eventually(t, 30*time.Second, "pod hello gone", func() (bool, string) {
		out, err := kubectl(t, c.kubeconfig, "get", "pod", "hello", "--ignore-not-found", "-o", "name")
		return err == nil && out == "", out
	})
	if took < 2500*time.Millisecond {
		t.Errorf("pod gone %s after the delete, before its 3s grace period", took)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the container process %d still runs after the pod was deleted", pid)
	}
	t.Logf("deleted with a 3s grace period in %s (since delete: %s)", took, time.Since(began))
}

// A static pod runs from its manifest, its mirror pod carrying its status; a readiness
// probe gates the pod's Ready condition and its endpoint in the Service's
// EndpointSlice; a Localhost seccomp profile denying mkdir makes mkdir fail while the
// rest of the shell works, and a missing profile fails the container with
// CreateContainerError naming the file; an image is pulled with the pod's
// imagePullSecrets; a memory limit breach reports OOMKilled.
func TestPodsStaticReadinessSeccompAndOOM(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	image := reg.PushBusybox(t, "e2e/busybox:v1", "/bin/sh")
	c := startControl(t, "--cluster-cidr", "10.244.0.0/16")
	n := newPodNode(t, c)
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
  "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}`
	if err := os.WriteFile(filepath.Join(n.seccompRoot, "deny-mkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	// A static pod from a manifest runs, and its mirror pod in the API shows its status.
	static := strings.Replace(podManifest("static", image, "", "", "sh", "-c", "echo static; while true; do sleep 1; done"),
		"  labels: {app: static}\n", "", 1)
	if err := os.WriteFile(filepath.Join(n.manifests, "static.yaml"), []byte(static), 0o644); err != nil {
		t.Fatal(err)
	}
	n.start(t)
	eventually(t, 60*time.Second, "the static pod's mirror pod Running", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "static-"+nodeName)
		return p.Status.Phase == "Running" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil, seen
	})

	apply(t, c.kubeconfig, `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`)
	apply(t, c.kubeconfig, podManifest("web", image, "", `    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
`, "sh", "-c", "sleep 8; echo ok > /tmp/ready; while true; do sleep 1; done"))
	seccompPod := func(name, profile string) string {
		return podManifest(name, image, fmt.Sprintf("  restartPolicy: Never\n  securityContext:\n    seccompProfile: {type: Localhost, localhostProfile: %s}\n", profile), "",
			"sh", "-c", "mkdir /tmp/made && echo MKDIR-WORKED || echo MKDIR-DENIED; echo STILL-ALIVE")
	}
	apply(t, c.kubeconfig, seccompPod("nomkdir", "deny-mkdir.json"))
	apply(t, c.kubeconfig, seccompPod("noprofile", "absent.json"))
	apply(t, c.kubeconfig, podManifest("hog", image, "  restartPolicy: Never\n", `    resources:
      limits: {memory: 24Mi}
`, "sh", "-c", "a=0123456789abcdef; while true; do a=$a$a; done"))

	// Running but not ready: the slice lists the pod as not ready.
	slice := func() (addr string, ready bool, seen string) {
		out, err := kubectl(t, c.kubeconfig, "get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o",
			`jsonpath={range .items[*].endpoints[*]}{.addresses[0]} {.conditions.ready}{"\n"}{end}`)
		if err != nil {
			return "", false, err.Error()
		}
		f := strings.Fields(out)
		if len(f) != 2 {
			return "", false, out
		}
		return f[0], f[1] == "true", out
	}
	var web podStatus
	eventually(t, 60*time.Second, "web Running, not Ready, listed as not ready", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "web")
		web = p
		addr, ready, sl := slice()
		return p.Status.Phase == "Running" && p.condition("Ready") == "False" && addr == p.Status.PodIP && !ready, seen + " slice: " + sl
	})
	eventually(t, 30*time.Second, "web Ready and its endpoint ready", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "web")
		addr, ready, sl := slice()
		return p.condition("Ready") == "True" && addr == web.Status.PodIP && ready, seen + " slice: " + sl
	})

	eventually(t, 30*time.Second, "nomkdir done", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "nomkdir")
		return p.Status.Phase == "Succeeded", seen
	})
	p, _ := getPod(t, c.kubeconfig, "nomkdir")
	b, err := os.ReadFile(filepath.Join(n.logDir, "default_nomkdir_"+p.Metadata.UID, "main", "0.log"))
	if err != nil || !strings.Contains(string(b), "stdout F MKDIR-DENIED") || !strings.Contains(string(b), "stdout F STILL-ALIVE") {
		t.Errorf("under the deny-mkdir profile the log is %q (%v); want MKDIR-DENIED then STILL-ALIVE", b, err)
	}

	missing := filepath.Join(n.seccompRoot, "absent.json")
	eventually(t, 30*time.Second, "noprofile in CreateContainerError naming "+missing, func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "noprofile")
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerError" &&
			strings.Contains(cs[0].State.Waiting.Message, missing), seen
	})

	// An image from a registry that wants credentials, pulled with the pod's
	// imagePullSecrets (read by the node, which may read only what its pods reference).
	private := imagetest.NewRegistry(t, imagetest.WithBasicAuth("e2e-user", "e2e-secret"))
	privateImage := private.PushBusybox(t, "e2e/private:v1", "/bin/sh")
	if out, err := kubectl(t, c.kubeconfig, "create", "secret", "docker-registry", "regcred", "--docker-server="+private.Host,
		"--docker-username=e2e-user", "--docker-password=e2e-secret"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	apply(t, c.kubeconfig, podManifest("private", privateImage, "  restartPolicy: Never\n  imagePullSecrets: [{name: regcred}]\n", "",
		"sh", "-c", "echo pulled-with-a-secret"))
	eventually(t, 60*time.Second, "private pod Succeeded", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "private")
		return p.Status.Phase == "Succeeded", seen
	})

	eventually(t, 60*time.Second, "hog OOMKilled", func() (bool, string) {
		p, seen := getPod(t, c.kubeconfig, "hog")
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Terminated != nil && cs[0].State.Terminated.Reason == "OOMKilled" && p.Status.Phase == "Failed", seen
	})
}
