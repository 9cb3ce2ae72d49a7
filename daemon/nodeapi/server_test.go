package nodeapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/podlogs"
)

var now = time.Date(2026, time.November, 26, 10, 0, 0, 0, time.UTC)

// certValidity spans both clocks a test certificate meets: the server
// verifies client certificates at its fake clock's now, while the test's
// HTTP client verifies the server's certificate at the wall clock. A window
// around the fake time alone expires a day after it was written.
func certValidity() (notBefore, notAfter time.Time) {
	wall := time.Now()
	notBefore, notAfter = now, wall
	if wall.Before(now) {
		notBefore, notAfter = wall, now
	}
	return notBefore.Add(-time.Hour), notAfter.Add(12 * time.Hour)
}

// testCA is a throwaway CA issuing server and client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	notBefore, notAfter := certValidity()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter.Add(12 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) issue(t *testing.T, cn string, groups []string, usage x509.ExtKeyUsage, ips ...net.IP) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	notBefore, notAfter := certValidity()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: groups},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

type staticCert struct{ c tls.Certificate }

func (s staticCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &s.c, nil }

type fakePods []corev1.Pod

func (f fakePods) Pods() []corev1.Pod { return f }

type fakeStats struct {
	node Usage
	pods []PodUsage
}

func (f fakeStats) NodeStats() (Usage, error)     { return f.node, nil }
func (f fakeStats) PodStats() ([]PodUsage, error) { return f.pods, nil }

type harness struct {
	ca     *testCA
	url    string
	logDir string
	clock  *clocktesting.FakeClock
}

func start(t *testing.T) *harness {
	t.Helper()
	return startWithPods(t, fakePods{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-1")}}})
}

func startWithPods(t *testing.T, pods PodSource) *harness {
	t.Helper()
	ca := newTestCA(t, "cluster-ca")
	h := &harness{ca: ca, logDir: t.TempDir(), clock: clocktesting.NewFakeClock(now)}
	srv, err := New(Config{
		Pods: pods,
		Logs: podlogs.Locator{Root: h.logDir},
		Stats: fakeStats{
			node: Usage{CPU: 1500 * time.Millisecond, WorkingSetBytes: 4096, Time: now},
			pods: []PodUsage{{Namespace: "ns", Name: "web", Usage: Usage{CPU: time.Second, WorkingSetBytes: 10, Time: now},
				Containers: []ContainerUsage{{Name: "app", Usage: Usage{CPU: time.Second, WorkingSetBytes: 8, Time: now}, StartTime: now.Add(-time.Minute)}}}},
		},
		Checkpointer: UnavailableCheckpointer{Reason: "criu is not installed"},
		Certificate:  staticCert{ca.issue(t, "node-1", nil, x509.ExtKeyUsageServerAuth, net.ParseIP("127.0.0.1"))},
		ClientCA:     ca.cert,
		Configz:      map[string]string{"podLogsDir": h.logDir},
		Clock:        h.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	h.url = "https://" + ln.Addr().String()
	return h
}

// client trusts the harness CA and presents cert, if any.
func (h *harness) client(cert *tls.Certificate) *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(h.ca.cert)
	tc := &tls.Config{RootCAs: roots}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}

func (h *harness) admin(t *testing.T) *http.Client {
	c := h.ca.issue(t, "plinth-admin", []string{AdminGroup}, x509.ExtKeyUsageClientAuth)
	return h.client(&c)
}

func get(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAuthorization(t *testing.T) {
	h := start(t)
	other := newTestCA(t, "other-ca")
	foreign := other.issue(t, "plinth-admin", []string{AdminGroup}, x509.ExtKeyUsageClientAuth)
	node := h.ca.issue(t, "system:node:node-2", []string{"system:nodes"}, x509.ExtKeyUsageClientAuth)
	serverOnly := h.ca.issue(t, "plinth-admin", []string{AdminGroup}, x509.ExtKeyUsageServerAuth)
	for _, c := range []struct {
		name   string
		client *http.Client
		code   int
	}{
		{"anonymous", h.client(nil), http.StatusUnauthorized},
		{"another CA", h.client(&foreign), http.StatusUnauthorized},
		{"not for client auth", h.client(&serverOnly), http.StatusUnauthorized},
		{"a node", h.client(&node), http.StatusForbidden},
		{"an administrator", h.admin(t), http.StatusOK},
	} {
		for _, path := range []string{"/healthz", "/pods", "/configz", "/metrics/resource"} {
			if code, body := get(t, c.client, http.MethodGet, h.url+path); code != c.code {
				t.Errorf("%s: GET %s = %d %s, want %d", c.name, path, code, body, c.code)
			}
		}
	}
}

func TestEndpoints(t *testing.T) {
	h := start(t)
	c := h.admin(t)
	if code, body := get(t, c, http.MethodGet, h.url+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	code, body := get(t, c, http.MethodGet, h.url+"/pods")
	var pods corev1.PodList
	if code != 200 || json.Unmarshal([]byte(body), &pods) != nil || len(pods.Items) != 1 || pods.Items[0].Name != "web" || pods.Kind != "PodList" {
		t.Errorf("/pods = %d %s", code, body)
	}
	code, body = get(t, c, http.MethodGet, h.url+"/configz")
	if code != 200 || !strings.Contains(body, `"plinthd":{"podLogsDir":`) {
		t.Errorf("/configz = %d %s", code, body)
	}
	code, body = get(t, c, http.MethodGet, h.url+"/metrics/resource")
	ms := now.UnixMilli()
	for _, want := range []string{
		"node_cpu_usage_seconds_total 1.5 " + itoa(ms),
		"node_memory_working_set_bytes 4096 " + itoa(ms),
		`pod_memory_working_set_bytes{namespace="ns",pod="web"} 10 ` + itoa(ms),
		`container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 1 ` + itoa(ms),
		"resource_scrape_error 0",
	} {
		if code != 200 || !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics/resource lacks %q:\n%s", want, body)
		}
	}
	code, body = get(t, c, http.MethodPost, h.url+"/checkpoint/ns/web/app")
	if code != 500 || !strings.Contains(body, "checkpointing is not available on this node: criu is not installed") {
		t.Errorf("/checkpoint = %d %q", code, body)
	}
	if code, _ := get(t, c, http.MethodGet, h.url+"/checkpoint/ns/web/app"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /checkpoint = %d, want 405", code)
	}
}

func itoa(n int64) string { return big.NewInt(n).String() }

func TestContainerLogs(t *testing.T) {
	h := start(t)
	c := h.admin(t)
	line := func(sec int, s string) string {
		return now.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano) + " stdout F " + s + "\n"
	}
	writeFile(t, podlogs.ContainerLogPath(h.logDir, "ns", "web", "uid-1", "app", 0), line(-30, "old"))
	writeFile(t, podlogs.ContainerLogPath(h.logDir, "ns", "web", "uid-1", "app", 1), line(-20, "a")+line(-10, "b")+line(-1, "c"))
	base := h.url + "/containerLogs/ns/web/app"
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"", 200, "a\nb\nc\n"},
		{"?tailLines=2", 200, "b\nc\n"},
		{"?sinceSeconds=15", 200, "b\nc\n"},
		{"?sinceTime=" + now.Add(-5*time.Second).Format(time.RFC3339), 200, "c\n"},
		{"?previous=true", 200, "old\n"},
		{"?limitBytes=3", 200, "a\nb"},
		{"?timestamps=true&tailLines=1", 200, now.Add(-time.Second).Format(time.RFC3339Nano) + " c\n"},
		{"?tailLines=-1", 400, "tailLines"},
		{"?sinceSeconds=1&sinceTime=2026-01-01T00:00:00Z", 400, "at most one"},
		{"?bogus=1", 400, "bogus"},
	} {
		code, body := get(t, c, http.MethodGet, base+tc.query)
		if code != tc.code || (code == 200 && body != tc.want) || (code != 200 && !strings.Contains(body, tc.want)) {
			t.Errorf("GET %s = %d %q, want %d %q", tc.query, code, body, tc.code, tc.want)
		}
	}
	if code, body := get(t, c, http.MethodGet, h.url+"/containerLogs/ns/web/nope"); code != 404 {
		t.Errorf("unknown container = %d %q, want 404", code, body)
	}
}

func TestContainerLogsFollow(t *testing.T) {
	h := start(t)
	c := h.admin(t)
	path := podlogs.ContainerLogPath(h.logDir, "ns", "web", "uid-1", "app", 0)
	writeFile(t, path, now.Format(time.RFC3339Nano)+" stdout F first\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/containerLogs/ns/web/app?follow=true", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(resp.Body, buf, len("first\n"))
	if err != nil || string(buf[:n]) != "first\n" {
		t.Fatalf("first read %q, %v", buf[:n], err)
	}
	appendFile(t, path, now.Format(time.RFC3339Nano)+" stdout F second\n")
	got := make(chan string, 1)
	go func() {
		n, _ := io.ReadAtLeast(resp.Body, buf, len("second\n"))
		got <- string(buf[:n])
	}()
	s, ok := h.pollUntil(got)
	if !ok {
		t.Fatal("the appended line never arrived")
	}
	if s != "second\n" {
		t.Fatalf("second read %q", s)
	}
	cancel()
}

// pollUntil steps the fake clock by the log poll interval whenever a follow waits on
// it, until out delivers (ok) or 10 s of real time pass.
func (h *harness) pollUntil(out <-chan string) (string, bool) {
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-out:
			return s, true
		case <-deadline:
			return "", false
		default:
			if h.clock.HasWaiters() {
				h.clock.Step(podlogs.DefaultPollInterval)
			}
			runtime.Gosched()
		}
	}
}

