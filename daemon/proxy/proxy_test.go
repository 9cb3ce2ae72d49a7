package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/conntrack"
)

// fakeSource is a ListerWatcher serving a fixed list and then a watch the test feeds.
type fakeSource struct {
	list    runtime.Object
	watcher *watch.FakeWatcher
}

func newFakeSource(list runtime.Object) *fakeSource {
	return &fakeSource{list: list, watcher: watch.NewFake()}
}

func (f *fakeSource) List(metav1.ListOptions) (runtime.Object, error)   { return f.list, nil }
func (f *fakeSource) Watch(metav1.ListOptions) (watch.Interface, error) { return f.watcher, nil }

// IsWatchListSemanticsUnSupported makes the reflector list, then watch.
func (f *fakeSource) IsWatchListSemanticsUnSupported() bool { return true }

// recordingSyncer records every Sync and fails while failNext is set.
type recordingSyncer struct {
	calls    chan syncRecord
	mu       sync.Mutex
	failNext int
}

type syncRecord struct {
	snap    *desired.Snapshot
	changes desired.Changes
}

func (r *recordingSyncer) Sync(_ context.Context, snap *desired.Snapshot, changes desired.Changes) error {
	r.calls <- syncRecord{snap, changes}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failNext > 0 {
		r.failNext--
		return errors.New("nftables batch refused")
	}
	return nil
}

// recordingConntrack records the matches it is asked to delete.
type recordingConntrack struct {
	mu    sync.Mutex
	calls [][]conntrack.Match
}

func (r *recordingConntrack) DeleteUDP(_ context.Context, m []conntrack.Match) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, m)
	return len(m), nil
}

func (r *recordingConntrack) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, call := range r.calls {
		for _, m := range call {
			out = append(out, m.String())
		}
	}
	r.calls = nil
	return out
}

type proxyHarness struct {
	t         *testing.T
	clock     *testingclock.FakeClock
	proxy     *Proxy
	syncer    *recordingSyncer
	conntrack *recordingConntrack
	reg       *prometheus.Registry
	services  *fakeSource
	slices    *fakeSource
	node      *fakeSource
	idle      chan struct{}
	runErr    chan error
}

func testNodeObject(ips ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, ResourceVersion: "1", Labels: map[string]string{corev1.LabelTopologyZone: "z1"}}}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: testNode})
	return n
}

