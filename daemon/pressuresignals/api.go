package pressuresignals

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/pressure"
)

// ReasonEvicted is the reason of the Event posted on an evicted pod, as kubelet's.
const ReasonEvicted = "Evicted"

// goneTimeout bounds the API call behind Gone, which has no context of its own.
const goneTimeout = 5 * time.Second

// APIEvents posts Events through the API.
type APIEvents struct {
	Client nodeclient.Interface
}

// Create implements EventSink.
func (e APIEvents) Create(ctx context.Context, ev *corev1.Event) error {
	_, err := e.Client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// APIPods is the pressure manager's PodLister and Evictor until plinthd runs pods
// itself: it lists the pods the API says are bound to this node (only when eviction
// needs them, so there is no informer to keep up) and evicts through the pods/eviction
// subresource, which deletes the pod gracefully.
//
// It knows no pod's usage, so pods rank by priority alone; and a control service
// that serves no pods (an older one) leaves nothing to evict, said once in the log.
type APIPods struct {
	client nodeclient.Interface
	node   string
	events EventSink // may be nil
	clock  clock.PassiveClock
	logger *slog.Logger

	mu        sync.Mutex
	notServed bool // the last List found no pods resource
}

var (
	_ pressure.PodLister = (*APIPods)(nil)
	_ pressure.Evictor   = (*APIPods)(nil)
)

// NewAPIPods returns the lister and evictor for node. events, when not nil, gets an
// Evicted Event on each pod evicted, carrying the eviction message (the Eviction
// object has no place for it).
func NewAPIPods(client nodeclient.Interface, node string, events EventSink, clk clock.PassiveClock, logger *slog.Logger) *APIPods {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &APIPods{client: client, node: node, events: events, clock: clk, logger: logger}
}

// List implements pressure.PodLister: the pods bound to the node that are neither
// finished nor already being deleted.
func (p *APIPods) List(ctx context.Context) ([]pressure.Pod, error) {
	list, err := p.client.Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", p.node).String(),
	})
	if apierrors.IsNotFound(err) {
		p.mu.Lock()
		first := !p.notServed
		p.notServed = true
		p.mu.Unlock()
		if first {
			p.logger.Warn("the control service serves no pods; there is nothing to evict", "err", err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", p.node, err)
	}
	p.mu.Lock()
	p.notServed = false
	p.mu.Unlock()
	out := make([]pressure.Pod, 0, len(list.Items))
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, pressure.PodFromAPI(pod, pressure.Usage{}))
	}
	return out, nil
}

// Evict implements pressure.Evictor: an Eviction for exactly this pod (a UID
// precondition, so a new pod of the same name is not hit) deleting it with grace
// (whole seconds, rounded up) unless that is pressure.PodGracePeriod, and an Evicted
// Event with message on the pod.
func (p *APIPods) Evict(ctx context.Context, pod pressure.Pod, message string, grace time.Duration) error {
	uid := pod.UID
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	if grace >= 0 {
		seconds := int64((grace + time.Second - 1) / time.Second)
		ev.DeleteOptions.GracePeriodSeconds = &seconds
	}
	if err := p.client.Evictions(pod.Namespace).Evict(ctx, ev); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // gone already: Gone will say so
		}
		return fmt.Errorf("evicting pod %s: %w", pod, err)
	}
	if p.events != nil {
		ref := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		if err := p.events.Create(ctx, newEvent(ref, corev1.EventTypeWarning, ReasonEvicted, message, p.node, p.clock.Now())); err != nil {
			p.logger.Debug("posting the Evicted event failed", "pod", pod.String(), "err", err)
		}
	}
	return nil
}

// Gone implements pressure.Evictor: the pod no longer exists, or a new pod took its
// name. An API error counts as not gone; the manager moves on after its timeout.
func (p *APIPods) Gone(pod pressure.Pod) bool {
	ctx, cancel := context.WithTimeout(context.Background(), goneTimeout)
	defer cancel()
	cur, err := p.client.Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	return cur.UID != pod.UID
}
