package plinthd

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/staticpods"
)

var getOptions = metav1.GetOptions{}

func deleteOptions(grace *int64, uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{GracePeriodSeconds: grace, Preconditions: &metav1.Preconditions{UID: &uid}}
}

// isGone is an answer meaning the pod we wrote about is no longer the one in the API.
func isGone(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsConflict(err) }

// podRef names a pod in the API; a static pod's status goes to its mirror pod of the
// same name.
type podRef struct {
	Namespace, Name string
	Static          bool
}

// podStatusWriter writes the pods' status through the API, in its own goroutine so a
// slow control service never holds a pod worker up: only the latest status of each
// pod is kept, and a status equal to the one last written is not written again. A
// write starts from the pod the previous write returned, so a pod's later writes cost
// one request rather than a read and a write; a conflict (the pod changed meanwhile)
// reads it afresh and writes again.
type podStatusWriter struct {
	client nodeclient.Interface
	logger *slog.Logger
	wake   chan struct{}

	mu      sync.Mutex
	pods    map[types.UID]podRef // the pods bound to the node, as the informer lists them
	pending map[types.UID]corev1.PodStatus
	written map[types.UID]corev1.PodStatus
	// stored is each pod as the last status write returned it (a write's base).
	stored map[types.UID]*corev1.Pod
	// latest is each running pod with its last reported status, for the node API.
	latest map[types.UID]*corev1.Pod
	// flushed is closed and replaced after every flush, waking waitWritten.
	flushed chan struct{}
}

// retryStatusAfter is the wait before a failed status write is tried again.
const retryStatusAfter = time.Second

func newPodStatusWriter(client nodeclient.Interface, logger *slog.Logger) *podStatusWriter {
	return &podStatusWriter{client: client, logger: logger, wake: make(chan struct{}, 1),
		pods: map[types.UID]podRef{}, pending: map[types.UID]corev1.PodStatus{}, written: map[types.UID]corev1.PodStatus{},
		stored: map[types.UID]*corev1.Pod{}, latest: map[types.UID]*corev1.Pod{}, flushed: make(chan struct{})}
}

// track records the pods bound to the node; statuses of pods no longer listed are
// dropped (there is nothing to write them to).
func (w *podStatusWriter) track(list []*corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[types.UID]bool{}
	for _, p := range list {
		seen[p.UID] = true
		w.pods[p.UID] = podRef{p.Namespace, p.Name, staticpods.IsStaticPod(p)}
	}
	for uid := range w.pods {
		if !seen[uid] {
			delete(w.pods, uid)
			delete(w.pending, uid)
			delete(w.written, uid)
			delete(w.stored, uid)
			delete(w.latest, uid)
		}
	}
}

// forget stops writing a pod's status (its containers are gone) and returns its name.
func (w *podStatusWriter) forget(uid types.UID) (podRef, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ref, ok := w.pods[uid]
	delete(w.pods, uid)
	delete(w.pending, uid)
	delete(w.written, uid)
	delete(w.stored, uid)
	delete(w.latest, uid)
	return ref, ok
}

// Pods returns the pods the runtime reported on, each with its last status: the node
// API's PodSource (/pods).
func (w *podStatusWriter) Pods() []corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]corev1.Pod, 0, len(w.latest))
	for _, p := range w.latest {
		out = append(out, *p.DeepCopy())
	}
	return out
}

