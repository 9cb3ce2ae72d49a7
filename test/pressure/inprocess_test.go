package pressure

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
)

// inProcess is the pressure manager over the real kernel adapters, as plinthd wires
// them, without the API.
type inProcess struct {
	manager *pressure.Manager
	signals *pressuresignals.Signals
	stop    func() // stops the manager and releases the signals; also run at cleanup
}

// startInProcess opens the real signals with opts and runs a manager with thresholds
// (kubelet's syntax) over them until the test ends. pods and evictor may be nil.
func startInProcess(tb testing.TB, opts pressuresignals.Options, hard map[string]string, pods pressure.PodLister, evictor pressure.Evictor) *inProcess {
	tb.Helper()
	th, err := pressure.ParseThresholds(pressure.ThresholdSpec{Hard: hard})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := pressure.DefaultConfig()
	cfg.Thresholds = th
	cfg.PressureTransitionPeriod = time.Second
	logger := testLogger(tb)
	opts.Thresholds, opts.EvaluationInterval, opts.Logger = th, cfg.EvaluationInterval, logger
	signals, err := pressuresignals.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := pressure.NewManager(cfg, pressure.Deps{Source: signals, Wakeups: signals.Wakeups(), Pods: pods, Evictor: evictor, Logger: logger})
	if err != nil {
		signals.Close()
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	signals.Start(ctx)
	go func() { defer close(done); _ = m.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		<-done
		if err := signals.Close(); err != nil {
			tb.Errorf("closing the signals: %v", err)
		}
	})
	tb.Cleanup(stop)
	return &inProcess{manager: m, signals: signals, stop: stop}
}

func testLogger(tb testing.TB) *slog.Logger {
	if os.Getenv("PLINTH_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// waitCondition polls the manager every 5 ms until condition typ has status, and
// returns when it first saw it.
func (p *inProcess) waitCondition(tb testing.TB, typ corev1.NodeConditionType, status corev1.ConditionStatus, timeout time.Duration) (time.Time, corev1.NodeCondition) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var last corev1.NodeCondition
	for {
		for _, c := range p.manager.Conditions() {
			if c.Type == typ {
				last = c
				if c.Status == status {
					return time.Now(), c
				}
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not become %s within %s; last: %s %s %q", typ, status, timeout, last.Status, last.Reason, last.Message)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitEvaluated waits for the manager's first evaluation.
func (p *inProcess) waitEvaluated(tb testing.TB) pressure.Snapshot {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s := p.manager.Snapshot(); s.Evaluated {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatal("the manager did not evaluate within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// onePod lists a single pod bound to the node, for eviction to choose.
type onePod struct{}

func (onePod) List(context.Context) ([]pressure.Pod, error) {
	return []pressure.Pod{{Namespace: "bench", Name: "hog", UID: "hog-uid"}}, nil
}

// recordingEvictor records when Evict was first called; the pod never goes, as a
// real one would not before its grace period.
type recordingEvictor struct {
	mu      sync.Mutex
	first   time.Time
	message string
	calls   int
	called  chan struct{}
}

func newRecordingEvictor() *recordingEvictor { return &recordingEvictor{called: make(chan struct{})} }

func (r *recordingEvictor) Evict(_ context.Context, _ pressure.Pod, message string, _ time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.first.IsZero() {
		r.first, r.message = time.Now(), message
		close(r.called)
	}
	return nil
}

func (r *recordingEvictor) Gone(pressure.Pod) bool { return false }

func (r *recordingEvictor) firstCall() (time.Time, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first, r.message
}