func startProxy(t *testing.T, svcs []corev1.Service, sl []discoveryv1.EndpointSlice) *proxyHarness {
	h := &proxyHarness{
		t:         t,
		clock:     testingclock.NewFakeClock(t0),
		syncer:    &recordingSyncer{calls: make(chan syncRecord)}, // unbuffered: the runner waits for the test
		conntrack: &recordingConntrack{},
		reg:       prometheus.NewRegistry(),
		services:  newFakeSource(&corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: svcs}),
		slices:    newFakeSource(&discoveryv1.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: sl}),
		node: newFakeSource(&corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "1"},
			Items: []corev1.Node{*testNodeObject("192.0.2.1", "127.0.0.1")}}),
		idle:   make(chan struct{}),
		runErr: make(chan error, 1),
	}
	p, err := New(Config{
		NodeName:           testNode,
		Sources:            Sources{Services: h.services, EndpointSlices: h.slices, Node: h.node},
		Syncer:             h.syncer,
		Conntrack:          h.conntrack,
		HealthzBindAddress: "127.0.0.1:0",
		Clock:              h.clock,
		Registerer:         h.reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.proxy = p
	ctx, cancel := context.WithCancel(context.Background())
	p.runner.idle = func() {
		select {
		case h.idle <- struct{}{}:
		case <-ctx.Done():
		}
	}
	go func() { h.runErr <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.runErr:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

func (h *proxyHarness) expectSync() syncRecord {
	h.t.Helper()
	select {
	case r := <-h.syncer.calls:
		return r
	case <-h.idle:
		h.t.Fatal("runner went idle, want a sync")
	case <-time.After(10 * time.Second):
		h.t.Fatal("no sync within 10 s of real time")
	}
	return syncRecord{}
}

func (h *proxyHarness) expectIdle() {
	h.t.Helper()
	select {
	case <-h.idle:
	case r := <-h.syncer.calls:
		h.t.Fatalf("unexpected sync: full %v changed %v", r.changes.Full, r.changes.Changed)
	case <-time.After(10 * time.Second):
		h.t.Fatal("runner never went idle")
	}
}

func (h *proxyHarness) metric(name string, labels map[string]string) float64 {
	return metricValue(h.t, h.reg, name, labels)
}

func TestProxyEndToEndWithFakes(t *testing.T) {
	dns := udpDNSSvc()
	web := service("default", "web", func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.20", []string{"10.96.0.20"}
	})
	slice := dnsSlice("1", ep{addr: "10.244.0.7"}, ep{addr: "10.244.0.8"})
	h := startProxy(t, []corev1.Service{*dns, *web}, []discoveryv1.EndpointSlice{*slice})

	// The first sync waits for the lists, is full, and carries the node's primary
	// address (loopback dropped).
	first := h.expectSync()
	h.expectIdle()
	if !first.changes.Full || len(first.snap.Services) != 2 {
		t.Fatalf("first sync: full %v, %d service ports", first.changes.Full, len(first.snap.Services))
	}
	if !slices.Equal(first.snap.NodeIPs, []netip.Addr{netip.MustParseAddr("192.0.2.1")}) {
		t.Fatalf("node IPs = %v", first.snap.NodeIPs)
	}
	if got := h.conntrack.take(); len(got) != 0 {
		t.Fatalf("conntrack after the first sync = %v; a restart must not cut live flows", got)
	}

	// The health server answers 200 once synced.
	addr := <-h.proxy.HealthAddr()
	resp, err := http.Get("http://" + addr.String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var hb map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &hb) != nil || hb["nodeEligible"] != true {
		t.Fatalf("/healthz = %d %s", resp.StatusCode, body)
	}

	// An endpoint goes away: a partial sync once minSyncPeriod passed, naming only the
	// DNS port, with the removed endpoint's flows deleted.
	h.clock.SetTime(t0.Add(200 * time.Millisecond))
	shrunk := dnsSlice("2", ep{addr: "10.244.0.8"})
	shrunk.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: t0.Add(-2 * time.Second).Format(time.RFC3339Nano)}
	h.slices.watcher.Modify(shrunk)
	h.expectIdle()
	h.clock.SetTime(t0.Add(time.Second))
	second := h.expectSync()
	h.expectIdle()
	if second.changes.Full || !slices.Equal(changedNames(second.changes), []string{dnsName.String()}) {
		t.Fatalf("second sync: full %v changed %v", second.changes.Full, changedNames(second.changes))
	}
	if got := h.conntrack.take(); !slices.Equal(got, []string{"udp to 10.96.0.10:53 via 10.244.0.7:5353"}) {
		t.Fatalf("conntrack after removing an endpoint = %v", got)
	}
	if got := h.metric("plinth_proxy_network_programming_duration_seconds", nil); got != 1 {
		t.Fatalf("network programming observations = %v, want 1", got)
	}
	if got := h.metric("plinth_proxy_sync_partial_proxy_rules_duration_seconds", nil); got != 1 {
		t.Fatalf("partial sync observations = %v, want 1", got)
	}
	if got := h.metric("plinth_proxy_sync_proxy_rules_endpoint_changes_total", nil); got != 2 {
		t.Fatalf("endpoint changes = %v, want 2 (the listed slice and its update)", got)
	}
	if got := h.metric("plinth_proxy_sync_proxy_rules_last_timestamp_seconds", nil); got != float64(t0.Add(time.Second).Unix()) {
		t.Fatalf("last sync timestamp = %v", got)
	}

	// A failing sync is counted, retried in full after the backoff, and its stale
	// flows are deleted only once the retry succeeds.
	h.syncer.mu.Lock()
	h.syncer.failNext = 1
	h.syncer.mu.Unlock()
	h.clock.SetTime(t0.Add(5 * time.Second))
	h.services.watcher.Delete(dns)
	failed := h.expectSync()
	h.expectIdle()
	if failed.changes.Full || !failed.changes.Changed[dnsName] {
		t.Fatalf("sync after delete: full %v changed %v", failed.changes.Full, changedNames(failed.changes))
	}
	if got := h.conntrack.take(); len(got) != 0 {
		t.Fatalf("conntrack cleaned after a failed sync: %v", got)
	}
	if got := h.metric("plinth_proxy_sync_proxy_rules_nftables_sync_failures_total", nil); got != 1 {
		t.Fatalf("sync failures = %v, want 1", got)
	}
	h.clock.SetTime(t0.Add(6 * time.Second))
	retry := h.expectSync()
	h.expectIdle()
	if !retry.changes.Full || len(retry.snap.Services) != 1 {
		t.Fatalf("retry: full %v, %d service ports", retry.changes.Full, len(retry.snap.Services))
	}
	if got := h.conntrack.take(); !slices.Equal(got, []string{"udp to 10.96.0.10:53"}) {
		t.Fatalf("conntrack after the retry = %v", got)
	}

	// A new node address needs a full sync.
	h.clock.SetTime(t0.Add(10 * time.Second))
	moved := testNodeObject("192.0.2.7")
	moved.ResourceVersion = "2"
	h.node.watcher.Modify(moved)
	nodeSync := h.expectSync()
	h.expectIdle()
	if !nodeSync.changes.Full || !slices.Equal(nodeSync.snap.NodeIPs, []netip.Addr{netip.MustParseAddr("192.0.2.7")}) {
		t.Fatalf("after the node moved: full %v, node IPs %v", nodeSync.changes.Full, nodeSync.snap.NodeIPs)
	}
	if err := h.proxy.Check(); err != nil {
		t.Fatalf("health check after successful syncs: %v", err)
	}
}

// blockingSource is a ListerWatcher whose List never answers until ctx ends: a
// control service that is away.
type blockingSource struct{ release chan struct{} }

func (b blockingSource) List(metav1.ListOptions) (runtime.Object, error) {
	<-b.release
	return nil, errors.New("control service unreachable")
}
func (b blockingSource) Watch(metav1.ListOptions) (watch.Interface, error) {
	<-b.release
	return nil, errors.New("control service unreachable")
}
func (blockingSource) IsWatchListSemanticsUnSupported() bool { return true }

func TestCheckPassesUntilSyncsBegin(t *testing.T) {
	c := testingclock.NewFakeClock(t0)
	src := blockingSource{release: make(chan struct{})}
	p, err := New(Config{NodeName: testNode, Sources: Sources{src, src, src}, Syncer: &recordingSyncer{calls: make(chan syncRecord, 1)},
		Conntrack: &recordingConntrack{}, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		close(src.release)
		<-done
	}()
	// The change queued at start is never applied, but nothing can sync yet: the
	// plinthd check (which gates the watchdog) keeps passing, /livez's state does not.
	c.Step(time.Hour)
	if err := p.Check(); err != nil {
		t.Fatalf("Check before the first list = %v, want nil (fail static)", err)
	}
	if ok, _, _ := p.health.healthy(); ok {
		t.Fatal("/livez state healthy an hour after a change was queued and not applied")
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	src := newFakeSource(&corev1.ServiceList{})
	full := Config{NodeName: testNode, Sources: Sources{src, src, src}, Syncer: &recordingSyncer{}, Conntrack: &recordingConntrack{}}
	for name, mutate := range map[string]func(*Config){
		"no node name":      func(c *Config) { c.NodeName = "" },
		"no syncer":         func(c *Config) { c.Syncer = nil },
		"no node source":    func(c *Config) { c.Sources.Node = nil },
		"min above period":  func(c *Config) { c.MinSyncPeriod, c.SyncPeriod = time.Minute, time.Second },
		"negative min sync": func(c *Config) { c.MinSyncPeriod = -time.Second },
	} {
		c := full
		mutate(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(full); err != nil {
		t.Fatalf("complete config refused: %v", err)
	}
}
