package shutdown

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/plinth/plinth/daemon/shutdown/logindtest"
)

// fakeLogind is logind in memory. Its reload reads InhibitDelayMaxSec from the drop-ins
// in confDir, as logind would, unless stuck is set (another drop-in wins).
type fakeLogind struct {
	confDir string
	stuck   bool

	mu       sync.Mutex
	delayMax time.Duration
	reloads  int
	locks    []*fakeLock
	events   chan bool
	closed   bool
	// lockEvents receives "taken" and "released" as locks come and go.
	lockEvents chan string
}

type fakeLock struct {
	closed atomic.Bool
	events chan<- string
}

func (l *fakeLock) Close() error {
	if l.closed.Swap(true) {
		return os.ErrClosed
	}
	l.events <- "released"
	return nil
}

func newFakeLogind(confDir string, delayMax time.Duration) *fakeLogind {
	return &fakeLogind{confDir: confDir, delayMax: delayMax, events: make(chan bool), lockEvents: make(chan string, 100)}
}

func (f *fakeLogind) InhibitDelayMax(context.Context) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delayMax, nil
}

func (f *fakeLogind) InhibitShutdown(_ context.Context, who, why string) (io.Closer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if who != inhibitWho || why == "" {
		return nil, fmt.Errorf("unexpected who %q why %q", who, why)
	}
	l := &fakeLock{events: f.lockEvents}
	f.locks = append(f.locks, l)
	f.lockEvents <- "taken"
	return l, nil
}

func (f *fakeLogind) ReloadConfig(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	if f.stuck {
		return nil
	}
	d, err := logindtest.ReadInhibitDelayMaxSec(f.confDir)
	if err != nil {
		return err
	}
	if d > 0 {
		f.delayMax = d
	}
	return nil
}

func (f *fakeLogind) PrepareForShutdown() <-chan bool { return f.events }

func (f *fakeLogind) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// lockStates returns, for each lock taken so far, whether it is still held.
func (f *fakeLogind) lockStates() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var held []bool
	for _, l := range f.locks {
		held = append(held, !l.closed.Load())
	}
	return held
}

// termination is one Pods.Terminate call.
type termination struct {
	pod   string
	grace time.Duration
	at    time.Time
	ctx   context.Context
}

// fakePods is a pod runtime whose pods stop when the test says (hang lists pods that
// never stop by themselves) or at once.
type fakePods struct {
	clock clock.Clock
	pods  []*corev1.Pod
	hang  map[string]bool
	calls chan termination
}

func (f *fakePods) Active() []*corev1.Pod { return f.pods }

func (f *fakePods) Terminate(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	f.calls <- termination{pod: pod.Name, grace: grace, at: f.clock.Now(), ctx: ctx}
	if f.hang[pod.Name] {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func pod(name string, priority *int32, class string, graceSeconds int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Priority: priority, PriorityClassName: class, TerminationGracePeriodSeconds: &graceSeconds}}
}

func prio(p int32) *int32 { return &p }

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// within fails the test unless ch yields within d (a bound on a hang, not a timing
// assertion).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// timerClock is a fake clock that reports each timer made, so a test steps the clock
// only once the code under test waits on it.
type timerClock struct {
	*clocktesting.FakeClock
	timers chan time.Duration
}

func newTimerClock() *timerClock {
	return &timerClock{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC)), timers: make(chan time.Duration, 100)}
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.timers <- d
	return t
}