func TestFileCertificateReloads(t *testing.T) {
	ca := newTestCA(t, "ca")
	path := filepath.Join(t.TempDir(), "server.pem")
	fc := &FileCertificate{Path: path}
	if _, err := fc.GetCertificate(nil); err == nil {
		t.Fatal("a missing file gave a certificate")
	}
	writePair(t, path, ca.issue(t, "one", nil, x509.ExtKeyUsageServerAuth))
	c1, err := fc.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	writePair(t, path, ca.issue(t, "two-longer-name", nil, x509.ExtKeyUsageServerAuth))
	c2, err := fc.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := x509.ParseCertificate(c1.Certificate[0])
	l2, _ := x509.ParseCertificate(c2.Certificate[0])
	if l1.Subject.CommonName != "one" || l2.Subject.CommonName != "two-longer-name" {
		t.Errorf("certificates %q then %q", l1.Subject.CommonName, l2.Subject.CommonName)
	}
}

func TestProbeCheckpointing(t *testing.T) {
	missing := func(name string) func(string) (string, error) {
		return func(n string) (string, error) {
			if n == name {
				return "", errors.New("not found")
			}
			return "/usr/bin/" + n, nil
		}
	}
	if got := ProbeCheckpointing(missing("criu"), true); !strings.Contains(got, "criu") {
		t.Errorf("without criu: %q", got)
	}
	if got := ProbeCheckpointing(missing("none"), false); !strings.Contains(got, "no pod runtime") {
		t.Errorf("without a runtime: %q", got)
	}
	if got := ProbeCheckpointing(missing("none"), true); got != "" {
		t.Errorf("with everything: %q", got)
	}
}
