package gc_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/gc"
	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/node"
)

// The API tests run the collector against the real API server over a real embedded
// etcd, served on loopback over plain HTTP. Timeouts are generous upper bounds on
// informer and API round trips; nothing sleeps.
const apiTimeout = 30 * time.Second

func newAPI(t *testing.T) *rest.Config {
	t.Helper()
	return apitest.Start(t, apitest.Options{SkipDefaultNamespaces: true}).RESTConfig()
}

// metadataAnswers checks that the collector's reads and watches, which ask for
// PartialObjectMetadata, are answered in protobuf.
type metadataAnswers struct {
	mu       sync.Mutex
	answered int
	wrong    []string
}

func (m *metadataAnswers) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata") {
			return resp, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.answered++
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/vnd.kubernetes.protobuf") {
			m.wrong = append(m.wrong, req.Method+" "+req.URL.String()+": "+ct)
		}
		return resp, err
	})
}

func (m *metadataAnswers) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	// A collector stopped at once may have had nothing answered; one that collected
	// read the metadata of what it deleted.
	if len(m.wrong) > 0 {
		t.Errorf("of %d metadata requests answered, these were not in protobuf: %v", m.answered, m.wrong)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startCollector runs a collector until the returned stop is called (also at cleanup).
// Every metadata request it made must have been answered in protobuf.
func startCollector(t *testing.T, cfg *rest.Config) (stop func()) {
	t.Helper()
	answers := &metadataAnswers{}
	metadataConfig := rest.CopyConfig(cfg)
	metadataConfig.WrapTransport = answers.wrap
	metadataClient, err := metadata.NewForConfig(metadataConfig)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := gc.DefaultOptions()
	opts.DiscoveryPeriod = time.Second
	ctrl, err := gc.New(gc.Config{Client: metadataClient, Discovery: kc.Discovery(), Clock: clock.RealClock{}, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(apiTimeout):
			t.Error("Run did not return after cancel")
		}
		answers.check(t)
	}
	t.Cleanup(stop)
	return stop
}

func testNamespace(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

type leaseFixture struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
}

func (f leaseFixture) create(name string, owners ...*coordinationv1.Lease) *coordinationv1.Lease {
	f.t.Helper()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range owners {
		block := true
		l.OwnerReferences = append(l.OwnerReferences, metav1.OwnerReference{
			APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Name: o.Name, UID: o.UID, BlockOwnerDeletion: &block,
		})
	}
	created, err := f.client.CoordinationV1().Leases(f.ns).Create(f.t.Context(), l, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("creating lease %s: %v", name, err)
	}
	return created
}

func (f leaseFixture) delete(name string, policy metav1.DeletionPropagation) {
	f.t.Helper()
	if err := f.client.CoordinationV1().Leases(f.ns).Delete(f.t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		f.t.Fatalf("deleting lease %s with %s: %v", name, policy, err)
	}
}

// get returns the lease, or nil once it is gone.
func (f leaseFixture) get(name string) *coordinationv1.Lease {
	f.t.Helper()
	l, err := f.client.CoordinationV1().Leases(f.ns).Get(f.t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatalf("reading lease %s: %v", name, err)
	}
	return l
}

// eventually polls cond until it holds or apiTimeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(apiTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", apiTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPropagationThroughTheAPI(t *testing.T) {
	cfg := newAPI(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	testNamespace(t, client, "gc")
	f := leaseFixture{t: t, client: client, ns: "gc"}
	startCollector(t, cfg)

	t.Run("Background", func(t *testing.T) {
		f.t = t
		owner := f.create("bg-owner")
		other := f.create("bg-other")
		f.create("bg-d1", owner)
		f.create("bg-d2", owner)
		f.create("bg-shared", owner, other)
		f.delete("bg-owner", metav1.DeletePropagationBackground)
		eventually(t, "the dependents of a deleted owner to be collected", func() bool {
			return f.get("bg-d1") == nil && f.get("bg-d2") == nil
		})
		eventually(t, "the shared dependent to lose its reference to the deleted owner", func() bool {
			s := f.get("bg-shared")
			return s != nil && len(s.OwnerReferences) == 1 && s.OwnerReferences[0].UID == other.UID
		})
	})

	t.Run("Orphan", func(t *testing.T) {
		f.t = t
		owner := f.create("or-owner")
		f.create("or-d1", owner)
		f.create("or-d2", owner)
		f.delete("or-owner", metav1.DeletePropagationOrphan)
		eventually(t, "the orphaning owner to be deleted", func() bool { return f.get("or-owner") == nil })
		for _, name := range []string{"or-d1", "or-d2"} {
			d := f.get(name)
			if d == nil {
				t.Fatalf("orphaned dependent %s was deleted", name)
			}
			if len(d.OwnerReferences) != 0 {
				t.Errorf("orphaned dependent %s keeps owner references %+v", name, d.OwnerReferences)
			}
		}
	})

	t.Run("Foreground", func(t *testing.T) {
		f.t = t
		owner := f.create("fg-owner")
		f.create("fg-d1", owner)
		f.create("fg-d2", owner)
		w, err := client.CoordinationV1().Leases("gc").Watch(t.Context(), metav1.ListOptions{ResourceVersion: f.get("fg-d2").ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		f.delete("fg-owner", metav1.DeletePropagationForeground)
		var deleted []string
		timeout := time.After(apiTimeout)
		for !slices.Contains(deleted, "fg-owner") {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed; deletions so far %v", deleted)
				}
				if l, isLease := ev.Object.(*coordinationv1.Lease); isLease && ev.Type == watch.Deleted {
					deleted = append(deleted, l.Name)
				}
			case <-timeout:
				t.Fatalf("timed out; deletions so far %v, want fg-d1, fg-d2, then fg-owner", deleted)
			}
		}
		if len(deleted) != 3 || deleted[2] != "fg-owner" {
			t.Errorf("deletion order %v, want both dependents before the owner", deleted)
		}
	})
}

func TestCollectsWhatWasDeletedWhileStopped(t *testing.T) {
	cfg := newAPI(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	testNamespace(t, client, "gc")
	f := leaseFixture{t: t, client: client, ns: "gc"}
	stop := startCollector(t, cfg)
	owner := f.create("owner")
	f.create("dep", owner)
	stop()

	// Background deletion with no collector running leaves the dependent behind.
	f.delete("owner", metav1.DeletePropagationBackground)
	if f.get("dep") == nil {
		t.Fatal("dependent vanished without a collector")
	}
	startCollector(t, cfg)
	eventually(t, "a restarted collector to delete the dependent of an owner deleted meanwhile", func() bool {
		return f.get("dep") == nil
	})
}

// TestNodeLeaseGoesWithItsNode: plinthd's own node agent registers its Node and
// renews its Lease, which points at the Node through an owner reference; once the agent
// is stopped and the Node deleted, the collector deletes the Lease.
func TestNodeLeaseGoesWithItsNode(t *testing.T) {
	srv := apitest.Start(t, apitest.Options{}) // with kube-node-lease
	client := srv.Client
	agentClient, err := nodeclient.New(srv.RESTConfig()) // plinthd's own client
	if err != nil {
		t.Fatal(err)
	}
	agentClock := testingclock.NewFakeClock(time.Now())
	agent, err := node.NewAgent(agentClient, node.Config{NodeName: "n1", RegisterNode: true},
		node.HostFacts{CPUs: 1, MemoryBytes: 1 << 30}, nil, agentClock, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	agentCtx, stopAgent := context.WithCancel(t.Context())
	agentDone := make(chan error, 1)
	go func() { agentDone <- agent.Run(agentCtx) }()
	agentRunning := true
	stop := func() {
		if agentRunning {
			agentRunning = false
			stopAgent()
			if err := <-agentDone; err != nil {
				t.Errorf("agent: %v", err)
			}
		}
	}
	defer stop()

	var nodeUID string
	eventually(t, "the node Lease with an owner reference to its Node", func() bool {
		n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		nodeUID = string(n.UID)
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(t.Context(), "n1", metav1.GetOptions{})
		if err == nil && len(l.OwnerReferences) == 1 && string(l.OwnerReferences[0].UID) == nodeUID && l.OwnerReferences[0].Kind == "Node" {
			return true
		}
		// The first renewal may have run before the Node existed; the next one adds the
		// reference.
		agentClock.Step(10 * time.Second)
		return false
	})
	stop() // plinthd is gone: nothing re-creates the Lease

	startCollector(t, srv.RESTConfig())
	if err := client.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node Lease to be collected with its Node", func() bool {
		_, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(t.Context(), "n1", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
