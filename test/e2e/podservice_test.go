package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/plinth/plinth/daemon/images/imagetest"
	"github.com/plinth/plinth/daemon/pods/podtest"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// nodeNSImage is the busybox image imported into the store of a node that runs in a
// network namespace of its own, where the test's registry on the machine's loopback
// is out of reach.
const nodeNSImage = "example.com/e2e/busybox:v1"

// newPodNodeIn makes a plinthd that runs wholly inside the network namespace ns, as
// it runs in the machine's own on a real node: its pod bridge, the pods' masquerade
// table and the Service proxy's tables are all in ns, so pod traffic to a ClusterIP
// takes the same path through the node's netfilter hooks as on a real node. c must run
// in ns too. The busybox image is imported into its store (nodeNSImage). Its
// containers, mounts and cgroups are removed at cleanup, even when the test fails.
func newPodNodeIn(t *testing.T, ns kerneltest.NetNSHandle, c *cluster) *podNode {
	t.Helper()
	kerneltest.Require(t, kerneltest.Root, kerneltest.Runc, kerneltest.Veth, kerneltest.NFTables, kerneltest.NFTBinary,
		cgrouptest.Cgroups, podtest.Busybox)
	parent := podtest.CgroupParent(t) // removed last, once the containers are gone
	dir := t.TempDir()
	runtimeDir, err := os.MkdirTemp("", "plpod") // short: runc and the shims put sockets under it
	if err != nil {
		t.Fatal(err)
	}
	p := &podNode{
		node: &node{kubeconfig: c.nodeKubeconfig(t, nodeName), config: filepath.Join(dir, "plinthd.yaml"),
			lockFile: filepath.Join(dir, "plinthd.lock"), stateDir: filepath.Join(dir, "state"), healthz: 10248},
		runtimeDir: runtimeDir, logDir: filepath.Join(dir, "logs"), seccompRoot: t.TempDir(), manifests: t.TempDir(),
	}
	t.Cleanup(func() { p.removeContainers(t) })
	// The namespace is the node's: the ports are kubelet's and kube-proxy's defaults,
	// free there whatever runs on the machine.
	cfg := fmt.Sprintf(`nodeStatusUpdateFrequency: 1s
healthzBindAddress: 127.0.0.1:%d
nodeIP: 127.0.0.1
nodeAPIBindAddress: 127.0.0.1:10250
staticPodPath: %s
podLogsDir: %s
proxy:
  enabled: true
  minSyncPeriod: 100ms
  healthzBindAddress: 127.0.0.1:10256
  clusterCIDRs: ["10.244.0.0/16"]
  serviceCIDRs: ["10.96.0.0/12"]
pods:
  enabled: true
  runtimeDir: %s
  seccompRoot: %s
  cgroupParent: %s
`, p.healthz, p.manifests, p.logDir, runtimeDir, p.seccompRoot, parent)
	if err := os.WriteFile(p.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "busybox.tar")
	tag, err := name.NewTag(nodeNSImage)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(archive, tag, imagetest.Busybox(t, "/bin/sh")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(binaries(t), "plinthctl"), "image", "import", "--root",
		filepath.Join(p.stateDir, "images"), archive).CombinedOutput(); err != nil {
		t.Fatalf("plinthctl image import: %v: %s", err, out)
	}
	p.proc = startIn(t, ns.Path, "plinthd", nil, "--config", p.config, "--config-dir", "", "--kubeconfig", p.kubeconfig,
		"--hostname-override", nodeName, "--lock-file", p.lockFile, "--state-dir", p.stateDir)
	return p
}

// podLog reads a container's CRI log file, "" while there is none.
func (p *podNode) podLog(namespace, pod, uid, container string) string {
	b, _ := os.ReadFile(filepath.Join(p.logDir, namespace+"_"+pod+"_"+uid, container, "0.log"))
	return string(b)
}

