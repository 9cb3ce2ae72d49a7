package e2e

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

const logPod = `apiVersion: v1
kind: Pod
metadata:
  name: logger
  namespace: default
spec:
  nodeName: e2e-node
  containers:
  - name: app
    image: busybox
`

// criLines formats container output as the runtime writes it to a CRI log file.
func criLines(at time.Time, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		ts := at.Add(time.Duration(i) * time.Millisecond).UTC().Format(time.RFC3339Nano)
		if head, tail, ok := strings.Cut(l, "|"); ok {
			// "a|b" is one line written in two parts.
			fmt.Fprintf(&b, "%s stdout P %s\n%s stdout F %s\n", ts, head, ts, tail)
			continue
		}
		fmt.Fprintf(&b, "%s stdout F %s\n", ts, l)
	}
	return b.String()
}

// Unmodified kubectl logs, with --tail, -f and --previous, reaches a CRI log file on
// the node through the control service's pods/log and plinthd's node API, whose
// serving certificate plinthd got from the control service.
func TestKubectlLogsThroughTheNodeAPI(t *testing.T) {
	c := startControl(t)
	dir := t.TempDir()
	logRoot := filepath.Join(dir, "pods")
	apiPort := freePort(t)
	config := filepath.Join(dir, "plinthd.yaml")
	cfg := fmt.Sprintf("nodeLeaseDurationSeconds: 4\nnodeStatusUpdateFrequency: 1s\nhealthzBindAddress: 127.0.0.1:%d\n"+
		"nodeIP: 127.0.0.1\nnodeAPIBindAddress: 127.0.0.1:%d\npodLogsDir: %s\npods:\n  enabled: false\n"+
		// The Service proxy stays off: in this namespace it would program the host's
		// nftables and leave its tables behind.
		"proxy:\n  enabled: false\n", freePort(t), apiPort, logRoot)
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, "plinthd", nil, "--config", config, "--config-dir", "", "--kubeconfig", c.nodeKubeconfig(t, nodeName),
		"--hostname-override", nodeName, "--lock-file", filepath.Join(dir, "plinthd.lock"), "--state-dir", filepath.Join(dir, "state"))
	waitNodeStatus(t, c, "Ready", 30*time.Second)

	mustKubectl(t, c.kubeconfig, "apply", "-f", writeManifest(t, "logger.yaml", logPod))
	pod, err := clientFor(t, c.kubeconfig).CoreV1().Pods("default").Get(context.Background(), "logger", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No runtime runs the pod yet: plant its logs where the runtime writes them, a
	// previous instance (restart 0) and the current one (restart 1).
	podDir := filepath.Join(logRoot, "default_logger_"+string(pod.UID), "app")
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.WriteFile(filepath.Join(podDir, "0.log"), []byte(criLines(now.Add(-time.Minute), "crashed once")), 0o644); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(podDir, "1.log")
	if err := os.WriteFile(current, []byte(criLines(now, "one", "two", "thr|ee")), 0o644); err != nil {
		t.Fatal(err)
	}

	// The serving certificate arrives shortly after registration.
	eventually(t, 30*time.Second, "kubectl logs", func() (bool, string) {
		if p.exited() {
			t.Fatalf("plinthd exited: %v\n%s", p.err, tail(p.log, 20))
		}
		out, err := kubectl(t, c.kubeconfig, "logs", "logger")
		return err == nil && out == "one\ntwo\nthree\n", fmt.Sprintf("%q %v", out, err)
	})
	if out := mustKubectl(t, c.kubeconfig, "logs", "logger", "--tail", "2"); out != "two\nthree\n" {
		t.Errorf("kubectl logs --tail 2: %q", out)
	}
	if out := mustKubectl(t, c.kubeconfig, "logs", "logger", "--previous"); out != "crashed once\n" {
		t.Errorf("kubectl logs --previous: %q", out)
	}
	if out := mustKubectl(t, c.kubeconfig, "logs", "logger", "-c", "app", "--timestamps", "--tail", "1"); !strings.HasSuffix(out, " three\n") ||
		!strings.HasPrefix(out, now.Add(2*time.Millisecond).UTC().Format(time.RFC3339Nano)) {
		t.Errorf("kubectl logs --timestamps --tail 1: %q", out)
	}
	if out, err := kubectl(t, c.kubeconfig, "logs", "logger", "-c", "nope"); err == nil || !strings.Contains(err.Error(), "container nope is not valid") {
		t.Errorf("kubectl logs -c nope: %q %v", out, err)
	}

	t.Run("follow", func(t *testing.T) {
		kubectlPath, err := exec.LookPath("kubectl")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", c.kubeconfig, "logs", "-f", "logger", "--tail", "1")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		lines := bufio.NewReader(stdout)
		readLine := func() string {
			l, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("kubectl logs -f: %v after %q", err, l)
			}
			return l
		}
		if l := readLine(); l != "three\n" {
			t.Fatalf("first line %q", l)
		}
		f, err := os.OpenFile(current, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(criLines(time.Now(), "four", "fi|ve"))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if l := readLine(); l != "four\n" {
			t.Fatalf("appended line %q", l)
		}
		if l := readLine(); l != "five\n" {
			t.Fatalf("appended line %q", l)
		}
	})

	t.Run("the node API refuses certificates of another CA and nodes", func(t *testing.T) {
		restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(restCfg.CAData)
		admin, err := tls.X509KeyPair(restCfg.CertData, restCfg.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		nodeCfg, err := clientcmd.BuildConfigFromFlags("", c.nodeKubeconfig(t, "other-node"))
		if err != nil {
			t.Fatal(err)
		}
		nodeCert, err := tls.X509KeyPair(nodeCfg.CertData, nodeCfg.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("https://127.0.0.1:%d/containerLogs/default/logger/app", apiPort)
		for _, tc := range []struct {
			name string
			cert *tls.Certificate
			code int
		}{
			{"no certificate", nil, http.StatusUnauthorized},
			{"another CA", foreignCert(t), http.StatusUnauthorized},
			{"a node", &nodeCert, http.StatusForbidden},
			{"an administrator", &admin, http.StatusOK},
		} {
			// The node's serving certificate verifies against the cluster CA for its IP.
			tc2 := &tls.Config{RootCAs: roots}
			if tc.cert != nil {
				tc2.Certificates = []tls.Certificate{*tc.cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc2}, Timeout: 10 * time.Second}
			resp, err := client.Get(url)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.code)
			}
		}
	})
}

// foreignCert is a client certificate for system:masters from a CA nobody trusts.
func foreignCert(t *testing.T) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "plinth-admin", Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
