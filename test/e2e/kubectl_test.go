package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The kubectl compatibility suite: the installed, unmodified kubectl against the control
// service, doing what operators do every day.

const kubectlNodeManifest = `apiVersion: v1
kind: Node
metadata:
  name: compat-node
  labels:
    kubernetes.io/hostname: compat-node
spec:
  taints:
  - key: existing
    value: "yes"
    effect: NoSchedule
`

const kubectlPodsManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: default
  labels:
    app: web
spec:
  nodeName: compat-node
  terminationGracePeriodSeconds: 0
  containers:
  - name: web
    image: registry.example/web:1.0
---
apiVersion: v1
kind: Pod
metadata:
  name: web-2
  namespace: default
  labels:
    app: web
spec:
  nodeName: compat-node
  terminationGracePeriodSeconds: 0
  containers:
  - name: web
    image: registry.example/web:1.0
`

func writeManifest(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustKubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, kubeconfig, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKubectlCompatibility(t *testing.T) {
	c := startControl(t)
	kc := c.kubeconfig

	t.Run("apply creates then updates", func(t *testing.T) {
		out := mustKubectl(t, kc, "apply", "-f", writeManifest(t, "node.yaml", kubectlNodeManifest))
		if !strings.Contains(out, "node/compat-node created") {
			t.Fatalf("apply: %s", out)
		}
		out = mustKubectl(t, kc, "apply", "-f", writeManifest(t, "node2.yaml", strings.Replace(kubectlNodeManifest, "hostname: compat-node", "hostname: compat-node\n    tier: edge", 1)))
		if !strings.Contains(out, "node/compat-node configured") {
			t.Fatalf("second apply: %s", out)
		}
		if got := mustKubectl(t, kc, "get", "node", "compat-node", "-o", "jsonpath={.metadata.labels.tier}"); got != "edge" {
			t.Fatalf("label after apply = %q", got)
		}
		out = mustKubectl(t, kc, "apply", "-f", writeManifest(t, "pods.yaml", kubectlPodsManifest))
		if !strings.Contains(out, "pod/web-1 created") || !strings.Contains(out, "pod/web-2 created") {
			t.Fatalf("apply pods: %s", out)
		}
	})

	t.Run("apply with an unknown field is refused", func(t *testing.T) {
		bad := strings.Replace(kubectlNodeManifest, "spec:\n", "spec:\n  bogusField: 1\n", 1)
		out, err := kubectl(t, kc, "apply", "-f", writeManifest(t, "bad.yaml", bad))
		if err == nil || !strings.Contains(err.Error(), "bogusField") {
			t.Fatalf("apply with unknown field: %v %s", err, out)
		}
	})

	t.Run("get pods and leases", func(t *testing.T) {
		out := mustKubectl(t, kc, "get", "pods")
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		if strings.Join(header, " ") != "NAME READY STATUS RESTARTS AGE" || !strings.Contains(out, "web-1") {
			t.Fatalf("get pods:\n%s", out)
		}
		out = mustKubectl(t, kc, "get", "pods", "-o", "wide")
		if !strings.Contains(out, "compat-node") || !strings.Contains(out, "NODE") {
			t.Fatalf("get pods -o wide:\n%s", out)
		}
		lease := "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: compat-node\n  namespace: kube-node-lease\nspec:\n  holderIdentity: compat-node\n"
		mustKubectl(t, kc, "apply", "-f", writeManifest(t, "lease.yaml", lease))
		out = mustKubectl(t, kc, "get", "leases", "-A")
		header = strings.Fields(strings.SplitN(out, "\n", 2)[0])
		if strings.Join(header, " ") != "NAMESPACE NAME HOLDER AGE" || !strings.Contains(out, "kube-node-lease") {
			t.Fatalf("get leases -A:\n%s", out)
		}
	})

	t.Run("label, cordon, uncordon", func(t *testing.T) {
		mustKubectl(t, kc, "label", "node", "compat-node", "team=infra")
		if got := mustKubectl(t, kc, "get", "node", "compat-node", "-o", "jsonpath={.metadata.labels.team}"); got != "infra" {
			t.Fatalf("label = %q", got)
		}
		mustKubectl(t, kc, "cordon", "compat-node")
		if got := mustKubectl(t, kc, "get", "node", "compat-node", "-o", "jsonpath={.spec.unschedulable}"); got != "true" {
			t.Fatalf("after cordon unschedulable = %q", got)
		}
		if out := mustKubectl(t, kc, "get", "node", "compat-node"); !strings.Contains(out, "SchedulingDisabled") {
			t.Fatalf("cordoned node STATUS:\n%s", out)
		}
		mustKubectl(t, kc, "uncordon", "compat-node")
		if got := mustKubectl(t, kc, "get", "node", "compat-node", "-o", "jsonpath={.spec.unschedulable}"); got != "" && got != "false" {
			t.Fatalf("after uncordon unschedulable = %q", got)
		}
	})

	t.Run("taint add and remove keeps the others", func(t *testing.T) {
		mustKubectl(t, kc, "taint", "node", "compat-node", "dedicated=gpu:NoSchedule")
		keys := mustKubectl(t, kc, "get", "node", "compat-node", "-o", "jsonpath={.spec.taints[*].key}")
		if f := strings.Fields(keys); len(f) != 2 || !strings.Contains(keys, "existing") || !strings.Contains(keys, "dedicated") {
			t.Fatalf("taints after add: %q, want existing and dedicated", keys)
		}
		mustKubectl(t, kc, "taint", "node", "compat-node", "dedicated:NoSchedule-")
		keys = mustKubectl(t, kc, "get", "node", "compat-node", "-o", "jsonpath={.spec.taints[*].key}")
		if keys != "existing" {
			t.Fatalf("taints after remove: %q, want existing", keys)
		}
	})

	t.Run("describe node shows its pods, lease and events", func(t *testing.T) {
		out := mustKubectl(t, kc, "describe", "node", "compat-node")
		for _, want := range []string{"Name:", "compat-node", "Taints:", "existing=yes:NoSchedule", "Non-terminated Pods:", "web-1", "Lease:"} {
			if !strings.Contains(out, want) {
				t.Fatalf("describe node lacks %q:\n%s", want, out)
			}
		}
		out = mustKubectl(t, kc, "describe", "pod", "web-1")
		for _, want := range []string{"Name:", "web-1", "Node:", "compat-node", "Tolerations:", "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s"} {
			if !strings.Contains(out, want) {
				t.Fatalf("describe pod lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("get -o yaml round trip", func(t *testing.T) {
		yaml := mustKubectl(t, kc, "get", "node", "compat-node", "-o", "yaml")
		path := writeManifest(t, "roundtrip.yaml", strings.Replace(yaml, "team: infra", "team: platform", 1))
		mustKubectl(t, kc, "replace", "-f", path)
		if got := mustKubectl(t, kc, "get", "node", "compat-node", "-o", "jsonpath={.metadata.labels.team}"); got != "platform" {
			t.Fatalf("label after replace = %q", got)
		}
	})

	t.Run("get -w sees a change", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		path, _ := exec.LookPath("kubectl")
		cmd := exec.CommandContext(ctx, path, "--kubeconfig", kc, "get", "node", "compat-node", "-w", "--output-watch-events")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// The first event is the current state; then a change must appear.
		first := <-lines
		for !strings.Contains(first, "compat-node") {
			first = <-lines
		}
		mustKubectl(t, kc, "cordon", "compat-node")
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("kubectl get -w ended")
				}
				if strings.Contains(l, "MODIFIED") && strings.Contains(l, "SchedulingDisabled") {
					mustKubectl(t, kc, "uncordon", "compat-node")
					return
				}
			case <-ctx.Done():
				t.Fatal("kubectl get -w saw no change")
			}
		}
	})

	t.Run("drain evicts the node's pods", func(t *testing.T) {
		out := mustKubectl(t, kc, "drain", "compat-node", "--ignore-daemonsets", "--force", "--timeout=60s")
		if !strings.Contains(out, "evicting pod default/web-1") || !strings.Contains(out, "drained") {
			t.Fatalf("drain:\n%s", out)
		}
		if out := mustKubectl(t, kc, "get", "pods", "-o", "name"); strings.Contains(out, "web-") {
			t.Fatalf("pods left after drain: %s", out)
		}
		mustKubectl(t, kc, "uncordon", "compat-node")
	})

	t.Run("get events", func(t *testing.T) {
		event := `apiVersion: v1