// unfinished leaves out of pods those whose last reported phase is Succeeded or
// Failed: a worker stays with a pod whose containers have all ended, and such a pod
// holds nothing to reclaim (evicting it would turn a Succeeded pod Failed).
func (w *podStatusWriter) unfinished(pods []*corev1.Pod) []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := pods[:0:0]
	for _, p := range pods {
		if l, ok := w.latest[p.UID]; ok && (l.Status.Phase == corev1.PodSucceeded || l.Status.Phase == corev1.PodFailed) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// report is the pod workers' Report: it queues the status.
func (w *podStatusWriter) report(pod *corev1.Pod, st corev1.PodStatus) {
	w.mu.Lock()
	if _, ok := w.pods[pod.UID]; !ok {
		w.pods[pod.UID] = podRef{pod.Namespace, pod.Name, staticpods.IsStaticPod(pod)}
	}
	w.pending[pod.UID] = *st.DeepCopy()
	latest := pod.DeepCopy()
	latest.Status = *st.DeepCopy()
	w.latest[pod.UID] = latest
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes queued statuses until ctx is done.
func (w *podStatusWriter) run(ctx context.Context) {
	for {
		var retry <-chan time.Time
		var t *time.Timer
		if w.flush(ctx) {
			t = time.NewTimer(retryStatusAfter)
			retry = t.C
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-retry:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// waitWritten waits until no status of the pod is queued (written, or dropped because
// the pod is gone); false when ctx ended first. Graceful node shutdown waits so that
// the machine does not go down before a stopped pod's Failed status reached the API.
func (w *podStatusWriter) waitWritten(ctx context.Context, uid types.UID) bool {
	for {
		w.mu.Lock()
		_, queued := w.pending[uid]
		flushed := w.flushed
		w.mu.Unlock()
		if !queued {
			return true
		}
		select {
		case <-flushed:
		case <-ctx.Done():
			return false
		}
	}
}

// statusWritesInFlight bounds the status writes flush sends at once: one pod's slow
// write (a conflict, a busy control service) does not hold back the others', while a
// burst of pod starts does not become a burst of as many requests.
const statusWritesInFlight = 8

// flush writes every queued status once, up to statusWritesInFlight pods at a time;
// it reports whether a write failed (and stays queued).
func (w *podStatusWriter) flush(ctx context.Context) (failed bool) {
	defer func() {
		w.mu.Lock()
		close(w.flushed)
		w.flushed = make(chan struct{})
		w.mu.Unlock()
	}()
	w.mu.Lock()
	batch := map[types.UID]corev1.PodStatus{}
	for uid, st := range w.pending {
		if prev, ok := w.written[uid]; ok && reflect.DeepEqual(prev, st) {
			delete(w.pending, uid)
			continue
		}
		batch[uid] = st
	}
	refs := map[types.UID]podRef{}
	for uid := range batch {
		refs[uid] = w.pods[uid]
	}
	w.mu.Unlock()
	var writers sync.WaitGroup
	slots := make(chan struct{}, statusWritesInFlight)
	for uid, st := range batch {
		if ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		writers.Go(func() {
			defer func() { <-slots }()
			err := w.write(ctx, uid, refs[uid], st)
			w.mu.Lock()
			defer w.mu.Unlock()
			switch {
			case err == nil:
				w.written[uid] = st
				if cur, ok := w.pending[uid]; ok && reflect.DeepEqual(cur, st) {
					delete(w.pending, uid)
				}
			case apierrors.IsNotFound(err) && refs[uid].Static:
				// A static pod's mirror pod may not exist yet (MirrorPods creates it
				// beside the runtime): the status stays queued for when it does, or
				// until the static pod goes (forget).
				failed = true
			case apierrors.IsNotFound(err): // a conflict is retried with the pod read again
				delete(w.pending, uid)
			case apierrors.IsInvalid(err):
				// Refused for good (a terminal phase cannot change): retrying cannot help.
				delete(w.pending, uid)
				w.logger.Warn("pod status refused by the control service; not retried", "pod", refs[uid].Namespace+"/"+refs[uid].Name, "err", err)
			case ctx.Err() != nil:
			default:
				failed = true
				w.logger.Warn("writing pod status", "pod", refs[uid].Namespace+"/"+refs[uid].Name, "err", err)
			}
		})
	}
	writers.Wait()
	return failed
}

// write replaces the pod's status. It starts from the pod as the last write returned
// it, else reads it, so the write carries the stored object's resourceVersion and UID
// (another pod of the same name is not ours); a conflict means the pod changed since,
// and it is read and written once more.
func (w *podStatusWriter) write(ctx context.Context, uid types.UID, ref podRef, st corev1.PodStatus) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pods := w.client.Pods(ref.Namespace)
	w.mu.Lock()
	cur := w.stored[uid].DeepCopy()
	w.mu.Unlock()
	fresh := cur == nil
	for {
		if cur == nil {
			var err error
			if cur, err = pods.Get(ctx, ref.Name, getOptions); err != nil {
				return err
			}
		}
		mirror := ref.Static && cur.Annotations[staticpods.AnnotationConfigMirror] == string(uid)
		if cur.UID != uid && !mirror {
			return apierrors.NewNotFound(corev1.Resource("pods"), ref.Name)
		}
		next := st
		// The scheduler's and others' conditions (PodScheduled's times, readiness
		// gates) are kept where the runtime does not compute the same type.
		next.Conditions = mergeConditions(cur.Status.Conditions, st.Conditions)
		if next.NominatedNodeName == "" {
			next.NominatedNodeName = cur.Status.NominatedNodeName
		}
		cur.Status = next
		updated, err := pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil {
			w.mu.Lock()
			if _, tracked := w.pods[uid]; tracked {
				w.stored[uid] = updated
			}
			w.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) || fresh {
			return err
		}
		cur, fresh = nil, true
	}
}

// mergeConditions is ours, plus those of theirs of a type we do not set.
func mergeConditions(theirs, ours []corev1.PodCondition) []corev1.PodCondition {
	out := append([]corev1.PodCondition{}, ours...)
	for _, c := range theirs {
		mine := false
		for _, o := range ours {
			if o.Type == c.Type {
				mine = true
				break
			}
		}
		if !mine {
			out = append(out, c)
		}
	}
	return out
}
