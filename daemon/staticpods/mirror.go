package staticpods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient/nodeclient"
)

// Defaults of MirrorPods' timing.
const (
	// DefaultMirrorResyncPeriod is how often mirror pods are checked against the API
	// when nothing else prompts it, so a mirror pod someone deleted comes back.
	DefaultMirrorResyncPeriod = 10 * time.Second
	// mirrorRetryInitial and the resync period bound the delay after a failed pass.
	mirrorRetryInitial = time.Second
)

// MirrorConfig configures MirrorPods.
type MirrorConfig struct {
	// Client reaches the API; the node's identity may create only mirror pods of its
	// own (the control service's NodeRestriction).
	Client nodeclient.Interface
	// NodeName is this node's name; mirror pods are bound to it and owned by its Node.
	NodeName string
	// ResyncPeriod is how often the API is checked without a prompt; zero means
	// DefaultMirrorResyncPeriod.
	ResyncPeriod time.Duration
	// Clock drives the resync and retries; nil means the real clock.
	Clock clock.WithTicker
	// Registerer takes the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// MirrorPods keeps the API's mirror pods in step with the static pods: it is the
// consumer of Source updates on the API side (SetStaticPods), and reconciles on each
// update, on Resync, every ResyncPeriod, and after a failure with backoff.
type MirrorPods struct {
	cfg     MirrorConfig
	metrics *mirrorMetrics
	wake    chan struct{}

	mu     sync.Mutex
	static map[string]*corev1.Pod // namespace/name -> static pod
	known  bool                   // SetStaticPods has been called: before, nothing is deleted

	// afterSync, in tests, sees the result of every pass Run makes.
	afterSync func(error)
}

// NewMirrorPods checks cfg and returns a MirrorPods; Run starts it.
func NewMirrorPods(cfg MirrorConfig) (*MirrorPods, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("mirror pods need an API client and the node name")
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = DefaultMirrorResyncPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m, err := newMirrorMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &MirrorPods{cfg: cfg, metrics: m, wake: make(chan struct{}, 1), static: map[string]*corev1.Pod{}}, nil
}

// SetStaticPods replaces the desired set (a Source's OnUpdate) and prompts a pass. It
// never blocks.
func (m *MirrorPods) SetStaticPods(pods []*corev1.Pod) {
	static := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		static[p.Namespace+"/"+p.Name] = p
	}
	m.mu.Lock()
	m.static, m.known = static, true
	m.mu.Unlock()
	m.metrics.mirrorPods.Set(float64(len(static)))
	m.Resync()
}

// Resync prompts a pass without waiting for the period, for example when the pod
// informer of the runtime sees a mirror pod deleted. It never blocks.
func (m *MirrorPods) Resync() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx is done and returns nil then. A failed pass is retried
// after 1 s, doubling up to the resync period.
func (m *MirrorPods) Run(ctx context.Context) error {
	retry := time.Duration(0)
	timer := m.cfg.Clock.NewTimer(m.cfg.ResyncPeriod)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.wake:
		case <-timer.C():
		}
		err := m.Sync(ctx)
		if ctx.Err() != nil {
			return nil
		}
		next := m.cfg.ResyncPeriod
		if err != nil {
			m.metrics.syncErrors.Inc()
			m.cfg.Logger.Warn("mirror pods not in step with static pods; retrying", "err", err)
			retry = min(max(2*retry, mirrorRetryInitial), m.cfg.ResyncPeriod)
			next = retry
		} else {
			retry = 0
		}
		if !timer.Stop() {
			select { // drain a fire that raced with the wake-up
			case <-timer.C():
			default:
			}
		}
		timer.Reset(next)
		if m.afterSync != nil {
			m.afterSync(err)
		}
	}
}

// Sync makes one reconcile pass: list this node's pods, then create, replace and
// delete mirror pods. Every action is tried; the errors are joined.
func (m *MirrorPods) Sync(ctx context.Context) error {
	m.mu.Lock()
	static, known := maps.Clone(m.static), m.known
	m.mu.Unlock()
	if !known {
		return nil // the static pods have not been read yet: deleting would be a guess
	}
	list, err := m.cfg.Client.Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", m.cfg.NodeName).String(),
	})
	if err != nil {
		return fmt.Errorf("list the pods of node %s: %w", m.cfg.NodeName, err)
	}
	existing := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != m.cfg.NodeName {
			continue // a server that ignored the field selector
		}
		existing[p.Namespace+"/"+p.Name] = p
	}
	var errs []error
	for key, p := range existing {
		if !IsMirrorPod(p) {
			continue // not ours to touch, even if a static pod wants its name
		}
		s, wanted := static[key]
		switch {
		case !wanted:
			errs = append(errs, m.delete(ctx, p, "its static pod is gone"))
		case p.Annotations[AnnotationConfigMirror] != s.Annotations[AnnotationConfigHash]:
			if err := m.delete(ctx, p, "its static pod changed"); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(existing, key)
		case p.DeletionTimestamp != nil:
			// Being deleted (by a user, or the node's deletion): finish it now, as
			// the node confirms deletions, and create it again below.
			if err := m.delete(ctx, p, "it is being deleted while its static pod exists"); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(existing, key)
		}
	}
	var node *corev1.Node
	for key, s := range static {
		if p, ok := existing[key]; ok {
			if !IsMirrorPod(p) {
				errs = append(errs, fmt.Errorf("pod %s, bound to this node, is not a mirror pod: static pod %s (hash %s) has no mirror pod while it exists",
					key, key, s.Annotations[AnnotationConfigHash]))
			}
			continue
		}
		if node == nil {
			if node, err = m.cfg.Client.Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{}); err != nil {
				return errors.Join(append(errs, fmt.Errorf("get Node %s to own mirror pods: %w", m.cfg.NodeName, err))...)
			}
		}
		errs = append(errs, m.create(ctx, s, node))
	}
	return errors.Join(errs...)
}

func (m *MirrorPods) create(ctx context.Context, static *corev1.Pod, node *corev1.Node) error {
	mirror := MirrorPodOf(static, node)
	_, err := m.cfg.Client.Pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create mirror pod %s/%s: %w", mirror.Namespace, mirror.Name, err)
	}
	m.cfg.Logger.Info("created mirror pod", "pod", mirror.Namespace+"/"+mirror.Name, "hash", mirror.Annotations[AnnotationConfigMirror])
	return nil
}

// delete removes a mirror pod at once (grace 0: there is nothing to stop, the static
// pod is not its), and only the one listed (UID precondition): a mirror pod recreated
// meanwhile is left for the next pass.
func (m *MirrorPods) delete(ctx context.Context, p *corev1.Pod, why string) error {
	zero := int64(0)
	uid := p.UID
	err := m.cfg.Client.Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete mirror pod %s/%s (%s): %w", p.Namespace, p.Name, why, err)
	}
	m.cfg.Logger.Info("deleted mirror pod", "pod", p.Namespace+"/"+p.Name, "reason", why)
	return nil
}

// MirrorPodOf is the mirror pod of static on node: the static pod's metadata and spec,
// marked with its config hash and owned by the Node (so it goes when the Node goes),
// with no UID, version or status of its own.
func MirrorPodOf(static *corev1.Pod, node *corev1.Node) *corev1.Pod {
	controller := true
	mirror := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      maps.Clone(static.Labels),
			Annotations: maps.Clone(static.Annotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &controller,
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	mirror.Annotations[AnnotationConfigMirror] = static.Annotations[AnnotationConfigHash]
	return mirror
}
