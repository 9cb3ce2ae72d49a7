package node

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxLeaseTries bounds refetch-and-retry within one renewal when the cached Lease is
// stale (conflict) or gone (deleted), as kubelet's maxUpdateRetries does.
const maxLeaseTries = 5

// RunLease renews the Lease kube-node-lease/<node> every quarter of the lease
// duration until ctx is done, creating it when missing. After a failure it retries
// with backoff (200 ms doubling to 7 s) and returns to the normal interval after the
// next success. It returns nil when ctx is done.
func (a *Agent) RunLease(ctx context.Context) error {
	a.leaseLive.start()
	defer a.leaseLive.stop()
	failures := 0
	for {
		err := a.renewLeaseMeasured(ctx)
		a.leaseLive.iterated()
		delay := a.renewInterval
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			delay = backoffDelay(failures)
			a.logger.Warn("node lease renewal failed; retrying", "failures", failures, "retryIn", delay, "err", err)
		case failures > 0:
			a.logger.Info("node lease renewed after failures", "failures", failures)
			failures = 0
		}
		if !a.wait(ctx, delay) {
			return nil
		}
	}
}

// renewLeaseMeasured is one renewal attempt with its metrics, bounded by the renew
// interval so a hung request cannot stall the heartbeat loop.
func (a *Agent) renewLeaseMeasured(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, max(a.renewInterval, time.Second))
	defer cancel()
	start := a.clock.Now()
	err := a.renewLease(ctx)
	if err != nil && parent.Err() != nil {
		return err // shutting down: not a renewal failure
	}
	a.metrics.leaseRenewDuration.Observe(a.clock.Since(start).Seconds())
	if err != nil {
		a.metrics.leaseRenews.WithLabelValues(resultError).Inc()
		return err
	}
	a.metrics.leaseRenews.WithLabelValues(resultSuccess).Inc()
	a.metrics.leaseLastRenew.Set(float64(a.clock.Now().UnixNano()) / 1e9)
	return nil
}

// renewLease writes a fresh renewTime. It updates from the cached Lease, refetching
// only when the cache is empty, stale (conflict) or the Lease was deleted, and creates
// the Lease when it does not exist.
func (a *Agent) renewLease(ctx context.Context) error {
	leases := a.client.Leases(LeaseNamespace)
	for try := 1; try <= maxLeaseTries; try++ {
		if a.lease == nil {
			got, err := leases.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName, Namespace: LeaseNamespace}}
				a.fillLease(ctx, lease)
				created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					continue // created by someone else meanwhile: fetch it
				}
				if err != nil {
					return fmt.Errorf("creating lease %s/%s: %w", LeaseNamespace, a.cfg.NodeName, err)
				}
				a.lease = created
				return nil
			case err != nil:
				return fmt.Errorf("getting lease %s/%s: %w", LeaseNamespace, a.cfg.NodeName, err)
			}
			a.lease = got
		}
		lease := a.lease.DeepCopy()
		a.fillLease(ctx, lease)
		updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
		switch {
		case err == nil:
			a.lease = updated
			return nil
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			a.lease = nil // stale or deleted: refetch, or recreate
			continue
		default:
			return fmt.Errorf("updating lease %s/%s: %w", LeaseNamespace, a.cfg.NodeName, err)
		}
	}
	a.lease = nil
	return fmt.Errorf("renewing lease %s/%s: still conflicting after %d tries", LeaseNamespace, a.cfg.NodeName, maxLeaseTries)
}

// fillLease sets what this node asserts in its Lease: holder, duration, renew time
// and, once the Node's UID is known, the owner reference to the Node.
func (a *Agent) fillLease(ctx context.Context, l *coordinationv1.Lease) {
	holder := a.cfg.NodeName
	seconds := int32(a.cfg.LeaseDuration / time.Second)
	now := metav1.NewMicroTime(a.clock.Now())
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = &seconds
	l.Spec.RenewTime = &now
	// Point at the Node; replace a reference to an earlier Node of the same name
	// (deleted and re-registered), whose UID no longer matches.
	uid := a.knownNodeUID()
	i := nodeOwnerIndex(l.OwnerReferences, a.cfg.NodeName)
	if i >= 0 && (uid == "" || l.OwnerReferences[i].UID == uid) {
		return
	}
	refs := a.nodeOwnerReference(ctx)
	switch {
	case refs == nil:
	case i >= 0:
		l.OwnerReferences[i] = refs[0]
	default:
		l.OwnerReferences = append(l.OwnerReferences, refs...)
	}
}

func nodeOwnerIndex(refs []metav1.OwnerReference, name string) int {
	for i, r := range refs {
		if r.Kind == "Node" && r.APIVersion == "v1" && r.Name == name {
			return i
		}
	}
	return -1
}