kind: Event
metadata:
  name: compat-node.1
  namespace: default
involvedObject:
  kind: Node
  name: compat-node
  uid: compat-node
reason: Compatibility
message: kubectl compatibility suite was here
type: Normal
`
		mustKubectl(t, kc, "create", "-f", writeManifest(t, "event.yaml", event))
		out := mustKubectl(t, kc, "get", "events")
		if !strings.Contains(out, "Compatibility") || !strings.Contains(out, "node/compat-node") {
			t.Fatalf("get events:\n%s", out)
		}
		out = mustKubectl(t, kc, "describe", "node", "compat-node")
		if !strings.Contains(out, "kubectl compatibility suite was here") {
			t.Fatalf("describe node does not show its event:\n%s", out)
		}
	})

	t.Run("delete pod and cascading deletes", func(t *testing.T) {
		mustKubectl(t, kc, "apply", "-f", writeManifest(t, "pods.yaml", kubectlPodsManifest))
		out := mustKubectl(t, kc, "delete", "pod", "web-1", "--timeout=30s")
		if !strings.Contains(out, `pod "web-1" deleted`) {
			t.Fatalf("delete pod: %s", out)
		}
		// web-2 is owned by a Lease: orphaning keeps it, foreground deletes it first.
		owner := `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: owner
  namespace: default
