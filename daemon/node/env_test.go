package node

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/controlclient/nodeclient/nodeclienttest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testFacts() HostFacts {
	return HostFacts{
		CPUs:                    4,
		MemoryBytes:             8 << 30,
		EphemeralStorageBytes:   100 << 30,
		KernelVersion:           "6.18.0-test",
		OSImage:                 "Debian GNU/Linux 12 (bookworm)",
		MachineID:               "3d1219c7c4c5404aaa1f6d2a48adfda4",
		SystemUUID:              "4C4C4544-0042-3510-8052-B3C04F4E3232",
		BootID:                  "58cae9f1-b211-4404-8fe1-faa179b9e782",
		InternalIP:              net.ParseIP("10.0.0.5"),
		ContainerRuntimeVersion: "runc://1.1.5",
	}
}

func testConfig() Config {
	cfg := DefaultConfig("node-a")
	cfg.Labels = map[string]string{"plinth.dev/pool": "blue"}
	cfg.Taints = []corev1.Taint{{Key: "plinth.dev/new", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
	cfg.SystemReserved = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("500m"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
	}
	cfg.KubeReserved = corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("512Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("200Gi"), // more than the disk
	}
	return cfg
}

// recordingClock is a fake clock that reports every timer a loop starts, so a test
// knows both that the loop is now waiting and for how long, then Steps past it.
type recordingClock struct {
	*testingclock.FakeClock
	waits chan time.Duration
	done  chan struct{}
}

func (c *recordingClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	select {
	case c.waits <- d:
	case <-c.done:
	}
	return t
}

// nextWait returns the next wait a loop started, failing the test if none comes.
func (c *recordingClock) nextWait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.waits:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("loop did not start waiting within 10s (real time)")
		return 0
	}
}

// syncBuffer collects log output written from the loops' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testEnv struct {
	client *fake.Clientset
	clock  *recordingClock
	reg    *prometheus.Registry
	logs   *syncBuffer
	agent  *Agent
}

func newTestEnv(t *testing.T, cfg Config, conditions ConditionSource, objects ...runtime.Object) *testEnv {
	t.Helper()
	e := &testEnv{
		client: fake.NewClientset(objects...),
		clock:  &recordingClock{FakeClock: testingclock.NewFakeClock(t0), waits: make(chan time.Duration), done: make(chan struct{})},
		reg:    prometheus.NewRegistry(),
		logs:   &syncBuffer{},
	}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := NewAgent(nodeclienttest.FromClientset(e.client), cfg, testFacts(), conditions, e.clock, e.reg, logger)
	if err != nil {
		t.Fatal(err)
	}
	e.agent = a
	return e
}

// start runs loop in a goroutine and stops it (and waits for it) when the test ends.
func (e *testEnv) start(t *testing.T, loop func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = loop(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		close(e.clock.done)
		<-done
	})
}

// assignUIDOnCreate makes the fake behave like a server that gives new Nodes a UID.
func assignUIDOnCreate(c *fake.Clientset, uid string) {
	c.PrependReactor("create", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		n := action.(k8stesting.CreateAction).GetObject().(*corev1.Node)
		n.UID = types.UID(uid)
		return false, nil, nil
	})
}

// countActions counts recorded client calls of verb on resource (and subresource).
func countActions(c *fake.Clientset, verb, res, sub string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == res && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

// metricValue reads one counter or gauge sample from the registry.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, lp := range m.GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

var errUnavailable = errorString("control service unavailable")

type errorString string

func (e errorString) Error() string { return string(e) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
