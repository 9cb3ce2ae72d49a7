package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plinth/plinth/internal/kerneltest"
)

// The node's and the backend host's addresses on the veth between them.
const (
	proxyNodeAddr    = "10.244.0.1"
	proxyBackendAddr = "10.244.0.5"
	proxyBackendPort = 8080
	// proxyHealthz is the proxy's health address inside the node's namespace, where
	// nothing else listens (kube-proxy's default port).
	proxyHealthz = "127.0.0.1:10256"
)

// proxyNodeConfig writes a plinthd config with the Service proxy on and quick syncs.
func proxyNodeConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plinthd.yaml")
	cfg := "healthzBindAddress: 127.0.0.1:10248\nnodeAPIBindAddress: 127.0.0.1:10250\n" +
		"proxy:\n  enabled: true\n  minSyncPeriod: 100ms\n  healthzBindAddress: " + proxyHealthz + "\n" +
		"  clusterCIDRs: [\"10.244.0.0/16\"]\n  serviceCIDRs: [\"10.96.0.0/12\"]\n" +
		"pods:\n  enabled: false\n" // this test is about the proxy; pods have their own tests
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveName answers every TCP connection on port in ns with name, until the test ends.
func serveName(t *testing.T, ns kerneltest.NetNSHandle, port int, name string) {
	t.Helper()
	var ln net.Listener
	ns.Do(t, func() {
		var err error
		if ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port)); err != nil {
			t.Fatalf("listen in %s: %v", ns.Name, err)
		}
	})
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name)
			c.Close()
		}
	}()
}

// dialIn connects to addr from ns and returns what the server said.
func dialIn(t *testing.T, ns kerneltest.NetNSHandle, addr string, timeout time.Duration) (string, error) {
	var c net.Conn
	var err error
	ns.Do(t, func() { c, err = net.DialTimeout("tcp", addr, timeout) })
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// httpStatusIn GETs path from addr inside ns and returns the status code.
func httpStatusIn(t *testing.T, ns kerneltest.NetNSHandle, addr, path string) (int, error) {
	var c net.Conn
	var err error
	ns.Do(t, func() { c, err = net.DialTimeout("tcp", addr, 2*time.Second) })
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestServiceProxy runs plinth-control and a plinthd with the Service proxy on inside a
// fresh network namespace (the node), with a backend host on a veth: a Service and a
// hand-made EndpointSlice created with kubectl become a reachable ClusterIP; deleting
// the slice makes it refuse; plinthd --cleanup removes the tables.
func TestServiceProxy(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.NetNS, kerneltest.NFTables, kerneltest.Veth, kerneltest.NFTBinary)
	nodeNS, backendNS := kerneltest.NewNetNS(t), kerneltest.NewNetNS(t)
	nodeNS.Run(t, "ip", "link", "add", "pv0", "type", "veth", "peer", "name", "eth0", "netns", backendNS.Name)
	nodeNS.Run(t, "ip", "addr", "add", proxyNodeAddr+"/24", "dev", "pv0")
	nodeNS.Run(t, "ip", "link", "set", "pv0", "up")
	// A route for the service range: without one, a connect to a ClusterIP fails
	// routing before the output hook could DNAT it.
	nodeNS.Run(t, "ip", "route", "add", "default", "via", proxyBackendAddr)
	backendNS.Run(t, "ip", "addr", "add", proxyBackendAddr+"/24", "dev", "eth0")
	backendNS.Run(t, "ip", "link", "set", "eth0", "up")
	backendNS.Run(t, "ip", "route", "add", "default", "via", proxyNodeAddr)
	serveName(t, backendNS, proxyBackendPort, "backend")

	c := startControlIn(t, nodeNS.Path, 6443)
	dir := t.TempDir()
	plinthd := startIn(t, nodeNS.Path, "plinthd", nil, "--config", proxyNodeConfig(t), "--config-dir", "",
		"--kubeconfig", c.nodeKubeconfig(t, nodeName), "--hostname-override", nodeName,
		"--lock-file", filepath.Join(dir, "plinthd.lock"), "--state-dir", filepath.Join(dir, "state"))

	manifest := filepath.Join(t.TempDir(), "service.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: echo
  namespace: default
spec:
  ports:
  - name: http
    protocol: TCP
    port: 80
    targetPort: %[1]d
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-manual
  namespace: default
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- name: http
  protocol: TCP
  port: %[1]d
endpoints:
- addresses: ["%[2]s"]
  conditions:
    ready: true
`, proxyBackendPort, proxyBackendAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := c.kubectl(t, "apply", "-f", manifest); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	clusterIP, err := c.kubectl(t, "get", "service", "echo", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil || net.ParseIP(clusterIP) == nil {
		t.Fatalf("the Service's cluster IP: %q, %v", clusterIP, err)
	}
	vip := net.JoinHostPort(clusterIP, "80")

	t.Run("a connection to the ClusterIP reaches the backend", func(t *testing.T) {
		eventually(t, 30*time.Second, "connect to "+vip, func() (bool, string) {
			if plinthd.exited() {
				t.Fatalf("plinthd exited: %v", plinthd.err)
			}
			got, err := dialIn(t, nodeNS, vip, time.Second)
			return err == nil && got == "backend", fmt.Sprintf("%q %v", got, err)
		})
	})
	t.Run("plinthctl proxy dump shows the service's map element", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(binaries(t), "plinthctl"), "proxy", "dump", "--netns", nodeNS.Path).CombinedOutput()
		if err != nil {
			t.Fatalf("plinthctl proxy dump: %v\n%s", err, out)
		}
		want := clusterIP + " . tcp . 80 : goto service-"
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "default/echo/tcp/http") {
			t.Errorf("dump lacks %q for default/echo/tcp/http:\n%s", want, out)
		}
	})
	t.Run("the proxy's /healthz and /livez answer 200", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/livez"} {
			eventually(t, 10*time.Second, path+" 200", func() (bool, string) {
				code, err := httpStatusIn(t, nodeNS, proxyHealthz, path)
				return err == nil && code == http.StatusOK, fmt.Sprint(code, err)
			})
		}
	})
	t.Run("without endpoints connections are refused fast", func(t *testing.T) {
		if out, err := c.kubectl(t, "delete", "endpointslice", "echo-manual"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		eventually(t, 30*time.Second, "connection refused", func() (bool, string) {
			start := time.Now()
			got, err := dialIn(t, nodeNS, vip, 5*time.Second)
			// Generous bound: a drop would wait for the whole 5 s timeout.
			return errors.Is(err, syscall.ECONNREFUSED) && time.Since(start) < 2*time.Second,
				fmt.Sprintf("%q %v after %s", got, err, time.Since(start))
		})
	})
	t.Run("plinthd --cleanup leaves no plinth table", func(t *testing.T) {
		if out := nodeNS.Run(t, "nft", "list", "tables"); !strings.Contains(out, "table ip plinth") {
			t.Fatalf("before the cleanup, nft lists no plinth table:\n%s", out)
		}
		plinthd.kill(syscall.SIGTERM) // else it would program the tables again
		out, err := exec.Command("nsenter", "--net="+nodeNS.Path, filepath.Join(binaries(t), "plinthd"), "--cleanup").CombinedOutput()
		if err != nil {
			t.Fatalf("plinthd --cleanup: %v\n%s", err, out)
		}
		if out := nodeNS.Run(t, "nft", "list", "tables"); strings.Contains(out, "plinth") {
			t.Errorf("after plinthd --cleanup, nft lists:\n%s", out)
		}
	})
}