// Two pods behind a Service answer on its ClusterIP from a third pod: plinth-control
// (with its EndpointSlice controller) and one plinthd running pods with the Service
// proxy on, all in one fresh network namespace acting as the node. The client pod's
// connections leave it through its veth to the pod bridge, are DNATed by the proxy's
// rules to one of the two server pods on the same bridge, and the replies come back
// translated; over a few dozen connections both servers answer. A server asking the
// Service reaches itself too (hairpin).
func TestPodsBehindAServiceAnswerOnItsClusterIP(t *testing.T) {
	nodeNS := kerneltest.NewNetNS(t)
	c := startControlIn(t, nodeNS.Path, 6443, "--cluster-cidr", "10.244.0.0/16")
	n := newPodNodeIn(t, nodeNS, c)

	c.apply(t, `apiVersion: v1
kind: Service
metadata: {name: echo}
spec:
  selector: {app: echo}
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
	clusterIP, err := c.kubectl(t, "get", "service", "echo", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil || net.ParseIP(clusterIP) == nil {
		t.Fatalf("the Service's cluster IP: %q, %v", clusterIP, err)
	}
	// askService asks the ClusterIP, never a pod address, every 200 ms and logs each
	// answer.
	askService := fmt.Sprintf(`[sh, -c, "while true; do nc -w 2 %s 80 </dev/null || echo no-answer; sleep 0.2; done"]`, clusterIP)
	// Each server answers every connection with its own name; echo-a also asks the
	// Service itself, so some of its connections come back to it (hairpin).
	for _, server := range []string{"echo-a", "echo-b"} {
		self := ""
		if server == "echo-a" {
			self = fmt.Sprintf("  - {name: self, image: %s, imagePullPolicy: Never, command: %s}\n", nodeNSImage, askService)
		}
		c.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  labels: {app: echo}
spec:
  containers:
  - name: main
    image: %[2]s
    imagePullPolicy: Never
    command: [nc, -ll, -p, "8080", -e, echo, answer-from-%[1]s]
%[3]s`, server, nodeNSImage, self))
	}
	addrs := map[string]string{}
	for _, server := range []string{"echo-a", "echo-b"} {
		eventually(t, 60*time.Second, server+" Running and Ready", func() (bool, string) {
			if n.proc.exited() {
				t.Fatalf("plinthd exited: %v", n.proc.err)
			}
			p, seen := c.getPod(t, server)
			addrs[server] = p.Status.PodIP
			return p.Status.Phase == "Running" && p.condition("Ready") == "True" && p.Status.PodIP != "", seen
		})
	}
	eventually(t, 30*time.Second, "both servers ready endpoints of the Service", func() (bool, string) {
		out, err := c.kubectl(t, "get", "endpointslices", "-l", "kubernetes.io/service-name=echo", "-o",
			`jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{" "}{end}`)
		got := strings.Fields(out)
		return err == nil && len(got) == 2 && strings.Contains(out, addrs["echo-a"]) && strings.Contains(out, addrs["echo-b"]),
			fmt.Sprint(out, err)
	})

	c.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: %s
`, nodeNSImage, askService))
	var client podStatus
	eventually(t, 60*time.Second, "client Running", func() (bool, string) {
		p, seen := c.getPod(t, "client")
		client = p
		return p.Status.Phase == "Running" && p.Status.PodIP != "", seen
	})
	if client.Status.PodIP == addrs["echo-a"] || client.Status.PodIP == addrs["echo-b"] {
		t.Fatalf("the client has a server's address %s", client.Status.PodIP)
	}
	eventually(t, 60*time.Second, "answers from both servers in the client's log", func() (bool, string) {
		log := n.podLog("default", "client", client.Metadata.UID, "main")
		return strings.Contains(log, "stdout F answer-from-echo-a") && strings.Contains(log, "stdout F answer-from-echo-b"), lastLines(log)
	})
	t.Logf("client %s reached %s:80; servers %s (echo-a) and %s (echo-b) both answered",
		client.Status.PodIP, clusterIP, addrs["echo-a"], addrs["echo-b"])

	// A backend reaches itself through its Service: the proxy masquerades the
	// connection (or the reply would go from the pod to itself untranslated) and the
	// bridge sends it back out of the port it came in by (hairpin mode).
	echoA, _ := c.getPod(t, "echo-a")
	eventually(t, 30*time.Second, "echo-a answered itself through the ClusterIP", func() (bool, string) {
		log := n.podLog("default", "echo-a", echoA.Metadata.UID, "self")
		return strings.Contains(log, "stdout F answer-from-echo-a"), lastLines(log)
	})
}

// lastLines is the last lines of a log, for a failure message.
func lastLines(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > 6 {
		lines = lines[len(lines)-6:]
	}
	return strings.Join(lines, " | ")
}
