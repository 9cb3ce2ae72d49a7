package plinthd

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressuresignals"
	"github.com/plinth/plinth/daemon/staticpods"
)

// staticPodSet holds the static pods the Source last handed over.
type staticPodSet struct {
	mu    sync.Mutex
	pods  []*corev1.Pod
	first chan struct{} // closed at the first update (at once when there is no Source)
	once  sync.Once
}

func (s *staticPodSet) set(pods []*corev1.Pod) {
	s.mu.Lock()
	s.pods = pods
	s.mu.Unlock()
	s.once.Do(func() { close(s.first) })
}

// current returns the static pods (read-only: the Source and MirrorPods share them).
func (s *staticPodSet) current() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods
}

// read reports whether the Source has handed over its first read.
func (s *staticPodSet) read() bool {
	select {
	case <-s.first:
		return true
	default:
		return false
	}
}

// staticFirstReadTimeout bounds the wait for the Source's first read.
const staticFirstReadTimeout = 30 * time.Second

// waitFirst waits for the Source's first read, at most timeout; false when it did not
// come.
func (s *staticPodSet) waitFirst(ctx context.Context, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.first:
		return true
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
}

// startStaticPods starts, when staticPodPath is set, the Source reading the manifests
// and the MirrorPods keeping their mirror pods in the API, both owned by wg; changed
// is called on every update. The set it returns is empty (and ready) when static pods
// are off or could not start.
func (r *podRuntime) startStaticPods(ctx context.Context, changed func(), wg *sync.WaitGroup) (*staticPodSet, error) {
	set := &staticPodSet{first: make(chan struct{})}
	if r.cfg.StaticPodPath == "" {
		set.set(nil)
		return set, nil
	}
	mirrors, err := staticpods.NewMirrorPods(staticpods.MirrorConfig{Client: r.client, NodeName: r.nodeName,
		Registerer: r.registry, Logger: r.logger.With("component", "mirror-pods")})
	if err != nil {
		set.set(nil)
		return set, err
	}
	source, err := staticpods.NewSource(staticpods.SourceConfig{Dir: r.cfg.StaticPodPath, NodeName: r.nodeName,
		CheckFrequency: r.cfg.FileCheckFrequency.Duration,
		OnUpdate: func(pods []*corev1.Pod) {
			set.set(pods)
			mirrors.SetStaticPods(pods)
			changed()
		},
		Events: pressuresignals.APIEvents{Client: r.client}, Registerer: r.registry,
		Logger: r.logger.With("component", "static-pods")})
	if err != nil {
		set.set(nil)
		return set, err
	}
	wg.Go(func() { _ = mirrors.Run(ctx) })
	wg.Go(func() { _ = source.Run(ctx) })
	return set, nil
}