`
		mustKubectl(t, kc, "apply", "-f", writeManifest(t, "owner.yaml", owner))
		uid := mustKubectl(t, kc, "get", "lease", "owner", "-o", "jsonpath={.metadata.uid}")
		patch := `{"metadata":{"ownerReferences":[{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","name":"owner","uid":"` + uid + `"}]}}`
		mustKubectl(t, kc, "patch", "pod", "web-2", "--type=merge", "-p", patch)
		mustKubectl(t, kc, "delete", "lease", "owner", "--cascade=orphan", "--timeout=30s")
		if refs := mustKubectl(t, kc, "get", "pod", "web-2", "-o", "jsonpath={.metadata.ownerReferences}"); refs != "" {
			t.Fatalf("orphaned pod still has owner references: %s", refs)
		}
		mustKubectl(t, kc, "apply", "-f", writeManifest(t, "owner.yaml", owner))
		uid = mustKubectl(t, kc, "get", "lease", "owner", "-o", "jsonpath={.metadata.uid}")
		patch = `{"metadata":{"ownerReferences":[{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","name":"owner","uid":"` + uid + `","blockOwnerDeletion":true}]}}`
		mustKubectl(t, kc, "patch", "pod", "web-2", "--type=merge", "-p", patch)
		mustKubectl(t, kc, "delete", "lease", "owner", "--cascade=foreground", "--timeout=60s")
		if out, err := kubectl(t, kc, "get", "pod", "web-2"); err == nil {
			t.Fatalf("dependent survived a foreground delete of its owner:\n%s", out)
		}
	})

	t.Run("services get endpoint slices and pods without a node get a scheduling verdict", func(t *testing.T) {
		mustKubectl(t, kc, "create", "service", "clusterip", "shop", "--tcp=80:8080")
		eventually(t, 30*time.Second, "shop's EndpointSlice", func() (bool, string) {
			out, err := kubectl(t, kc, "get", "endpointslices", "-l", "kubernetes.io/service-name=shop",
				"-o", `jsonpath={.items[*].metadata.labels.endpointslice\.kubernetes\.io/managed-by}`)
			return err == nil && out == "endpointslice-controller.plinth.dev", out
		})
		unplaced := `apiVersion: v1
kind: Pod
metadata:
  name: unplaced
  namespace: default
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: web
    image: registry.example/web:1.0
`
		mustKubectl(t, kc, "apply", "-f", writeManifest(t, "unplaced.yaml", unplaced))
		// compat-node has no Ready condition (no node agent runs here), so nothing fits.
		eventually(t, 30*time.Second, "FailedScheduling in describe pod", func() (bool, string) {
			out, err := kubectl(t, kc, "describe", "pod", "unplaced")
			return err == nil && strings.Contains(out, "FailedScheduling") && strings.Contains(out, "0/1 nodes are available"), out
		})
		if got := mustKubectl(t, kc, "get", "pod", "unplaced", "-o", `jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}`); got != "Unschedulable" {
			t.Fatalf("PodScheduled reason %q, want Unschedulable", got)
		}
	})

	t.Run("secrets and configmaps", func(t *testing.T) {
		out := mustKubectl(t, kc, "create", "secret", "docker-registry", "pull", "--docker-server=registry.example:5000",
			"--docker-username=robot", "--docker-password=hunter2", "--docker-email=robot@example.com")
		if !strings.Contains(out, "secret/pull created") {
			t.Fatalf("create secret docker-registry: %s", out)
		}
		mustKubectl(t, kc, "create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=password=s3cret")
		certFile, keyFile := writeKeyPair(t)
		mustKubectl(t, kc, "create", "secret", "tls", "web-tls", "--cert="+certFile, "--key="+keyFile)

		out = mustKubectl(t, kc, "get", "secrets")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if strings.Join(strings.Fields(lines[0]), " ") != "NAME TYPE DATA AGE" {
			t.Fatalf("get secrets header:\n%s", out)
		}
		rows := map[string]string{}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			rows[f[0]] = strings.Join(f[1:3], " ")
		}
		for name, want := range map[string]string{"pull": "kubernetes.io/dockerconfigjson 1", "creds": "Opaque 2", "web-tls": "kubernetes.io/tls 2"} {
			if rows[name] != want {
				t.Fatalf("get secrets row %s = %q, want %q:\n%s", name, rows[name], want, out)
			}
		}
		cfg := mustKubectl(t, kc, "get", "secret", "pull", "-o", `jsonpath={.data.\.dockerconfigjson}`)
		decoded, err := base64.StdEncoding.DecodeString(cfg)
		if err != nil || !strings.Contains(string(decoded), `"registry.example:5000"`) || !strings.Contains(string(decoded), `"robot"`) {
			t.Fatalf(".dockerconfigjson = %q (%v)", decoded, err)
		}
		if got := mustKubectl(t, kc, "get", "secrets", "--field-selector=type=kubernetes.io/tls", "-o", "name"); strings.TrimSpace(got) != "secret/web-tls" {
			t.Fatalf("secrets of type tls: %q", got)
		}

		// A manifest with stringData is applied with validation; data holds it afterwards.
		manifest := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\n  namespace: default\nstringData:\n  token: abc\n"
		mustKubectl(t, kc, "apply", "-f", writeManifest(t, "secret.yaml", manifest))
		if got := mustKubectl(t, kc, "get", "secret", "applied", "-o", "jsonpath={.data.token}"); got != base64.StdEncoding.EncodeToString([]byte("abc")) {
			t.Fatalf("applied stringData: data.token = %q", got)
		}
		if _, err := kubectl(t, kc, "apply", "-f", writeManifest(t, "bad-secret.yaml", manifest+"bogusField: 1\n")); err == nil || !strings.Contains(err.Error(), "bogusField") {
			t.Fatalf("apply of a secret with an unknown field: %v", err)
		}
		bad := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: broken\n  namespace: default\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  config.json: '{}'\n"
		if _, err := kubectl(t, kc, "apply", "-f", writeManifest(t, "broken.yaml", bad)); err == nil || !strings.Contains(err.Error(), "data[.dockerconfigjson]") {
			t.Fatalf("apply of a dockerconfigjson secret without its key: %v", err)
		}

		mustKubectl(t, kc, "create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3")
		out = mustKubectl(t, kc, "get", "cm", "settings")
		if h := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(h, " ") != "NAME DATA AGE" || !strings.Contains(out, "settings") {
			t.Fatalf("get cm:\n%s", out)
		}
		yaml := mustKubectl(t, kc, "get", "cm", "settings", "-o", "yaml")
		for _, want := range []string{"kind: ConfigMap", "mode: fast", `level: "3"`, "name: settings"} {
			if !strings.Contains(yaml, want) {
				t.Fatalf("get cm -o yaml lacks %q:\n%s", want, yaml)
			}
		}
	})

	t.Run("a node reads only the secrets its pods use", func(t *testing.T) {
		nodeKC := c.nodeKubeconfig(t, "compat-node")
		if _, err := kubectl(t, nodeKC, "get", "secret", "pull"); err == nil || !strings.Contains(err.Error(), "no pod bound to node compat-node references secret default/pull") {
			t.Fatalf("node get of a secret no pod of it uses: %v", err)
		}
		puller := `apiVersion: v1
kind: Pod
metadata:
  name: puller
  namespace: default
spec:
  nodeName: compat-node
  terminationGracePeriodSeconds: 0
  imagePullSecrets:
  - name: pull
  containers:
  - name: app
    image: registry.example:5000/app:1
    envFrom:
    - configMapRef:
        name: settings
`
		mustKubectl(t, kc, "apply", "-f", writeManifest(t, "puller.yaml", puller))
		// At once: the authorizer reads the pods live when its cache has not seen the pod.
		if got := mustKubectl(t, nodeKC, "get", "secret", "pull", "-o", "name"); strings.TrimSpace(got) != "secret/pull" {
			t.Fatalf("node get of its pod's pull secret: %q", got)
		}
		if got := mustKubectl(t, nodeKC, "get", "cm", "settings", "-o", "name"); strings.TrimSpace(got) != "configmap/settings" {
			t.Fatalf("node get of its pod's configmap: %q", got)
		}
		if _, err := kubectl(t, nodeKC, "get", "secrets"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Fatalf("node list of all secrets: %v", err)
		}
		if _, err := kubectl(t, nodeKC, "delete", "secret", "pull"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Fatalf("node delete of its pod's secret: %v", err)
		}
		mustKubectl(t, kc, "delete", "pod", "puller", "--grace-period=0", "--force")
		took := eventually(t, 5*time.Second, "the node refused the secret of its deleted pod", func() (bool, string) {
			out, err := kubectl(t, nodeKC, "get", "secret", "pull")
			return err != nil && strings.Contains(err.Error(), "Forbidden"), out
		})
		t.Logf("access ended %v after the pod's deletion (kubectl's own start-up included)", took)
	})
}

// writeKeyPair writes a self-signed certificate and its key, as PEM files, for kubectl
// create secret tls (which checks that they belong together).
func writeKeyPair(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"web.example"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeManifest(t, "tls.crt", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeManifest(t, "tls.key", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	return certFile, keyFile
}
