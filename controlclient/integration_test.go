package controlclient_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"

	"github.com/plinth/plinth/control/auth"
	"github.com/plinth/plinth/control/auth/authapi"
	"github.com/plinth/plinth/control/service"
	"github.com/plinth/plinth/controlclient"
	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/staticpods"
)

func TestMain(m *testing.M) {
	// client-go re-reads a kubeconfig's certificate file every CertCallbackRefreshDuration
	// and closes connections made with the old certificate; five minutes is too long for
	// a test whose certificates live ten seconds. Set before any client exists.
	transport.CertCallbackRefreshDuration = time.Second
	os.Exit(m.Run())
}

// control is a control service running in-process with embedded etcd.
type control struct {
	server  string
	dataDir string
	caHash  string
	admin   kubernetes.Interface
	tokens  *auth.TokenClient
}

func startControl(t *testing.T, nodeCertValidity time.Duration) control {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := service.DefaultOptions()
	opts.DataDir = t.TempDir()
	opts.BindAddress = "127.0.0.1"
	opts.SecurePort = 0
	opts.NodeCertValidity = nodeCertValidity
	ready := make(chan service.Running, 1)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, opts, slog.New(slog.NewTextHandler(io.Discard, nil)), func(r service.Running) { ready <- r })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("control service: %v", err)
		}
	})
	var running service.Running
	select {
	case running = <-ready:
	case err := <-done:
		t.Fatalf("control service: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("control service did not start")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", running.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.NewTokenClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(opts.DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return control{server: cfg.Host, dataDir: opts.DataDir, caHash: authapi.CACertHash(ca), admin: admin, tokens: tokens}
}

func (c control) newToken(t *testing.T, ttl time.Duration) authapi.BootstrapToken {
	t.Helper()
	tok, err := c.tokens.Create(context.Background(), ttl, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (c control) join(t *testing.T, token, caHash, name string) (controlclient.JoinResult, error) {
	t.Helper()
	dir := t.TempDir()
	return controlclient.Join(context.Background(), controlclient.JoinOptions{
		Server: c.server, Token: token, CACertHash: caHash, NodeName: name,
		Kubeconfig: filepath.Join(dir, "kubeconfig"), CertDir: filepath.Join(dir, "pki"),
	})
}

func (c control) mustJoin(t *testing.T, token, name string) (controlclient.JoinResult, kubernetes.Interface) {
	t.Helper()
	res, err := c.join(t, token, c.caHash, name)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	return res, clientFor(t, res.Kubeconfig)
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// nodeClientFor is plinthd's own client (nodeclient) for kubeconfig.
func nodeClientFor(t *testing.T, kubeconfig string) *nodeclient.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := nodeclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func expectForbidden(t *testing.T, what string, err error, mention string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), mention) {
		t.Errorf("%s: %v, want 403 mentioning %q", what, err, mention)
	}
}

func TestJoinAgainstTheControlService(t *testing.T) {
	ctx := context.Background()
	c := startControl(t, time.Hour)
	tok := c.newToken(t, time.Hour)

	join, err := c.tokens.JoinCommand(tok.Token)
	if err != nil || !strings.Contains(join, "--ca-cert-hash "+c.caHash) || !strings.Contains(join, "--token "+tok.Token) {
		t.Fatalf("join command %q (%v)", join, err)
	}

	resA, nodeA := c.mustJoin(t, tok.Token, "node-a")
	_, nodeB := c.mustJoin(t, tok.Token, "node-b")

	t.Run("the joined kubeconfig works as the node", func(t *testing.T) {
		cfg, _ := clientcmd.BuildConfigFromFlags("", resA.Kubeconfig)
		if cfg.CertFile != resA.CertFile || cfg.KeyFile != resA.CertFile {
			t.Fatalf("kubeconfig names %s and %s, want %s for both", cfg.CertFile, cfg.KeyFile, resA.CertFile)
		}
		if _, err := nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("node-a registering itself: %v", err)
		}
		if _, err := nodeB.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("node-b registering itself: %v", err)
		}
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40)},
		}
		if _, err := nodeA.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			t.Fatalf("node-a creating its Lease: %v", err)
		}
		nodes, err := nodeA.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 2 {
			t.Fatalf("node-a listing nodes: %v", err)
		}
		n, err := nodeA.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}}
		if n, err = nodeA.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node-a updating its own status: %v", err)
		}
		n.Labels = map[string]string{"team": "a"}
		if _, err := nodeA.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node-a labelling itself: %v", err)
		}
	})

	t.Run("node A may not touch node B nor promote itself", func(t *testing.T) {
		b, err := c.admin.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Labels = map[string]string{"owned": "by-a"}
		_, err = nodeA.CoreV1().Nodes().Update(ctx, b, metav1.UpdateOptions{})
		expectForbidden(t, "node-a updating node-b", err, `may only update its own Node, not "node-b"`)
		_, err = nodeA.CoreV1().Nodes().UpdateStatus(ctx, b, metav1.UpdateOptions{})
		expectForbidden(t, "node-a updating node-b's status", err, "node-b")
		err = nodeA.CoreV1().Nodes().Delete(ctx, "node-b", metav1.DeleteOptions{})
		expectForbidden(t, "node-a deleting node-b", err, "node-b")
		_, err = nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}, metav1.CreateOptions{})
		expectForbidden(t, "node-a creating node-c", err, `"node-c"`)
		_, err = nodeA.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"gold"}}}`), metav1.PatchOptions{})
		expectForbidden(t, "node-a giving itself a restricted label", err, "node-restriction.kubernetes.io/pool")
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Namespace: "kube-node-lease"}}
		_, err = nodeA.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{})
		expectForbidden(t, "node-a creating node-b's Lease", err, "node-b")
		// The restricted label is the administrator's to set.
		if _, err := c.admin.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"gold"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("admin setting a restricted label: %v", err)
		}
		got, err := c.admin.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
		if err != nil || got.Labels["owned"] != "" {
			t.Fatalf("node-b after the refused writes: %v %v", got.Labels, err)
		}
	})

	t.Run("pods and events", func(t *testing.T) {
		for _, p := range []struct{ name, node string }{{"on-a", "node-a"}, {"on-b", "node-b"}} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "default"},
				Spec:       corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			}
			if _, err := c.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatalf("admin creating pod %s: %v", p.name, err)
			}
		}
		mine, err := nodeA.CoreV1().Pods("default").Get(ctx, "on-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mine.Status.Phase = corev1.PodRunning
		if _, err := nodeA.CoreV1().Pods("default").UpdateStatus(ctx, mine, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node-a updating the status of its pod: %v", err)
		}
		theirs, err := nodeA.CoreV1().Pods("default").Get(ctx, "on-b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		theirs.Status.Phase = corev1.PodFailed
		_, err = nodeA.CoreV1().Pods("default").UpdateStatus(ctx, theirs, metav1.UpdateOptions{})
		expectForbidden(t, "node-a updating the status of node-b's pod", err, "bound to node-b")
		err = nodeA.CoreV1().Pods("default").Delete(ctx, "on-b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		expectForbidden(t, "node-a deleting node-b's pod", err, "bound to node-b")

		event := func(kind, ns, name string) *corev1.Event {
			return &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "e-", Namespace: ns},
				InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name},
				Reason:         "Test", Message: "m", Type: corev1.EventTypeNormal,
			}
		}
		if _, err := nodeA.CoreV1().Events("default").Create(ctx, event("Pod", "default", "on-a"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("node-a reporting an event about its pod: %v", err)
		}
		_, err = nodeA.CoreV1().Events("default").Create(ctx, event("Pod", "default", "on-b"), metav1.CreateOptions{})
		expectForbidden(t, "node-a reporting about node-b's pod", err, "on-b")
	})

	t.Run("mirror pods of static pods", func(t *testing.T) {
		// Node A's MirrorPods, through NodeRestriction: its mirror pod owned by its Node
		// is admitted, and deleted again when the static pod goes.
		static := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "etcd-node-a", Namespace: "kube-system", UID: "0123456789abcdef0123456789abcdef",
				Annotations: map[string]string{staticpods.AnnotationConfigSource: staticpods.SourceFile,
					staticpods.AnnotationConfigHash: "0123456789abcdef0123456789abcdef"}},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "etcd", Image: "busybox"}}},
		}
		mirrors, err := staticpods.NewMirrorPods(staticpods.MirrorConfig{Client: nodeClientFor(t, resA.Kubeconfig), NodeName: "node-a"})
		if err != nil {
			t.Fatal(err)
		}
		mirrors.SetStaticPods([]*corev1.Pod{static})
		if err := mirrors.Sync(ctx); err != nil {
			t.Fatalf("node-a creating its mirror pod: %v", err)
		}
		got, err := c.admin.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{})
		if err != nil || got.OwnerReferences[0].Name != "node-a" || got.Annotations[staticpods.AnnotationConfigMirror] != "0123456789abcdef0123456789abcdef" {
			t.Fatalf("stored mirror pod %+v: %v", got, err)
		}

		ordinary := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "sneaky", Namespace: "default"},
			Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		_, err = nodeA.CoreV1().Pods("default").Create(ctx, ordinary, metav1.CreateOptions{})
		expectForbidden(t, "node-a creating an ordinary pod", err, "may create only mirror pods")
		forB := ordinary.DeepCopy()
		forB.Annotations = map[string]string{staticpods.AnnotationConfigMirror: "h"}
		forB.Spec.NodeName = "node-b"
		_, err = nodeA.CoreV1().Pods("default").Create(ctx, forB, metav1.CreateOptions{})
		expectForbidden(t, "node-a creating a mirror pod for node-b", err, `spec.nodeName "node-b"`)
		withSecret := ordinary.DeepCopy()
		withSecret.Annotations = map[string]string{staticpods.AnnotationConfigMirror: "h"}
		withSecret.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "admin-token"}}}}
		withSecret.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}
		_, err = nodeA.CoreV1().Pods("default").Create(ctx, withSecret, metav1.CreateOptions{})
		expectForbidden(t, "node-a creating a mirror pod that mounts a Secret", err, `Secret "admin-token"`)

		mirrors.SetStaticPods(nil)
		if err := mirrors.Sync(ctx); err != nil {
			t.Fatalf("node-a deleting its mirror pod: %v", err)
		}
		if _, err := c.admin.CoreV1().Pods("kube-system").Get(ctx, "etcd-node-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("mirror pod after its static pod went: %v", err)
		}
	})

	t.Run("a bootstrap token only joins", func(t *testing.T) {
		cfg := &rest.Config{Host: c.server, BearerToken: tok.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(c.dataDir, "pki", "ca.crt")}}
		boot, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = boot.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		expectForbidden(t, "a bootstrapper listing nodes", err, "system:bootstrap:"+tok.ID)
		if _, err := boot.Discovery().ServerVersion(); err != nil {
			t.Fatalf("a bootstrapper reading /version: %v", err)
		}
		bootTokens, err := auth.NewTokenClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bootTokens.List(ctx); err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("a bootstrapper listing tokens: %v", err)
		}
	})

	t.Run("a wrong CA hash fails before the token is sent", func(t *testing.T) {
		wrong := "sha256:" + strings.Repeat("ab", 32)
		_, err := c.join(t, tok.Token, wrong, "node-x")
		if err == nil || !strings.Contains(err.Error(), "no CA certificate with the pinned public key hash "+wrong) || !strings.Contains(err.Error(), "the token was not sent") {
			t.Fatalf("join with a wrong hash: %v", err)
		}
	})

	t.Run("expired and deleted tokens are refused", func(t *testing.T) {
		short := c.newToken(t, time.Second)
		time.Sleep(time.Until(*short.Expires) + 100*time.Millisecond)
		if _, err := c.join(t, short.Token, c.caHash, "node-x"); err == nil || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "401") {
			t.Fatalf("join with an expired token: %v", err)
		}
		deleted := c.newToken(t, time.Hour)
		if err := c.tokens.Delete(ctx, deleted.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.join(t, deleted.Token, c.caHash, "node-x"); err == nil || !strings.Contains(err.Error(), "not found: "+deleted.ID) || !strings.Contains(err.Error(), "401") {
			t.Fatalf("join with a deleted token: %v", err)
		}
		list, err := c.tokens.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range list {
			ids = append(ids, l.ID)
			if l.Token != "" {
				t.Fatalf("token list shows a secret for %s", l.ID)
			}
		}
		if strings.Contains(strings.Join(ids, ","), deleted.ID) || !strings.Contains(strings.Join(ids, ","), tok.ID) {
			t.Fatalf("token list %v after deleting %s", ids, deleted.ID)
		}
	})

	t.Run("renewal keeps the node working", func(t *testing.T) {
		r, err := controlclient.NewCertRenewer(resA.Kubeconfig, controlclient.RenewerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before := readCert(t, resA.CertFile)
		renewed, err := r.RenewNow(ctx)
		if err != nil {
			t.Fatalf("renewal: %v", err)
		}
		if renewed.SerialNumber.Cmp(before.SerialNumber) == 0 || !readCert(t, resA.CertFile).Equal(renewed) {
			t.Fatal("renewal did not install a new certificate")
		}
		// Both the long-lived client and a fresh one work with it.
		for _, client := range []kubernetes.Interface{nodeA, clientFor(t, resA.Kubeconfig)} {
			if _, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{}); err != nil {
				t.Fatalf("after renewal: %v", err)
			}
		}
	})

	t.Run("a node may not get a certificate for another node", func(t *testing.T) {
		pair, err := tls.LoadX509KeyPair(resA.CertFile, resA.CertFile)
		if err != nil {
			t.Fatal(err)
		}
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "system:node:node-b", Organization: []string{"system:nodes"}},
		}, key)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(authapi.NodeCertificateRequest{Request: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))})
		caPool := x509.NewCertPool()
		caPEM, _ := os.ReadFile(filepath.Join(c.dataDir, "pki", "ca.crt"))
		caPool.AppendCertsFromPEM(caPEM)
		asA := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool, Certificates: []tls.Certificate{pair}}}}
		resp, err := asA.Post(c.server+authapi.NodeCertificateRequestsPath, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(msg), "may only renew its own certificate") {
			t.Fatalf("node-a asking for node-b's certificate: %s %s", resp.Status, msg)
		}
	})
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(file, file)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestCertificateRenewalOutlivesExpiry runs the renewer with real time against
// certificates that live ten seconds: the node's clients keep working after the first
// certificate expired, while a connection still holding that certificate is refused.
func TestCertificateRenewalOutlivesExpiry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := startControl(t, 10*time.Second)
	res, client := c.mustJoin(t, c.newToken(t, time.Hour).Token, "node-a")
	first := readCert(t, res.CertFile)
	// plinthd's client, built once like plinthd's and used before the renewal, so it
	// holds a connection made with the first certificate.
	plinthdClient := nodeClientFor(t, res.Kubeconfig)
	if _, err := plinthdClient.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("plinthd's client registering node-a with the first certificate: %v", err)
	}

	// A client pinned to the first certificate, with a live connection made before it
	// expires.
	caPool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(c.dataDir, "pki", "ca.crt"))
	caPool.AppendCertsFromPEM(caPEM)
	firstPair, err := tls.LoadX509KeyPair(res.CertFile, res.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	stale := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{
		RootCAs: caPool, Certificates: []tls.Certificate{firstPair},
	}}}
	staleGet := func() (int, error) {
		resp, err := stale.Get(c.server + "/api/v1/nodes")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if code, err := staleGet(); err != nil || code != http.StatusOK {
		t.Fatalf("first certificate before expiry: %d %v", code, err)
	}

	renewer, err := controlclient.NewCertRenewer(res.Kubeconfig, controlclient.RenewerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if next := renewer.NextRenewal(); next.Before(first.NotBefore.Add(7*time.Second)) || next.After(first.NotAfter) {
		t.Fatalf("renewal scheduled at %s for a certificate valid %s to %s", next, first.NotBefore, first.NotAfter)
	}
	done := make(chan error, 1)
	go func() { done <- renewer.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	time.Sleep(time.Until(first.NotAfter) + 1500*time.Millisecond)
	current := readCert(t, res.CertFile)
	if current.Equal(first) {
		t.Fatalf("certificate not renewed by its expiry at %s (renewal was due %s)", first.NotAfter, renewer.NextRenewal())
	}
	if _, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the node's long-lived client after the first certificate expired: %v", err)
	}
	if _, err := plinthdClient.Nodes().Get(ctx, "node-a", metav1.GetOptions{}); err != nil {
		t.Fatalf("plinthd's long-lived client after the first certificate expired: %v", err)
	}
	// The stale client's HTTP/2 connection is still open: the TLS layer checked its
	// certificate only at the handshake, the authenticator checks it on every request.
	if code, err := staleGet(); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("a live connection holding the expired certificate: %d %v, want 401", code, err)
	}
}
